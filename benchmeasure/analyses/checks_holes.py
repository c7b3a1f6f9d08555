"""The Table 5 checks (:mod:`benchmeasure.analyses.checks`) on a matrix with holes and K per cell.

The definitions of :mod:`benchmeasure.analyses.checks` use counts out of the same N·K trials for every model. With holes
each figure is computed on the present cells only, with rates in place of counts (so that models or items with
more absent cells are not ranked lower for it). With T the trials matrix (0 = absent):

* information: p_j = Σ_i Y_ji / Σ_i T_ji (the model's accuracy over its present trials), V_obs the sample variance
  of p over models, V_err = mean_j p_j (1 − p_j) / Σ_i T_ji; information = max(0, 1 − V_err / V_obs). Items
  likewise on the columns.
* inversion rates: in column i only the models that answered item i are compared; they are ordered by their
  accuracy on the other items they answered (Σ_{i'≠i} Y / Σ_{i'≠i} T) and compared by their rate Y_ji / T_ji on
  item i; concordant and inverted pairs are pooled as before. Items likewise.

On a complete matrix with K everywhere every figure equals ``analyses.checks.check_matrix``'s (rates are
counts divided by the same constant), which ``tests/test_matrix_holes.py`` asserts.
"""

from __future__ import annotations

import sys

import numpy as np

from benchmeasure.analyses.checks import MatrixChecks, check_matrix, column_orders
from benchmeasure.core.matrix import ResponseMatrix


def _information(counts: np.ndarray, trials: np.ndarray) -> float:
    n = trials.sum(axis=1)
    keep = n > 0
    p = counts.sum(axis=1)[keep] / n[keep]
    if p.size < 2:
        return 0.0
    observed = p.var(ddof=1)
    if not observed > 0:
        return 0.0
    error = float(np.mean(p * (1 - p) / n[keep]))
    return float(max(0.0, 1.0 - error / observed))


def _inversion_rate(counts: np.ndarray, trials: np.ndarray) -> float | None:
    total_y, total_t = counts.sum(axis=1), trials.sum(axis=1)
    concordant = inverted = 0
    for s in range(counts.shape[1]):
        present = trials[:, s] > 0
        rest_t = (total_t - trials[:, s])[present]
        ok = rest_t > 0
        if ok.sum() < 2:
            continue
        key = (total_y - counts[:, s])[present][ok] / rest_t[ok]
        value = counts[present, s][ok] / trials[present, s][ok]
        c, i = column_orders(key, value)
        concordant += c
        inverted += i
    total = concordant + inverted
    return inverted / total if total else None


def check_matrix_with_holes(counts, trials) -> MatrixChecks:
    """The four Table 5 figures of counts (M, N) out of ``trials`` (M, N; 0 = absent)."""
    counts = np.asarray(counts, dtype=float)
    trials = np.asarray(trials, dtype=float)
    return MatrixChecks(
        model_information=_information(counts, trials),
        item_information=_information(counts.T, trials.T),
        model_inversion_rate=_inversion_rate(counts, trials),
        item_inversion_rate=_inversion_rate(counts.T, trials.T),
    )


def warn_if_failing(matrix: ResponseMatrix, stream=None) -> bool:
    """Print one warning line to ``stream`` (stderr) when ``matrix`` fails the checks; return passed. A matrix
    with holes is checked on its present cells (:func:`check_matrix_with_holes`)."""
    if getattr(matrix, "trials", None) is not None:
        result, where = check_matrix_with_holes(matrix.counts, matrix.trials), "paper Table 5, on present cells"
    else:
        result, where = check_matrix(matrix), "paper Table 5"
    if not result.passed:
        print(f"warning: response matrix fails the pre-fit checks ({where}): "
              + "; ".join(result.failures()) + " — the fit proceeds", file=stream or sys.stderr)
    return result.passed
