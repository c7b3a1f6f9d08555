"""The 1PL on a suite by marginal maximum a posteriori: EM over a fixed ability grid, holes included.

Model (the paper's 1PL, binomial with K per cell): model j answers item i correctly in each of ``trials[j, i]``
trials with probability σ(θ_j − b_i); θ_j ~ Normal(0, 1) is integrated out on a grid of ``GRID`` points
(−6 … 6, weights ∝ the normal density); b_i has a Normal(0, ``prior_sd``²) prior (the paper's Normal(0, 1) by
default) and is set to its marginal posterior mode. An absent cell has ``trials = 0`` and adds nothing to the
likelihood — that is the masked likelihood, exact for any pattern of holes.

EM (Bock & Aitkin 1981, the standard route for marginal item calibration): the E-step gives each model's
posterior weights over the grid; the M-step solves, per free item, Σ_g n_gi σ(g − b_i) − r_gi + b_i/s² = 0
by Newton steps, where r_gi and n_gi are the expected correct and total trials at grid point g. Items marked
fixed keep their value and only contribute to the E-step (fixed-parameter calibration: the scale set by the
earlier items is kept). Each E-step is two matrix products, so 12,000 items × 30 models take well under a
second per iteration.
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger(__name__)

GRID = np.linspace(-6.0, 6.0, 61)
LOG_PRIOR = -0.5 * GRID**2


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(log_sigmoid(x))


def grid_loglik(counts: np.ndarray, trials: np.ndarray, b: np.ndarray, grid: np.ndarray = GRID) -> np.ndarray:
    """log P(answers of model j | θ = grid[g]) for every model and grid point: shape (M, G). Holes add 0."""
    z = grid[:, None] - b[None, :]
    counts = np.asarray(counts, dtype=float)
    fails = np.asarray(trials, dtype=float) - counts
    log_p = log_sigmoid(z)
    return counts @ log_p.T + fails @ (log_p - z).T                 # log σ(−z) = log σ(z) − z


def normalize(logw: np.ndarray) -> np.ndarray:
    """Row-wise softmax of log weights."""
    w = np.exp(logw - logw.max(axis=1, keepdims=True))
    return w / w.sum(axis=1, keepdims=True)


def fit_items(counts: np.ndarray, trials: np.ndarray, b_start: np.ndarray, free: np.ndarray, *,
              prior_sd: float = 1.0, tol: float = 1e-4, max_iter: int = 1000) -> tuple[np.ndarray, np.ndarray, int]:
    """Marginal posterior modes of the free difficulties; the others stay at ``b_start``.

    Returns (b, weights, iterations): ``weights[j, g]`` is model j's posterior over ``GRID`` at the end.
    """
    b = np.where(np.isfinite(b_start), b_start, 0.0).astype(float)
    free = np.asarray(free, dtype=bool)
    counts = np.asarray(counts, dtype=float)
    trials = np.asarray(trials, dtype=float)
    fixed_part = LOG_PRIOR[None, :] + grid_loglik(counts[:, ~free], trials[:, ~free], b[~free])
    c_free, t_free = counts[:, free], trials[:, free]
    bf = b[free].copy()
    s2 = prior_sd**2
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        w = normalize(fixed_part + grid_loglik(c_free, t_free, bf))
        r, n = w.T @ c_free, w.T @ t_free                      # (G, N_free)
        old = bf.copy()
        for _ in range(4):
            s = sigmoid(GRID[:, None] - bf[None, :])
            grad = (n * s - r).sum(axis=0) - bf / s2
            hess = -(n * s * (1 - s)).sum(axis=0) - 1.0 / s2
            bf = bf - np.clip(grad / hess, -1.0, 1.0)
        if np.max(np.abs(bf - old), initial=0.0) < tol:
            break
    else:
        log.warning("EM stopped after %d iterations (largest change %.2g)", max_iter, np.max(np.abs(bf - old)))
    b[free] = bf
    w = normalize(fixed_part + grid_loglik(c_free, t_free, bf))
    return b, w, it


def ability_summary(counts: np.ndarray, trials: np.ndarray, b: np.ndarray,
                    prior_sd: float = 3.0, grid: np.ndarray = GRID) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per model: posterior mean and variance of θ under a wide Normal(0, ``prior_sd``²) prior (on ``grid``), and
    whether the model answered anything (the mean and variance of a model with no answer are the prior's)."""
    logw = grid_loglik(counts, trials, b, grid) - 0.5 * (grid / prior_sd) ** 2
    w = normalize(logw)
    mean = w @ grid
    var = w @ grid**2 - mean**2
    return mean, var, np.asarray(trials).sum(axis=1) > 0
