"""Alternatives to the 1PL for the robustness analyses: the 2PL and multidimensional IRT.

Paper, Appendix Tables 8–10. Both use the same binomial observation model as the 1PL
(:mod:`benchmeasure.irt.model`): Y_ij ~ Binomial(K, g_i + (1 − g_i)·σ(η_ij)), and the same
Normal(0, 1) priors on abilities and difficulties. What changes is η:

* **2PL**: η_ij = a_i (θ_j − b_i), one discrimination a_i > 0 per item with prior
  log a_i ~ Normal(0, 0.5²) (median 1, i.e. the 1PL; 95% of the prior mass in
  [0.38, 2.66]). Positivity keeps the sign of the ability scale identified.
* **MIRT-D** (compensatory, D latent dimensions): η_ij = Σ_d a_id θ_jd − b_i with
  θ_jd ~ Normal(0, 1) independently, loadings a_id > 0 with log a_id ~ Normal(0, 0.5²),
  and b_i ~ Normal(0, 1). Positive loadings remove sign flips but not the exchange of
  dimensions, which the likelihood cannot tell apart; the paper finds that these fits
  mix poorly (Table 10), and :func:`sample_model` reports whatever the sampler gives.

Sampling is NUTS (nutpie through ``pymc.sample``) with ``target_accept`` as for the 1PL; the convergence summary is
:func:`benchmeasure.irt.diagnostics.summarize_diagnostics`, shared with the 1PL fit.
"""

from __future__ import annotations

import time

import numpy as np

DISCRIMINATION_SIGMA = 0.5


def _observe(pm, pt, y, n_trials, g, eta, dims):
    """Attach the binomial likelihood of counts ``y`` (shape (M, N)) given logits ``eta``."""
    if np.all(g == 0):
        pm.Binomial("y", n=n_trials, logit_p=eta, observed=y, dims=dims)
    else:
        p = g[None, :] + (1 - g[None, :]) * pt.sigmoid(eta)
        pm.Binomial("y", n=n_trials, p=p, observed=y, dims=dims)


def build_2pl(counts, n_trials: int, guessing=0.0, models=None, items=None):
    """The 2PL PyMC model (module docstring).

    Parameters
    ----------
    counts : array_like of int, shape (M, N)
    n_trials : int
    guessing : float or array_like of shape (N,)
    models, items : sequence of str, optional
        Coordinate labels.

    Returns
    -------
    pymc.Model
        Free variables ``theta`` (model), ``b`` (item) and ``log_a`` (item); deterministic ``a``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    y = np.asarray(counts, dtype=np.int64)
    m, n = y.shape
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (n,)).copy()
    coords = {"model": list(models) if models is not None else list(range(m)),
              "item": list(items) if items is not None else list(range(n))}
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("theta", 0.0, 1.0, dims="model")
        b = pm.Normal("b", 0.0, 1.0, dims="item")
        log_a = pm.Normal("log_a", 0.0, DISCRIMINATION_SIGMA, dims="item")
        a = pm.Deterministic("a", pt.exp(log_a), dims="item")
        eta = a[None, :] * (theta[:, None] - b[None, :])
        _observe(pm, pt, y, n_trials, g, eta, ("model", "item"))
    return model


def build_mirt(counts, n_trials: int, dims: int, guessing=0.0, models=None, items=None):
    """The compensatory multidimensional model with ``dims`` latent dimensions (module docstring).

    Returns
    -------
    pymc.Model
        Free variables ``theta`` (model, dim), ``log_a`` (item, dim) and ``b`` (item).
    """
    import pymc as pm
    import pytensor.tensor as pt

    if dims < 1:
        raise ValueError(f"dims must be at least 1, got {dims}")
    y = np.asarray(counts, dtype=np.int64)
    m, n = y.shape
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (n,)).copy()
    coords = {"model": list(models) if models is not None else list(range(m)),
              "item": list(items) if items is not None else list(range(n)),
              "dim": list(range(dims))}
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("theta", 0.0, 1.0, dims=("model", "dim"))
        log_a = pm.Normal("log_a", 0.0, DISCRIMINATION_SIGMA, dims=("item", "dim"))
        b = pm.Normal("b", 0.0, 1.0, dims="item")
        eta = pt.dot(theta, pt.exp(log_a).T) - b[None, :]
        _observe(pm, pt, y, n_trials, g, eta, ("model", "item"))
    return model


def sample_model(model, *, draws: int = 1000, tune: int = 1000, chains: int = 4, target_accept: float = 0.95,
                 seed: int = 0, cores: int = 1, var_names=None):
    """Run NUTS on ``model``; return (idata, diagnostics summary dict).

    The summary is :func:`benchmeasure.irt.diagnostics.summarize_diagnostics` over
    ``var_names`` (default: every free variable and deterministic in the posterior).
    """
    import pymc as pm

    from benchmeasure.irt.diagnostics import summarize_diagnostics

    start = time.perf_counter()
    with model:
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, target_accept=target_accept,
                          random_seed=seed, nuts_sampler="nutpie", progressbar=False,
                          compute_convergence_checks=False)
    elapsed = time.perf_counter() - start
    return idata, summarize_diagnostics(idata, var_names, sampling_time_s=elapsed)
