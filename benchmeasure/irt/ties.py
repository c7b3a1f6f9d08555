"""Items with the same data have the same posterior: pool them, and say when that makes a staircase.

In the 1PL with no guessing floor an item's likelihood depends on its counts only through its
column sum (the Rasch model's sufficient statistic), and with guessing through its whole column
of counts. Items that share it, and share g, have *exactly* the same marginal posterior of b
(given θ they are independent and identically distributed, and the prior is the same), so
their posterior means and sds are equal; a fit reports them as different only by Monte Carlo
noise. Every downstream choice that sorts items — the widest gaps' edge items, BenchFill's
parents — would then depend on that noise. :func:`pool_moments` replaces each tied group's
summaries by the pooled summary of all its draws (the better estimate of the one shared value),
so ties are exact and sorting by (b, position in the matrix) is deterministic.

With one trial per cell (K = 1) there are at most M + 1 column sums for M models, so a benchmark
of thousands of items has at most M + 1 distinct fitted difficulties: its ECDF is a staircase
and its Max Gap and Top-k gaps are gaps between steps. :func:`tie_summary` reports it.
"""

from __future__ import annotations

import numpy as np


def tie_groups(counts, guessing=0.0, *, trials=None, whole_column: bool = False) -> np.ndarray:
    """Group label of each item; items with equal labels have the same posterior of b.

    ``trials`` (a model × item matrix, 0 = absent cell) adds each item's column of trials to its key: with
    holes, equal sums tie only items observed on the same cells with the same K. ``whole_column`` ties only
    identical columns of counts (an observation model whose likelihood is not exponential in b)."""
    y = np.asarray(counts)
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (y.shape[1],))
    t = None if trials is None else np.ascontiguousarray(np.asarray(trials, dtype=np.int64))
    keys = {}
    labels = np.empty(y.shape[1], dtype=np.int64)
    for i in range(y.shape[1]):
        data = int(y[:, i].sum()) if g[i] == 0 and not whole_column else np.ascontiguousarray(y[:, i]).tobytes()
        key = (float(g[i]), data, None if t is None else t[:, i].tobytes())
        labels[i] = keys.setdefault(key, len(keys))
    return labels


def tie_summary(counts, guessing=0.0, *, trials=None, whole_column: bool = False) -> dict:
    """``items``, ``distinct_posteriors``, ``largest_group`` and ``staircase`` (fewer than half as many
    distinct posteriors as items), with a note when it is a staircase."""
    labels = tie_groups(counts, guessing, trials=trials, whole_column=whole_column)
    sizes = np.bincount(labels)
    distinct = int(sizes.size)
    staircase = distinct < 0.5 * labels.size
    return {"items": int(labels.size), "distinct_posteriors": distinct, "largest_group": int(sizes.max()),
            "staircase": bool(staircase),
            "note": (f"only {distinct} distinct difficulty posteriors for {labels.size} items (items with the same "
                     "column sum share one): the difficulty ECDF is a staircase and its gaps are gaps between "
                     "steps; more trials per cell or more models separate them") if staircase else None}


def pool_moments(labels, mean, sd, n_draws: int) -> tuple[np.ndarray, np.ndarray]:
    """Per item the mean and sd of the draws pooled over its tie group, from each item's own mean and sd over
    its ``n_draws`` draws, in O(N).

    A group's pooled mean is its items' mean; its pooled sum of squares is each item's own ((D − 1)·sd²)
    plus D times the squared deviation of each item's mean from the pooled mean (the one-way ANOVA identity),
    so no draw is read again (tests/test_fit_folder_chunks.py checks it against pooling the draws themselves)."""
    labels = np.asarray(labels)
    mean, sd = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float)
    groups = int(labels.max()) + 1
    size = np.bincount(labels, minlength=groups)
    pooled = np.bincount(labels, weights=mean, minlength=groups) / size
    within = (n_draws - 1) * np.where(np.isfinite(sd), sd, 0.0) ** 2 if n_draws > 1 else np.zeros_like(mean)
    between = n_draws * (mean - pooled[labels]) ** 2
    sq = np.bincount(labels, weights=within + between, minlength=groups)
    pooled_sd = np.sqrt(sq / np.maximum(size * n_draws - 1, 1))
    return pooled[labels], pooled_sd[labels]
