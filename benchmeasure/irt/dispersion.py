"""Posterior predictive check of dispersion: are a model's K answers to one item independent coin flips?

The binomial observation model treats the K trials of a model on an item as independent. When
they are not (a model solves a problem in all or none of its tries), the counts vary more
around the fitted probabilities than a binomial allows, and every posterior sd, interval and
resolution computed from the fit is too narrow. For S posterior draws s the Pearson dispersion

    T(y, s) = Σ_ij (y_ij − K p_ij)² / (K p_ij (1 − p_ij)) / (cells),   p_ij = g_i + (1 − g_i) σ(θ_j − b_i),

is computed for the observed counts and for counts replicated from the same draw; under the
model both are about 1. Reported: the mean and central 94 % interval of T over draws for the
observed and for the replicated data, and the posterior predictive p-value P(T_rep ≥ T_obs)
(small: the data are overdispersed). Only meaningful with K > 1.
"""

from __future__ import annotations

import numpy as np

THRESHOLD_P = 0.01
#: cells × draws the check may evaluate; it uses up to ``draws`` (400) posterior draws, never fewer than 100
CELL_DRAWS = 50_000_000


def dispersion_check(counts, n_trials: int, theta_draws, b_draws, guessing=0.0, *, draws: int = 400,
                     seed: int = 0) -> dict | None:
    """The check above on ``draws`` evenly spaced posterior draws (fewer, down to 100, for a matrix so large that
    cells × draws would pass :data:`CELL_DRAWS`); None when ``n_trials`` is 1.

    The p-value is a Monte Carlo estimate with a resolution of 1/draws: at 100 draws one extreme draw (a p near
    0 or 1 whose replicate lands on the rare side makes T_rep large) moved p from 0 to 0.01, past the threshold,
    on data whose observed T was 2.4 against a replicated 1.0; 400 draws keep that decision stable."""
    if n_trials < 2:
        return None
    y = np.asarray(counts, dtype=float)
    draws = max(100, min(int(draws), CELL_DRAWS // max(y.size, 1)))
    theta = np.asarray(theta_draws, dtype=float)
    pick = np.linspace(0, theta.shape[0] - 1, min(draws, theta.shape[0])).round().astype(int)
    b = np.asarray(b_draws[pick], dtype=float)   # only the draws used, in float64 (b may be stored as float32)
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (y.shape[1],))[None, :]
    rng = np.random.default_rng(seed)
    observed, replicated = [], []
    for k, s in enumerate(pick):
        p = g + (1 - g) / (1 + np.exp(-(theta[s][:, None] - b[k][None, :])))
        var = np.maximum(n_trials * p * (1 - p), 1e-12)
        observed.append(float((((y - n_trials * p) ** 2) / var).mean()))
        rep = rng.binomial(n_trials, p)
        replicated.append(float((((rep - n_trials * p) ** 2) / var).mean()))
    obs, rep = np.array(observed), np.array(replicated)
    ppp = float((rep >= obs).mean())
    return {"observed": float(obs.mean()), "observed_low": float(np.quantile(obs, 0.03)),
            "observed_high": float(np.quantile(obs, 0.97)), "replicated": float(rep.mean()),
            "replicated_low": float(np.quantile(rep, 0.03)), "replicated_high": float(np.quantile(rep, 0.97)),
            "p_value": ppp, "draws": int(pick.size), "seed": seed, "overdispersed": ppp < THRESHOLD_P,
            "note": ("the counts vary more than K independent trials allow: posterior sds and intervals are too "
                     "narrow (docs/gap_noise.md)") if ppp < THRESHOLD_P else None}
