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
#: posterior draws of the first look, and of the second one a p-value below :data:`RECHECK_P` gets
DRAWS, MORE_DRAWS = 100, 400
RECHECK_P = 0.05
#: cells × draws the second look may evaluate (fewer draws for a larger matrix, never fewer than the first look's)
CELL_DRAWS = 50_000_000


def dispersion_check(counts, n_trials: int, theta_draws, b_draws, guessing=0.0, *, draws: int = DRAWS,
                     seed: int = 0) -> dict | None:
    """The check above on ``draws`` evenly spaced posterior draws; None when ``n_trials`` is 1.

    The p-value is a Monte Carlo estimate with a resolution of 1/draws: at 100 draws one extreme draw (a p near
    0 or 1 whose replicate lands on the rare side makes T_rep large) moved p from 0 to 0.01, past the threshold,
    on data whose observed T was 2.4 against a replicated 1.0. So a p-value below :data:`RECHECK_P` is computed
    again on :data:`MORE_DRAWS` draws (as many as cells × draws ≤ :data:`CELL_DRAWS` allows), and that one decides;
    a clearly binomial matrix costs the first look only."""
    if n_trials < 2:
        return None
    result = _check(counts, n_trials, theta_draws, b_draws, guessing, draws, seed)
    more = max(draws, min(MORE_DRAWS, CELL_DRAWS // max(np.size(counts), 1)))
    if result["p_value"] < RECHECK_P and more > result["draws"] and np.shape(theta_draws)[0] > result["draws"]:
        result = _check(counts, n_trials, theta_draws, b_draws, guessing, more, seed)
    return result


def _check(counts, n_trials, theta_draws, b_draws, guessing, draws, seed) -> dict:
    y = np.asarray(counts, dtype=float)
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
