"""The 2PL as a PyMC model, and its log-likelihood per cell for PSIS-LOO.

log p = −softplus(−η) + log1p(g·e^(−η)) and log(1 − p) = log1p(−g) − softplus(η), η = a_i(θ_j − b_i), the
binomial log-probability of p = g + (1 − g)σ(η) written without a log of a difference; a cell with K = 0 (absent)
contributes 0. ``slopes=False`` holds every a at 1: exactly the paper's 1PL posterior (the comparison's 1PL).
"""

from __future__ import annotations

import numpy as np

#: the slopes' prior: log a ~ Normal(0, SLOPE_SD) (docs/irt.md says why)
SLOPE_SD = 0.5


def build_2pl_model(counts, trials, guessing, *, models, items, slopes: bool = True):
    """The PyMC model: ``theta`` (dims model), ``b`` and, with ``slopes``, ``a`` = exp(``log_a``) (dims item)."""
    import pymc as pm
    import pytensor.tensor as pt

    y = np.asarray(counts, dtype=float)
    k = np.asarray(trials, dtype=float)
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (y.shape[1],))
    with pm.Model(coords={"model": list(models), "item": list(items)}) as model:
        theta = pm.Normal("theta", 0.0, 1.0, dims="model")
        b = pm.Normal("b", 0.0, 1.0, dims="item")
        eta = theta[:, None] - b[None, :]
        if slopes:
            log_a = pm.Normal("log_a", 0.0, SLOPE_SD, dims="item")
            a = pm.Deterministic("a", pt.exp(log_a), dims="item")
            eta = a[None, :] * eta
        if np.any(g > 0):
            log_p = -pt.softplus(-eta) + pt.log1p(g[None, :] * pt.exp(-eta))
            log_q = np.log1p(-g)[None, :] - pt.softplus(eta)
            pm.Potential("loglik", pt.sum(y * log_p + (k - y) * log_q))
        else:   # g = 0: y·η − K·softplus(η)
            pm.Potential("loglik", pt.sum(y * eta - k * pt.softplus(eta)))
    return model


def cell_loglik(counts, trials, guessing, theta, b, a=None):
    """log Binomial(y | K, p) of every cell for every draw: ``theta`` (S, M), ``b`` and ``a`` (S, n) → (S, M, n)
    (``a`` None: the 1PL). The constant log C(K, y) is included."""
    from scipy.special import gammaln, log1p

    y = np.asarray(counts, dtype=float)
    k = np.asarray(trials, dtype=float)
    g = np.asarray(guessing, dtype=float)
    eta = theta[:, :, None] - b[:, None, :]
    if a is not None:
        eta = a[:, None, :] * eta
    log_p = -np.logaddexp(0.0, -eta) + (log1p(g * np.exp(-eta)) if np.any(g > 0) else 0.0)
    log_q = log1p(-g) - np.logaddexp(0.0, eta)
    const = gammaln(k + 1) - gammaln(y + 1) - gammaln(k - y + 1)
    return const + y * log_p + (k - y) * log_q
