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
  gap at the typical σ (median posterior sd) and the typical density (distinct posterior
  means per unit of b over their range; tied items, which share one posterior, count once):
  2 D(σ, λ) + 2√2 σ, divided by that range (normalized units, like Max Gap).

**What to ask the panel next** (:func:`trials_to_resolve`). An item's posterior precision is
about its prior's (1, the N(0, 1) population) plus K·J_i, where J_i = Σ_m p_im(1 − p_im) is the
Fisher information of one trial by each model; so K·J_i ≈ 1/σ_i² − 1 can be read off the fit's
own sd, and with K' trials per model on that item σ_i'² ≈ 1 / (1 + (K'/K)(1/σ_i² − 1)). A gap
of width w becomes resolved when σ_lo'² + σ_hi'² ≤ (w / SEPARATION)²; the smallest such K' is
found by bisection (the left side falls as K' grows). It assumes the gap stays as wide as it
looks (a gap made by noise shrinks as trials come in: that is the point of asking) and binomial
trials (with over-dispersed repeated samples, extra trials of the same model help less).
``tests/test_extra_trials.py`` checks σ' against the exact posterior sd at K' by simulation.
"""

from __future__ import annotations

import math
import statistics

from benchmeasure.base.errors import fail

SEPARATION = 2.0
STDLIB_NOTE = "standard library only, so that diagnose_benchmark.py (python3 -I -S) can use it"


def psi(t: float) -> float:
    """ψ(t) = φ(t) − t (1 − Φ(t)) = ∫_t^∞ (1 − Φ(s)) ds."""
    return math.exp(-0.5 * t * t) / math.sqrt(2 * math.pi) - t * 0.5 * math.erfc(t / math.sqrt(2))


def filled_depth(sigma: float, density: float) -> float:
    """Expected depth D(σ, λ) that noise of sd σ fills into an empty band from one edge of density λ.

    σ ∫₀^∞ (1 − exp(−λσψ(t))) dt by Simpson's rule on [0, T], T where λσψ(T) < 1e-12 (ψ falls
    faster than a Gaussian tail), 2,000 intervals: relative error far below 1e-6.
    """
    if not sigma > 0 or not density > 0:
        return 0.0
    scale = density * sigma
    upper = 1.0
    while scale * psi(upper) > 1e-12 and upper < 60:
        upper += 0.5
    m = 2000
    h = upper / m
    total = 0.0
    for k in range(m + 1):
        value = -math.expm1(-scale * psi(k * h))
        total += value * (1 if k in (0, m) else 4 if k % 2 else 2)
    return sigma * total * h / 3


#: more trials than this many times K are not a practical request (reported as None)
MAX_TRIAL_FACTOR = 1000


def trials_to_resolve(width: float, sd_low: float, sd_high: float, n_trials: int) -> int | None:
    """Extra trials per model, on both edge items, after which a gap of ``width`` (units of b) is resolved.

    0 when it is resolved already; None when no number up to :data:`MAX_TRIAL_FACTOR` × K would do (an
    edge item every model solves or fails carries almost no information: σ ≥ 1, the prior's sd), or
    when the width is 0 (module docstring).
    """
    if not width > 0 or n_trials < 1:
        return None
    target = (width / SEPARATION) ** 2
    info = [max(1.0 / (s * s) - 1.0, 0.0) if s > 0 else math.inf for s in (sd_low, sd_high)]

    def variance(factor: float) -> float:
        return sum(0.0 if math.isinf(a) else 1.0 / (1.0 + factor * a) for a in info)

    if variance(1.0) <= target:
        return 0
    top = float(MAX_TRIAL_FACTOR)
    if variance(top) > target:
        return None
    low = 1.0
    while top - low > 1e-9 * top:
        mid = 0.5 * (low + top)
        low, top = (mid, top) if variance(mid) > target else (low, mid)
    return max(1, math.ceil(top * n_trials - 1e-9) - n_trials)


def separations(z: list, sd: list, gaps: list) -> list:
    """Per gap (``metrics.Gap`` on the normalized axis) its width over the sd of its edges' difference.

    ``z`` and ``sd`` are aligned (sd in the same normalized units). None where the sds are all
    zero (nothing known) or the gap touches an end of the axis with no item there.
    """
    import bisect

    pairs = sorted(zip(z, sd))
    zs = [p[0] for p in pairs]
    out = []
    for gap in gaps:
        lo = bisect.bisect_right(zs, gap.left) - 1     # the item at the left edge (last with that z)
        hi = bisect.bisect_left(zs, gap.right)        # the item at the right edge (first with that z)
        if lo < 0 or hi >= len(zs) or zs[lo] != gap.left or zs[hi] != gap.right:
            out.append(None)
            continue
        spread = math.hypot(pairs[lo][1], pairs[hi][1])
        out.append(None if spread == 0 else gap.width / spread)
    return out


def resolved_first(gaps: list, z: list, sd: list) -> list:
    """``gaps`` (``metrics.Gap``) reordered: resolved (or unknown) gaps first, then unresolved, then empty
    (width 0) ones, each group in its given order. Every gap choice uses it: BenchFill's targets, mass
    fill's next gap, the band of ``scope --gap``.

    Returns a list of ``(gap, separation)``.
    """
    seps = separations(z, sd, gaps)
    known = [(g, s) for g, s in zip(gaps, seps) if g.width > 0 and (s is None or s >= SEPARATION)]
    weak = [(g, s) for g, s in zip(gaps, seps) if g.width > 0 and s is not None and s < SEPARATION]
    empty = [(g, s) for g, s in zip(gaps, seps) if g.width <= 0]
    return known + weak + empty


def _count_within(sorted_b: list, low: float, high: float) -> int:
    import bisect

    return bisect.bisect_right(sorted_b, high) - bisect.bisect_left(sorted_b, low)


def _check(b_mean, b_sd) -> tuple[list, list]:
    b = [float(v) for v in b_mean]
    s = [float(v) for v in b_sd]
    if len(b) < 2 or len(s) != len(b):
        fail("resolution needs at least two items, each with a posterior mean and sd")
    if not all(math.isfinite(v) and v >= 0 for v in s):
        fail("resolution needs a finite, non-negative posterior sd for every item (b_sd)")
    if max(b) <= min(b):
        fail("all posterior means are equal; the resolution is undefined")
    return b, s


def benchmark_resolution(b_mean, b_sd) -> dict:
    """The narrowest band this fit can reveal, in normalized units (module docstring)."""
    b, s = _check(b_mean, b_sd)
    span = max(b) - min(b)
    sigma = statistics.median(s)
    density = len(set(b)) / span   # distinct values: tied items (one shared posterior) move together
    depth = filled_depth(sigma, density)
    width = 2 * depth + SEPARATION * math.sqrt(2) * sigma
    return {"resolution": width / span, "typical_sd": sigma, "items_per_unit": density,
            "filled_depth_per_edge": depth / span, "range": span}


def sorted_order(b_mean) -> list:
    """Item positions sorted by b, ties by position: a deterministic order that no Monte Carlo noise can change."""
    return sorted(range(len(b_mean)), key=lambda i: (float(b_mean[i]), i))


def gap_table(b_mean, b_sd, items=None, top_k: int = 5, n_trials: int | None = None) -> list[dict]:
    """The ``top_k`` widest gaps between neighbouring posterior means, each with its resolution.

    Each row: ``rank``, ``lower_item``/``upper_item`` (edge items), ``lower_b``/``upper_b``,
    ``left``/``width``/``right`` (normalized by the posterior means' range, as the paper's gaps),
    ``separation`` (width over the sd of the edges' difference), ``resolved``, ``fillable``
    (normalized depth noise is expected to fill from both edges, D_lower + D_upper at the
    local densities within 2 typical sds) and ``filled_corrected_width`` (width + fillable:
    the band width that would show as this gap). With ``n_trials`` (K), also
    ``extra_trials_per_model``: trials per model on both edge items after which the gap would be
    resolved (:func:`trials_to_resolve`; 0 when it is). Ties (equal b, equal width) are ordered by
    item position, so the table never depends on the order of draws.
    """
    b, s = _check(b_mean, b_sd)
    items = list(range(len(b))) if items is None else list(items)
    order = sorted_order(b)
    sb, ss = [b[i] for i in order], [s[i] for i in order]
    low, span = sb[0], sb[-1] - sb[0]
    window = 2 * max(statistics.median(s), 1e-9)
    widths = [sb[g + 1] - sb[g] for g in range(len(sb) - 1)]
    ranked = sorted(range(len(widths)), key=lambda g: (-widths[g], g))[:top_k]
    rows = []
    for rank, g in enumerate(ranked, start=1):
        lo, hi = sb[g], sb[g + 1]
        sd = math.hypot(ss[g], ss[g + 1])
        fill = (filled_depth(ss[g], _count_within(sb, lo - window, lo) / window)
                + filled_depth(ss[g + 1], _count_within(sb, hi, hi + window) / window))
        sep = (hi - lo) / sd if sd > 0 else None
        rows.append({"rank": rank, "lower_item": items[order[g]], "upper_item": items[order[g + 1]],
                     "lower_b": lo, "upper_b": hi, "left": (lo - low) / span, "right": (hi - low) / span,
                     "width": (hi - lo) / span, "separation": sep,
                     "resolved": bool(sep is None or sep >= SEPARATION), "fillable": fill / span,
                     "filled_corrected_width": ((hi - lo) + fill) / span})
        if n_trials is not None:
            rows[-1]["extra_trials_per_model"] = trials_to_resolve(hi - lo, ss[g], ss[g + 1], n_trials)
    return rows


def tie_summary(column_sums) -> dict:
    """Distinct column sums against items: with one trial per cell, items with equal sums share one posterior.

    ``staircase`` is true when there are fewer than half as many distinct sums as items: then the
    fitted difficulties take only that many distinct values (up to Monte Carlo noise) and the
    difficulty ECDF is a staircase, not a distribution.
    """
    sums = [int(v) for v in column_sums]
    distinct = len(set(sums))
    return {"items": len(sums), "distinct_column_sums": distinct, "staircase": distinct < 0.5 * len(sums)}
