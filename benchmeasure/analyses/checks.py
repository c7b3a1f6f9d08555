"""Response-matrix checks run before any IRT fit (paper, Figure 2 and Appendix Table 5).

The paper reports four figures per matrix with pass thresholds (model information ≥ 0.3,
item information ≥ 0.3, model inversion rate ≤ 0.3, item inversion rate ≤ 0.3) but not
their formulas. This module fixes the following definitions. Notation: Y is the count
matrix, shape (M, N) (M models, N items), each cell out of K trials.

Information: separation reliability
    How much of the observed spread of the row (model) accuracies is real signal rather
    than binomial sampling noise — the Rasch "separation reliability". For the models,
    with p_j = Σ_i Y_ji / (N K) the accuracy of model j,

        V_obs = sample variance of p_1 … p_M        (ddof = 1)
        V_err = mean_j  p_j (1 − p_j) / (N K)      (variance of p_j if its N K trials were
                                                    Bernoulli draws at its own rate)
        model information = max(0, 1 − V_err / V_obs),  and 0 when V_obs = 0.

    Item information is the same on the columns: q_i = Σ_j Y_ji / (M K), error q_i(1 − q_i)/(M K).
    Identical rows give V_obs = 0, hence model information 0; a matrix of coin flips has
    V_obs ≈ V_err, hence information ≈ 0; well-separated rows give values near 1. The value
    lies in [0, 1] by construction.

Inversion rates: Guttman errors among strict comparisons
    For each item i, order the models by their correct counts on the *other* items (so the
    compared cell does not vote on its own order). For every pair of models with
    different such totals whose counts on item i differ, the comparison is *concordant*
    when the stronger model has the higher count and an *inversion* otherwise. The model
    inversion rate is inversions / (inversions + concordant comparisons), pooled over all
    model pairs and items. The item inversion rate swaps the roles: for each model j,
    item pairs are ordered by their correct counts among the other models (larger =
    easier), and an inversion is model j doing strictly better on the harder item.
    Ties (equal totals or equal counts) carry no order and are left out. A perfect
    Guttman pattern has no inversions (rate 0); a matrix of coin flips has rate ≈ 0.5
    (excluding the compared cell from the ordering removes the pull towards 0 that a
    self-including total would give with few models). Without any strict comparison the
    rate is undefined (``None``) and the check fails.

Worked example (K = 2)::

           q0 q1 q2 q3   row sum  p_j
    m0      2  2  1  0      5     5/8
    m1      2  1  0  1      4     4/8
    m2      1  0  1  0      2     2/8
    col sum 5  3  2  1

* Model information: p = (0.625, 0.5, 0.25); V_obs = 0.036458…;
  V_err = mean(0.625·0.375, 0.5·0.5, 0.25·0.75)/8 = 0.027995…; 1 − V_err/V_obs = 0.232143.
* Item information: q = (5, 3, 2, 1)/6; V_obs = 0.081019…; V_err = 0.03125; → 0.614286.
* Model inversions. Item q0: totals without q0 are (3, 2, 1); counts (2, 2, 1): m0–m1
  tie, m0>m2 and m1>m2 concordant. q1: totals (3, 3, 2): m0–m1 unordered, two
  concordant. q2: totals (4, 4, 1), counts (1, 0, 1): m0–m2 tie, m1 (stronger) < m2
  inverted. q3: totals (5, 3, 2), counts (0, 1, 0): m0 < m1 inverted, m1 > m2
  concordant. Rate 2 / 7 = 0.285714.
* Item inversions. m0: column sums without m0 (3, 1, 1, 1), counts (2, 2, 1, 0): two
  concordant (q0 vs q2, q3). m1: sums (3, 2, 2, 0), counts (2, 1, 0, 1): three
  concordant, q2 (easier) < q3 inverted. m2: sums (4, 3, 1, 1), counts (1, 0, 1, 0):
  two concordant, q1 (easier) < q2 inverted. Rate 2 / 9 = 0.222222.

These numbers are asserted in ``tests/test_checks.py``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from benchmeasure.core.matrix import ResponseMatrix

THRESHOLDS = {
    "model_information": (">=", 0.3),
    "item_information": (">=", 0.3),
    "model_inversion_rate": ("<=", 0.3),
    "item_inversion_rate": ("<=", 0.3),
}

# Item pairs are compared in blocks of this many rows so memory stays O(block × N).
_BLOCK = 512
#: columns at least this long (and at most _BLOCK) are compared by the compiled pair loop (the same counts)
_COMPILED_FROM = 64


@dataclass(frozen=True)
class MatrixChecks:
    """The four figures of paper Table 5 for one matrix; the rates are None when undefined."""

    model_information: float
    item_information: float
    model_inversion_rate: float | None
    item_inversion_rate: float | None

    def failures(self) -> list[str]:
        """Human-readable reasons the matrix fails the thresholds (empty when it passes)."""
        reasons = []
        for name, (op, limit) in THRESHOLDS.items():
            value = getattr(self, name)
            if value is None:
                reasons.append(f"{name} is undefined (no strictly ordered comparison)")
            elif (op == ">=" and value < limit) or (op == "<=" and value > limit):
                reasons.append(f"{name} = {value:.3f} (need {op} {limit})")
        return reasons

    @property
    def passed(self) -> bool:
        return not self.failures()

    def as_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed}   # the four figures in field order, then passed


def separation_reliability(counts: np.ndarray, n_trials: int) -> float:
    """Share of the spread of row accuracies not explained by binomial noise, in [0, 1].

    Parameters
    ----------
    counts : ndarray of int, shape (R, C)
        Rows are the units being separated (models, or items after transposing).
    n_trials : int
        Trials per cell (K).
    """
    counts = np.asarray(counts, dtype=float)
    cols = counts.shape[1]
    p = counts.sum(axis=1) / (cols * n_trials)
    observed = p.var(ddof=1)
    if not observed > 0:
        return 0.0
    error = float(np.mean(p * (1 - p))) / (cols * n_trials)
    return float(max(0.0, 1.0 - error / observed))


def _strict_orders(counts: np.ndarray) -> tuple[int, int]:
    """Concordant and inverted comparisons between the rows of ``counts``, column by column.

    Parameters
    ----------
    counts : ndarray, shape (R, S)
        Rows are the units being ordered, columns the contexts they are compared in.

    Returns
    -------
    (concordant, inverted) : tuple of int
        Over unordered row pairs and columns s: the rows are ordered by their sums over
        the *other* columns (so the compared cell does not vote on its own order); a
        comparison is concordant when the higher-ranked row has the larger count in
        column s, inverted when it has the smaller. Ties in either are skipped.
    """
    counts = np.asarray(counts, dtype=float)
    totals = counts.sum(axis=1)
    concordant = inverted = 0
    rows = counts.shape[0]
    if rows <= 64:   # few rows (models): every column's R × R comparisons at once, a chunk of columns at a time
        step = max(1, 2_000_000 // (rows * rows))
        for start in range(0, counts.shape[1], step):
            value = counts[:, start:start + step]
            key = totals[:, None] - value
            product = (np.sign(key[:, None, :] - key[None, :, :])
                       * np.sign(value[:, None, :] - value[None, :, :]))
            concordant += int((product > 0).sum()) // 2
            inverted += int((product < 0).sum()) // 2
        return concordant, inverted
    for s in range(counts.shape[1]):
        value = counts[:, s]
        c, i = column_orders(totals - value, value)
        concordant += c
        inverted += i
    return concordant, inverted


def column_orders(key: np.ndarray, value: np.ndarray) -> tuple[int, int]:
    """Row pairs ordered the same way (concordant) and the opposite way (inverted) by ``key`` and ``value``;
    pairs tied in either are skipped."""
    if _COMPILED_FROM <= len(key) <= _BLOCK:
        from benchmeasure.analyses.kernels import pair_orders  # numba: loaded only where a column is this long

        c, i = pair_orders(np.ascontiguousarray(key, dtype=float), np.ascontiguousarray(value, dtype=float))
        return int(c), int(i)
    if len(key) <= _BLOCK:
        product = np.sign(key[:, None] - key[None, :]) * np.sign(value[:, None] - value[None, :])
        return int((product > 0).sum()) // 2, int((product < 0).sum()) // 2
    # many rows (e.g. items): count, for each row a and each distinct value v, the rows with a
    # strictly smaller key and value v (sorted keys + searchsorted), O(levels · R log R)
    # instead of the R² comparisons; pairs tied in key or value are skipped as above
    levels = np.unique(value)
    below = np.empty((levels.size, len(key)), dtype=np.int64)  # below[l, a]: key < key_a and value == v_l
    for index, level in enumerate(levels):
        below[index] = np.searchsorted(np.sort(key[value == level]), key, side="left")
    level_of = np.searchsorted(levels, value)
    cumulative = np.cumsum(below, axis=0)                      # value ≤ v_l
    rows = np.arange(len(key))
    smaller = np.where(level_of > 0, cumulative[np.maximum(level_of - 1, 0), rows], 0)
    larger = cumulative[-1] - cumulative[level_of, rows]
    # key_b < key_a and value_b < value_a (concordant); key_b < key_a and value_b > value_a (inverted)
    return int(smaller.sum()), int(larger.sum())


def inversion_rate(counts: np.ndarray) -> float | None:
    """Guttman-error rate of the rows of ``counts`` (shape (R, C)); None without strict comparisons."""
    concordant, inverted = _strict_orders(counts)
    total = concordant + inverted
    return inverted / total if total else None


def check_matrix(matrix: ResponseMatrix) -> MatrixChecks:
    """Compute the four Table 5 figures for ``matrix`` (counts of shape (M, N))."""
    counts = matrix.counts
    return MatrixChecks(
        model_information=separation_reliability(counts, matrix.n_trials),
        item_information=separation_reliability(counts.T, matrix.n_trials),
        model_inversion_rate=inversion_rate(counts),
        item_inversion_rate=inversion_rate(counts.T),
    )

