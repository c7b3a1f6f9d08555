"""Aim at gaps that exist: order target gaps so that resolved ones come first.

A gap between two neighbouring items is *resolved* when its two edge items' difficulties are at
least :data:`benchmeasure.core.resolution.SEPARATION` (2) posterior sds of their difference apart
(b_hi − b_lo ≥ 2 √(σ_lo² + σ_hi²)); otherwise the two items may be in the wrong order and the
"gap" an artifact of estimation noise (docs/gap_noise.md). BenchFill and mass fill keep the
paper's order — widest first — among resolved gaps; a BenchFill run then skips each unresolved
target (``[search] unresolved = "skip"``, the default: :func:`skip_unresolved`) or aims at it after the
resolved ones (``"fill"``, and mass fill), and either way logs a line for it with the extra trials per model on
its edge items that would resolve it (what to ask the panel next). The order itself is
:func:`benchmeasure.core.resolution.resolved_first`, shared with ``scope --gap``. Without posterior
sds (a calibration table with no b_sd, or all zero) every gap counts as resolved and the paper's order is unchanged.
"""

from __future__ import annotations

import logging

from benchmeasure.core.resolution import SEPARATION

log = logging.getLogger(__name__)


def warn_unresolved(chosen: list, extra_trials: list | None = None) -> list:
    """Log a warning for each chosen ``(gap, separation)`` that is not resolved; returns those gaps.

    ``extra_trials`` (aligned with ``chosen``) adds what to ask the panel next: trials per model on the
    gap's two edge items after which it would be resolved
    (:func:`benchmeasure.core.resolution.trials_to_resolve`).
    """
    extra_trials = extra_trials or [None] * len(chosen)
    weak = [(g, s, e) for (g, s), e in zip(chosen, extra_trials) if s is not None and s < SEPARATION]
    for gap, sep, extra in weak:
        ask = ("" if extra is None else
               f"; about {extra} more trials per model on its two edge items would resolve it if it is real")
        log.warning("target gap [%.4f, %.4f] (width %.4f) is not resolved: its edge items are %.1f posterior sds "
                    "apart (resolved: >= %g); it may be estimation noise, not a gap%s", gap.left, gap.right,
                    gap.width, sep, SEPARATION, ask)
    return [g for g, _, _ in weak]


def skip_unresolved(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """Split :meth:`~benchmeasure.benchfill.gaps.SeedSet.target_choice` rows into (kept, skipped): ``[search]
    unresolved = "skip"`` spends no call on a target whose edge items are not resolved, and logs one line for each
    with what would resolve it."""
    kept = [row for row in rows if row["resolved"]]
    skipped = [row for row in rows if not row["resolved"]]
    for row in skipped:
        gap, extra = row["gap"], row["extra_trials_per_model"]
        ask = ("" if extra is None else
               f"; about {extra} more trials per model on items {row['lower_item']!r} and {row['upper_item']!r} "
               "would resolve it if it is real")
        log.warning("skipping target gap [%.4f, %.4f] (width %.4f): its edge items are %.1f posterior sds apart "
                    "(resolved: >= %g), so it may be estimation noise; no call is spent on it%s "
                    '([search] unresolved = "fill" aims at it anyway)', gap.left, gap.right, gap.width,
                    row["separation"], SEPARATION, ask)
    return kept, skipped
