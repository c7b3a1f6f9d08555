"""Aim at gaps that exist: order target gaps so that resolved ones come first.

A gap between two neighbouring items is *resolved* when its two edge items' difficulties are at
least :data:`benchmeasure.core.resolution.SEPARATION` (2) posterior sds of their difference apart
(b_hi − b_lo ≥ 2 √(σ_lo² + σ_hi²)); otherwise the two items may be in the wrong order and the
"gap" an artifact of estimation noise (docs/gap_noise.md). BenchFill and mass fill keep the
paper's order — widest first — among resolved gaps, then take unresolved ones, and log a
warning for every target that is not resolved. Without posterior sds (a calibration table with
no b_sd, or all zero) every gap counts as resolved and the paper's order is unchanged.
"""

from __future__ import annotations

import bisect
import logging
import math

from benchmeasure.core.resolution import SEPARATION

log = logging.getLogger(__name__)


def separations(z: list, sd: list, gaps: list) -> list:
    """Per gap (``metrics.Gap`` on the normalized axis) its width over the sd of its edges' difference.

    ``z`` and ``sd`` are aligned (sd in the same normalized units). None where the sds are all
    zero (nothing known) or the gap touches an end of the axis with no item there.
    """
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
    """``gaps`` reordered: resolved (or unknown) gaps first, then unresolved, then empty (width 0) ones,
    each group in its given order.

    Returns a list of ``(gap, separation)``.
    """
    seps = separations(z, sd, gaps)
    known = [(g, s) for g, s in zip(gaps, seps) if g.width > 0 and (s is None or s >= SEPARATION)]
    weak = [(g, s) for g, s in zip(gaps, seps) if g.width > 0 and s is not None and s < SEPARATION]
    empty = [(g, s) for g, s in zip(gaps, seps) if g.width <= 0]
    return known + weak + empty


def warn_unresolved(chosen: list) -> list:
    """Log a warning for each chosen ``(gap, separation)`` that is not resolved; returns those gaps."""
    weak = [(g, s) for g, s in chosen if s is not None and s < SEPARATION]
    for gap, sep in weak:
        log.warning("target gap [%.4f, %.4f] (width %.4f) is not resolved: its edge items are %.1f posterior sds "
                    "apart (resolved: >= %g); it may be estimation noise, not a gap", gap.left, gap.right,
                    gap.width, sep, SEPARATION)
    return [g for g, _ in weak]
