"""The posterior means the paper's plug-in value is computed from, the same in every command: each item's draws,
pooled over the items tied with it.

Items with the same data have exactly the same posterior (:mod:`benchmeasure.irt.ties`), and ``fit`` writes each
tied group's pooled mean and sd to ``difficulty.csv``; an item's own draws differ from them by Monte Carlo noise
only, which at K = 1 moved the Max Gap of a 12 × 120 fit from 0.111 to 0.102. :func:`pooled_moments` pools the
saved draws the same way (:func:`benchmeasure.irt.ties.pool_moments`, the function ``fit`` uses), with the tied
groups read back from the fit folder: the items whose ``b_mean`` and ``b_sd`` cells in ``difficulty.csv`` are
identical, trusted only when their number is the ``distinct_posteriors`` the fit recorded in
``diagnostics.json``. Draws without such a fit folder beside them keep each item's own mean. The plug-in itself
is :func:`benchmeasure.core.metrics.plugin_values` of these means.
"""

from __future__ import annotations

import os

import numpy as np

from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import InputError
from benchmeasure.core.matrix_holes import diagnostics_beside

POOLED = "pooled over tied items (the fit's difficulty.csv groups; irt/ties.py), as fit computes them"
OWN = "each item's own draws (no fit folder beside the draws to say which items are tied)"


def tie_labels_beside(posterior_path, items) -> np.ndarray | None:
    """Tie group of each of ``items`` from the fit folder holding ``posterior_path``, or None (no fit there, other
    items, or groups that do not match the fit's ``ties.distinct_posteriors``)."""
    path = os.fspath(posterior_path).rstrip("/")
    difficulty = os.path.join(os.path.dirname(os.path.abspath(path)), "difficulty.csv")
    ties = diagnostics_beside(path).get("ties")
    distinct = ties.get("distinct_posteriors") if isinstance(ties, dict) else None
    if not isinstance(distinct, int) or not os.path.isfile(difficulty):
        return None
    try:
        table = read_table(difficulty)
    except (InputError, OSError, UnicodeDecodeError):  # a file the fit did not write: no ties from it
        return None
    if not {"item", "b_mean", "b_sd"} <= set(table.header):
        return None
    keys = dict(zip(table.column("item"), zip(table.column("b_mean"), table.column("b_sd"))))
    if len(keys) != len(items) or any(str(i) not in keys for i in items):
        return None
    groups: dict = {}
    labels = np.array([groups.setdefault(keys[str(i)], len(groups)) for i in items], dtype=np.int64)
    return labels if len(groups) == distinct else None


def pooled_moments(items, draws, posterior_path=None) -> tuple[np.ndarray, np.ndarray, str]:
    """Per item the posterior mean and sd of ``draws`` (D, N) pooled over its tie group, and which (:data:`POOLED`
    or :data:`OWN`)."""
    b = np.asarray(draws, dtype=float)
    mean = b.mean(axis=0)
    sd = b.std(axis=0, ddof=1) if b.shape[0] > 1 else np.zeros(b.shape[1])
    labels = None if posterior_path is None or items is None else tie_labels_beside(posterior_path, items)
    if labels is None:
        return mean, sd, OWN
    from benchmeasure.irt.ties import pool_moments

    pooled_mean, pooled_sd = pool_moments(labels, mean, sd, b.shape[0])
    return pooled_mean, pooled_sd, POOLED
