"""How narrow a band of difficulty a fitted benchmark can reveal, and whether each reported gap is real.

An estimated difficulty is its truth plus noise of about one posterior sd σ, so the items at
the two edges of an empty band are pushed into it: noise *fills* gaps. For items with
density λ per unit of b on one side of an edge, the expected depth filled from that side is

    D(σ, λ) = σ ∫₀^∞ (1 − exp(−λ σ ψ(t))) dt,      ψ(t) = φ(t) − t (1 − Φ(t)),

the expected overshoot of the largest of a Poisson(λ) field of points each moved by
N(0, σ²) (λσψ(x/σ) is the expected number moved past x). A band of true width w then shows
as a gap of about w − D_left − D_right. ``tests/test_resolution.py`` and
``bench/bench_gap_calibration.py`` check this by simulation.

Definitions used in every report:

* a gap between two neighbouring items (by posterior mean) is **resolved** when its width is
  at least ``SEPARATION`` = 2 posterior sds of the difference of its edges,
  (b_hi − b_lo) ≥ 2 √(σ_lo² + σ_hi²): the chance that noise alone put the two edge items in
  this order is then ≲ 2 % (Gaussian approximation);
* the benchmark's **resolution** is the narrowest true band that would show as a resolved
  gap at the typical σ (median posterior sd) and the typical density (items per unit of b
  over the posterior means' range): 2 D(σ, λ) + 2√2 σ, divided by that range (normalized
  units, like Max Gap).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import quad
from scipy.stats import norm

from .errors import fail

SEPARATION = 2.0


def psi(t):
    """ψ(t) = φ(t) − t (1 − Φ(t)) = ∫_t^∞ (1 − Φ(s)) ds."""
    return norm.pdf(t) - t * norm.sf(t)


def filled_depth(sigma: float, density: float) -> float:
    """Expected depth D(σ, λ) that noise of sd σ fills into an empty band from one edge of density λ."""
    if sigma <= 0 or density <= 0:
        return 0.0
    value, _ = quad(lambda t: -math.expm1(-density * sigma * psi(t)), 0.0, math.inf, limit=200)
    return sigma * value


def _local_density(sorted_b: np.ndarray, at: float, side: int, window: float) -> float:
    """Items per unit of b within ``window`` of ``at`` on one side (side −1: below, +1: above)."""
    if side < 0:
        count = np.count_nonzero((sorted_b <= at) & (sorted_b >= at - window))
    else:
        count = np.count_nonzero((sorted_b >= at) & (sorted_b <= at + window))
    return count / window


def benchmark_resolution(b_mean, b_sd) -> dict:
    """The narrowest band this fit can reveal, in normalized units (module docstring)."""
    b = np.asarray(b_mean, dtype=float)
    s = np.asarray(b_sd, dtype=float)
    if b.size < 2 or not np.all(np.isfinite(s)):
        fail("resolution needs at least two items with finite posterior sds")
    span = float(b.max() - b.min())
    if span <= 0:
        fail("all posterior means are equal; the resolution is undefined")
    sigma = float(np.median(s))
    density = b.size / span
    depth = filled_depth(sigma, density)
    width = 2 * depth + SEPARATION * math.sqrt(2) * sigma
    return {"resolution": width / span, "typical_sd": sigma, "items_per_unit": density,
            "filled_depth_per_edge": depth / span, "range": span}


def gap_table(b_mean, b_sd, items=None, top_k: int = 5) -> list[dict]:
    """The ``top_k`` widest gaps between neighbouring posterior means, each with its resolution.

    Each row: ``rank``, ``lower_item``/``upper_item`` (edge items), ``lower_b``/``upper_b``,
    ``width`` (normalized by the posterior means' range, as the paper's gaps), ``separation``
    (width over the sd of the edges' difference), ``resolved``, ``fillable`` (normalized depth
    noise is expected to fill from both edges, D_lower + D_upper at the local densities) and
    ``filled_corrected_width`` (width + fillable: the band width that would show as this gap).
    Ties in b are ordered by item position, so the table never depends on the order of draws.
    """
    b = np.asarray(b_mean, dtype=float)
    s = np.asarray(b_sd, dtype=float)
    items = list(range(b.size)) if items is None else list(items)
    order = np.lexsort((np.arange(b.size), b))
    sb, ss = b[order], s[order]
    span = float(sb[-1] - sb[0])
    if span <= 0:
        fail("all posterior means are equal; gaps are undefined")
    widths = np.diff(sb)
    ranked = np.lexsort((np.arange(widths.size), -widths))[:top_k]
    rows = []
    for rank, g in enumerate(ranked, start=1):
        lo, hi = sb[g], sb[g + 1]
        sd = math.hypot(ss[g], ss[g + 1])
        window = 2 * max(float(np.median(s)), 1e-9)
        fill = (filled_depth(float(ss[g]), _local_density(sb, lo, -1, window))
                + filled_depth(float(ss[g + 1]), _local_density(sb, hi, +1, window)))
        sep = (hi - lo) / sd if sd > 0 else math.inf
        rows.append({"rank": rank, "lower_item": items[order[g]], "upper_item": items[order[g + 1]],
                     "lower_b": float(lo), "upper_b": float(hi), "width": float((hi - lo) / span),
                     "separation": float(sep) if math.isfinite(sep) else None,
                     "resolved": bool(sep >= SEPARATION), "fillable": fill / span,
                     "filled_corrected_width": float((hi - lo) + fill) / span})
    return rows


def tie_summary(column_sums) -> dict:
    """Distinct column sums against items: with one trial per cell, items with equal sums share one posterior."""
    sums = np.asarray(column_sums)
    distinct = int(np.unique(sums).size)
    return {"items": int(sums.size), "distinct_column_sums": distinct,
            "staircase": bool(distinct < 0.5 * sums.size)}
