"""Items with the same data have the same posterior: pool them, and say when that makes a staircase.

In the 1PL with no guessing floor an item's likelihood depends on its counts only through its
column sum (the Rasch model's sufficient statistic), and with guessing through its whole column
of counts. Items that share it, and share g, have *exactly* the same marginal posterior of b
(given θ they are independent and identically distributed, and the prior is the same), so
their posterior means and sds are equal; a fit reports them as different only by Monte Carlo
noise. Every downstream choice that sorts items — the widest gaps' edge items, BenchFill's
parents — would then depend on that noise. :func:`pool_ties` replaces each tied group's
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


def pool_ties(labels, b_draws, chunk: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Per item the mean and sd of the draws pooled over its tie group; ``b_draws`` (D, N) of any float type.

    Two passes over ``chunk`` items at a time (sums, then squared deviations from the pooled means), each
    chunk converted to float64 on its own: no full-size temporary beside the draws themselves."""
    labels = np.asarray(labels)
    n_draws, n_items = b_draws.shape
    groups = int(labels.max()) + 1
    count = np.bincount(labels, minlength=groups) * n_draws
    total = np.zeros(groups)
    for start in range(0, n_items, chunk):
        block = np.asarray(b_draws[:, start:start + chunk], dtype=float)
        np.add.at(total, labels[start:start + chunk], block.sum(axis=0))
    mean = total / count
    sq = np.zeros(groups)
    for start in range(0, n_items, chunk):
        block = np.asarray(b_draws[:, start:start + chunk], dtype=float)
        centred = mean[labels[start:start + chunk]][None, :]
        np.add.at(sq, labels[start:start + chunk], ((block - centred) ** 2).sum(axis=0))
    sd = np.sqrt(sq / np.maximum(count - 1, 1))
    return mean[labels], sd[labels]
