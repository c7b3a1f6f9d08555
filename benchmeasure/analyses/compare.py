"""Compare two difficulty files item by item (e.g. a fit against known true difficulties).

Used by the bundled simulated example to show how close the fitted difficulties, and the
DDM / Max Gap / Top-k Gap Sum computed from them, come to the truth. Difficulties are
compared after each file's own min–max normalization, the scale every metric uses, so
the 1PL's arbitrary location and scale do not count as error. Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from benchmeasure.base.errors import fail
from benchmeasure.core.difficulty_file import DifficultyColumn
from benchmeasure.core.metrics import Diagnosis, diagnose, normalize_min_max


def pearson(x: list, y: list) -> float:
    """Pearson correlation of two equal-length sequences."""
    n = len(x)
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def ranks(values: list) -> list:
    """Ranks 1..n with ties given their average rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            result[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(x: list, y: list) -> float:
    return pearson(ranks(x), ranks(y))


@dataclass(frozen=True)
class Comparison:
    """Agreement between an estimate and a reference, over their shared items."""

    items: int
    pearson: float
    spearman: float
    mean_abs_z_error: float
    max_abs_z_error: float
    estimate: Diagnosis
    reference: Diagnosis


def compare(estimate: DifficultyColumn, reference: DifficultyColumn, top_k: int = 5) -> Comparison:
    """Match items by ID and compare; every item must be in both files, once."""
    for column in (estimate, reference):
        seen = set()
        repeated = next((item for item in column.item_ids if item in seen or seen.add(item)), None)
        if repeated is not None:
            fail(f"{column.path}: item {repeated!r} appears more than once (items are matched by ID)")
    ref = dict(zip(reference.item_ids, reference.values))
    missing = [item for item in estimate.item_ids if item not in ref]
    if missing:
        fail(f"{reference.path}: item {missing[0]!r} of {estimate.path} is not there")
    if len(ref) != len(estimate.item_ids):
        extra = next(item for item in reference.item_ids if item not in set(estimate.item_ids))
        fail(f"{estimate.path}: item {extra!r} of {reference.path} is not there")
    x = list(estimate.values)
    y = [ref[item] for item in estimate.item_ids]
    zx, zy = normalize_min_max(x, estimate.path), normalize_min_max(y, reference.path)
    errors = [abs(a - b) for a, b in zip(zx, zy)]
    return Comparison(
        items=len(x), pearson=pearson(x, y), spearman=spearman(x, y),
        mean_abs_z_error=math.fsum(errors) / len(errors), max_abs_z_error=max(errors),
        estimate=diagnose(x, top_k), reference=diagnose(y, top_k),
    )
