"""Seeded simulation of graded responses from a known 1PL model, for examples and tests.

Everything produced here is synthetic: it stands in for the paper's released data,
which we do not have, and is labelled as simulated wherever it is stored.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.irt.likelihood import log_sigmoid


def simulate_counts(abilities, difficulties, n_trials: int, seed: int, guessing=0.0) -> np.ndarray:
    """Correct counts Y_ij ~ Binomial(K, g + (1 − g)σ(θ_j − b_i)).

    Parameters
    ----------
    abilities : array_like, shape (M,)
    difficulties : array_like, shape (N,)
    n_trials : int
    seed : int
    guessing : float or array_like of shape (N,)

    Returns
    -------
    ndarray of int64, shape (M, N)
    """
    theta = np.asarray(abilities, dtype=float)[:, None]
    b = np.asarray(difficulties, dtype=float)[None, :]
    g = np.asarray(guessing, dtype=float)
    p = g + (1 - g) * np.exp(log_sigmoid(theta - b))
    return np.random.default_rng(seed).binomial(n_trials, p).astype(np.int64)


def simulate_trials(abilities, difficulties, n_trials: int, seed: int, guessing=0.0) -> np.ndarray:
    """Per-trial outcomes (0/1), shape (M, N, K), from the same model as :func:`simulate_counts`."""
    theta = np.asarray(abilities, dtype=float)[:, None, None]
    b = np.asarray(difficulties, dtype=float)[None, :, None]
    g = np.asarray(guessing, dtype=float)
    if g.ndim == 1:
        g = g[None, :, None]
    p = g + (1 - g) * np.exp(log_sigmoid(theta - b))
    rng = np.random.default_rng(seed)
    return (rng.random((theta.shape[0], b.shape[1], n_trials)) < p).astype(np.int8)


def gapped_difficulties(n_items: int, seed: int, gaps=((-0.9, -0.3), (0.6, 1.3), (1.8, 2.2)),
                        low: float = -2.5, high: float = 2.5) -> np.ndarray:
    """Difficulties spread over [low, high] except inside ``gaps`` (deliberate coverage gaps).

    Draws uniformly on the allowed set; the two ends are pinned to ``low`` and ``high``
    so the min–max scale is known.
    """
    rng = np.random.default_rng(seed)
    values = [low, high]
    while len(values) < n_items:
        x = rng.uniform(low, high)
        if not any(a < x < b for a, b in gaps):
            values.append(x)
    return rng.permutation(np.array(values))
