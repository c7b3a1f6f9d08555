"""Difficulty Distribution Mismatch (DDM) and gap metrics of a benchmark's difficulty measure.

A benchmark with item difficulties b_1 … b_n induces the empirical measure
ν_B = (1/n) Σ δ_{z_i} on the normalized difficulty axis [0, 1] (paper, Section 2).
Definitions, following the paper's Table 1 and its repository README:

* Normalization (per benchmark, min–max): z_i = (b_i − min b) / (max b − min b).
* DDM: with z_(1) ≤ … ≤ z_(n) sorted, DDM = (1/n) Σ_i |z_(i) − (i − 0.5)/n|, the
  1-Wasserstein distance between ν_B and the same-size empirical uniform reference
  that puts mass 1/n at each (i − 0.5)/n. For two equal-size empirical measures W₁ is
  the mean absolute difference of their sorted atoms (quantile coupling).
* Gaps: the n + 1 consecutive differences of 0, z_(1), …, z_(n), 1 (the boundary
  intervals count, z_(0) := 0 and z_(n+1) := 1). Max Gap is the largest; the Top-k
  Gap Sum is the sum of the k largest.

Standard library only (Python 3.9+), so that ``scripts/diagnose_benchmark.py`` runs
without site-packages.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from benchmeasure.base.errors import fail

logger = logging.getLogger(__name__)
_warned_top_k: set = set()


@dataclass(frozen=True)
class Gap:
    """One interval of the difficulty axis with no item inside it.

    Attributes
    ----------
    left, right : float
        Endpoints on the normalized axis; ``right - left`` is the width.
    rank : int
        1 for the widest gap, 2 for the next, … (ties broken by position, left first).
    """

    left: float
    right: float
    rank: int

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def midpoint(self) -> float:
        """The BenchFill target z* = (z_L + z_R)/2 for this gap (paper, Section 4)."""
        return (self.left + self.right) / 2


def normalize_min_max(values: Sequence[float], where: str = "difficulties") -> list[float]:
    """Map difficulties to [0, 1] with the benchmark's own minimum and maximum.

    Raises :class:`~benchmeasure.base.errors.InputError` for fewer than 2 values, a value
    that is not finite, or all values equal (the scale is then undefined).
    """
    check_finite(values, where)
    if len(values) < 2:
        fail(f"{where}: need at least 2 items, got {len(values)}")
    low, high = min(values), max(values)
    if not high > low:
        fail(f"{where}: all {len(values)} difficulties equal {low!r}; min-max normalization is undefined")
    span = high - low
    if math.isfinite(span):
        return [(v - low) / span for v in values]
    # the range overflows a float (e.g. -1e308 … 1e308): the same map, computed on halves
    half_low, half_span = low / 2, high / 2 - low / 2
    return [min(1.0, max(0.0, (v / 2 - half_low) / half_span)) for v in values]


def check_finite(values: Sequence[float], where: str) -> None:
    for index, value in enumerate(values):
        if not math.isfinite(value):
            fail(f"{where}: value {value!r} at position {index + 1} is not a finite number")


def check_unit_interval(values: Sequence[float], where: str) -> None:
    """Reject values outside [0, 1] (for difficulties that are already normalized)."""
    check_finite(values, where)
    if len(values) < 2:
        fail(f"{where}: need at least 2 items, got {len(values)}")
    for index, value in enumerate(values):
        if not 0.0 <= value <= 1.0:
            fail(f"{where}: value {value!r} at position {index + 1} is outside [0, 1] (--normalized)")


def ddm(z: Sequence[float]) -> float:
    """Difficulty Distribution Mismatch: W₁ distance of ``z`` to the uniform grid (i − 0.5)/n.

    Parameters
    ----------
    z : sequence of float, length n ≥ 1
        Normalized difficulties in [0, 1], in any order.
    """
    n = len(z)
    return math.fsum(abs(value - (i + 0.5) / n) for i, value in enumerate(sorted(z))) / n


def gaps(z: Sequence[float]) -> list[float]:
    """The n + 1 widths between consecutive points of 0, z_(1), …, z_(n), 1, left to right."""
    points = [0.0, *sorted(z), 1.0]
    return [right - left for left, right in zip(points, points[1:])]


def largest_gaps(z: Sequence[float], k: int | None = None) -> list[Gap]:
    """The ``k`` widest gaps (all of them when ``k`` is None), widest first, with endpoints."""
    points = [0.0, *sorted(z), 1.0]
    order = sorted(range(len(points) - 1), key=lambda i: (-(points[i + 1] - points[i]), i))
    if k is not None:
        order = order[:k]
    return [Gap(points[i], points[i + 1], rank) for rank, i in enumerate(order, start=1)]


def max_gap(z: Sequence[float]) -> float:
    """Maximum Gap: the widest interval of [0, 1] holding no item, boundaries included."""
    return max(gaps(z))


def top_k_gap_sum(z: Sequence[float], k: int = 5) -> float:
    """Sum of the ``k`` widest gaps (all n + 1 gaps when k > n + 1)."""
    return math.fsum(sorted(gaps(z), reverse=True)[:k])


@dataclass(frozen=True)
class Diagnosis:
    """The diagnostics of one benchmark, as ``diagnose_benchmark.py`` reports them."""

    items: int
    normalization: str
    ddm: float
    max_gap: float
    top_k: int
    top_k_gap_sum: float
    largest_gaps: list[Gap]

    def as_dict(self) -> dict:
        """JSON-ready record; the Top-k key is named after k (``top5_gap_sum`` for k = 5)."""
        return {
            "items": self.items,
            "normalization": self.normalization,
            "ddm": self.ddm,
            "max_gap": self.max_gap,
            f"top{self.top_k}_gap_sum": self.top_k_gap_sum,
            "top_k": self.top_k,
            "largest_gaps": [
                {"rank": g.rank, "left": g.left, "right": g.right, "width": g.width, "midpoint": g.midpoint}
                for g in self.largest_gaps
            ],
        }


MIN_MAX = "per-benchmark min-max to [0, 1]"
AS_GIVEN = "none (values already on [0, 1])"


def diagnose(difficulties: Sequence[float], top_k: int = 5, normalized: bool = False,
             where: str = "difficulties") -> Diagnosis:
    """Normalize (unless ``normalized``) and compute DDM, Max Gap and the Top-k Gap Sum."""
    if top_k < 1:
        fail(f"--top-k must be at least 1, got {top_k}")
    if len(difficulties) < top_k and (where, top_k) not in _warned_top_k:
        _warned_top_k.add((where, top_k))
        logger.warning("%s: %d items leave only %d gaps, so the Top-%d Gap Sum adds every gap and is 1 by "
                       "construction; give a --top-k of at most %d", where, len(difficulties),
                       len(difficulties) + 1, top_k, len(difficulties))
    if normalized:
        check_unit_interval(difficulties, where)
        z = list(difficulties)
    else:
        z = normalize_min_max(difficulties, where)
    result = Diagnosis(
        items=len(z),
        normalization=AS_GIVEN if normalized else MIN_MAX,
        ddm=ddm(z),
        max_gap=max_gap(z),
        top_k=top_k,
        top_k_gap_sum=top_k_gap_sum(z, top_k),
        largest_gaps=largest_gaps(z, top_k),
    )
    for name in ("ddm", "max_gap", "top_k_gap_sum"):  # never report a NaN or infinity as a result
        if not math.isfinite(getattr(result, name)):
            fail(f"{where}: {name} came out as {getattr(result, name)} (normalized difficulties not finite); "
                 "no result is reported")
    return result


def plugin_values(b_mean: Sequence[float], top_k: int = 5, where: str = "difficulties") -> dict:
    """The paper's plug-in value of each metric, ``{"ddm", "max_gap", "top{k}_gap_sum"}``: :func:`diagnose` of the
    posterior means with tied items' draws pooled (``fit`` pools them, :mod:`benchmeasure.irt.ties`; posterior-metrics
    and the explorer with :func:`benchmeasure.analyses.plugin.pooled_moments`). Every command reports the plug-in
    through this function or :func:`diagnose` itself, so one fit gives one number everywhere."""
    d = diagnose([float(v) for v in b_mean], top_k=top_k, where=where)
    return {"ddm": d.ddm, "max_gap": d.max_gap, f"top{top_k}_gap_sum": d.top_k_gap_sum}
