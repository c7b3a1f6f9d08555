"""Which items a round rewrites, and which it shows the rewriter as references.

BenchFill (paper, Section 4, Figure 4) retrieves by difficulty: the parents of a round are
the valid known items — originals and annotated children in the run's memory — closest to
the target z*, skipping items already used as parents for the same gap; as the memory fills
with children near the target, later rounds rewrite those. The reference list is the (at
most 16) valid known items nearest to z*, shown sorted by difficulty so the rewriter can
place a child between known points. The baseline draws its parents uniformly from the
original benchmark with no references (paper, Table 2).
"""

from __future__ import annotations

import random


def nearest(items, z_star: float, count: int, exclude=()) -> list:
    """The ``count`` items closest to ``z_star`` (ties by item ID), leaving out IDs in ``exclude``."""
    skip = set(exclude)
    ranked = sorted((i for i in items if i.item_id not in skip), key=lambda i: (abs(i.z - z_star), i.item_id))
    return ranked[:count]


def benchfill_parents(known, z_star: float, count: int, used: set) -> list:
    """Difficulty-aware parents: nearest unused items first, reusing used ones only if too few remain."""
    chosen = nearest(known, z_star, count, exclude=used)
    if len(chosen) < count:
        taken = {i.item_id for i in chosen}
        chosen += nearest(known, z_star, count - len(chosen), exclude=taken)
    return chosen


def reference_list(known, z_star: float, count: int) -> list:
    """Up to ``count`` nearest item–difficulty pairs, sorted by difficulty (easiest first)."""
    return sorted(nearest(known, z_star, count), key=lambda i: (i.z, i.item_id))


def uniform_parents(originals, count: int, rng: random.Random) -> list:
    """Baseline parents: ``count`` originals drawn uniformly (without replacement when possible)."""
    originals = list(originals)
    if count <= len(originals):
        return rng.sample(originals, count)
    return [rng.choice(originals) for _ in range(count)]
