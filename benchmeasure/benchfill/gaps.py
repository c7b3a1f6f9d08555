"""The benchmark BenchFill starts from: its items, normalized difficulties and target gaps.

For a calibration table (``item_id,b_mean,b_sd``) the difficulties are put on the
benchmark's own min–max scale (paper, Section 2) and the ``k`` widest adjacent gaps are the
targets; a gap [left, right] has target z* = (left + right)/2, its midpoint (paper, Section 4). The gap metric is
:func:`benchmeasure.core.metrics.largest_gaps`, the same one ``diagnose_benchmark.py`` reports.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from benchmeasure.base.csv_table import finite_float, read_table
from benchmeasure.base.errors import fail
from benchmeasure.base.files import read_jsonl_objects
from benchmeasure.core.difficulty_file import read_item_difficulties
from benchmeasure.core.metrics import largest_gaps, normalize_min_max


@dataclass(frozen=True)
class Item:
    """One item BenchFill can use as a parent or reference.

    Attributes
    ----------
    item_id : str
    question, answer : str
    z : float
        Normalized difficulty (original min–max scale).
    b_mean, b_sd : float
    origin : str
        ``"original"`` or the mode that generated it (``"benchfill"``, ``"baseline"``).
    """

    item_id: str
    question: str
    answer: str
    z: float
    b_mean: float
    b_sd: float
    origin: str = "original"


@dataclass(frozen=True)
class SeedSet:
    """Original items with their calibration, and the scale that normalizes new items."""

    name: str
    items: tuple
    b_min: float
    b_max: float

    def z_values(self) -> list:
        return [item.z for item in self.items]

    def sd_values(self) -> list:
        """Posterior sds on the normalized axis (b_sd / (b_max − b_min)), aligned with :meth:`z_values`."""
        return [item.b_sd / (self.b_max - self.b_min) for item in self.items]

    def targets(self, k: int, n_trials: int | None = None) -> list:
        """The ``k`` target gaps (:class:`benchmeasure.core.metrics.Gap`); target z* = midpoint.

        The paper's choice is the ``k`` widest; here resolved gaps come first (widest first among
        them), then unresolved ones (:mod:`.gap_choice`), and each unresolved target is logged.
        """
        from benchmeasure.benchfill.gap_choice import warn_unresolved

        rows = self.target_choice(k, n_trials)
        warn_unresolved([(row["gap"], row["separation"]) for row in rows],
                        [row["extra_trials_per_model"] for row in rows])
        return [row["gap"] for row in rows]

    def target_choice(self, k: int, n_trials: int | None = None, widest: bool = False) -> list[dict]:
        """:meth:`targets` with why: per target ``gap``, ``separation`` (None: no sds), ``resolved``, the edge
        items ``lower_item``/``upper_item`` and, given the calibration's trials per cell ``n_trials``,
        ``extra_trials_per_model`` on those two items that would resolve it (None: not known or not practical).
        ``widest`` gives the paper's choice instead, the ``k`` widest gaps whether resolved or not (what
        :mod:`.resolve` asks about). Logs nothing: the caller says what happens to an unresolved target
        (:mod:`.gap_choice`)."""
        from benchmeasure.core.resolution import SEPARATION, resolved_first, separations, trials_to_resolve

        z = self.z_values()
        if widest:
            top = [g for g in largest_gaps(z, k) if g.width > 0]
            chosen = list(zip(top, separations(z, self.sd_values(), top)))
        else:
            chosen = resolved_first(largest_gaps(z), z, self.sd_values())[:k]
        order = sorted(range(len(z)), key=lambda i: (z[i], i))
        rows = []
        for gap, sep in chosen:
            left = [i for i in order if z[i] == gap.left]
            right = [i for i in order if z[i] == gap.right]
            lower = self.items[left[-1]] if left else None
            upper = self.items[right[0]] if right else None
            extra = None
            if n_trials and sep is not None and lower is not None and upper is not None:
                extra = trials_to_resolve(upper.b_mean - lower.b_mean, lower.b_sd, upper.b_sd, n_trials)
            rows.append({"gap": gap, "separation": sep, "resolved": sep is None or sep >= SEPARATION,
                         "lower_item": lower and lower.item_id, "upper_item": upper and upper.item_id,
                         "extra_trials_per_model": extra})
        return rows

    def normalize(self, b: float) -> float:
        return (b - self.b_min) / (self.b_max - self.b_min)


def read_calibration(path: str | os.PathLike) -> dict:
    """``{item_id: (b_mean, b_sd)}`` from a calibration table: a difficulty file (``item_id`` or ``item``
    column, distinct IDs, ``b_mean``; :func:`~benchmeasure.core.difficulty_file.read_item_difficulties`)
    whose ``b_sd`` column, when present, gives each item's posterior sd (0 without it)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        fail(f"{path}: calibration table not found")
    ids, b_mean = read_item_difficulties(path, "b_mean")
    table = read_table(path)
    b_sd = ([finite_float(cell, f"{table.where(r, 'b_sd')}, item {ids[r]!r}: b_sd")
             for r, cell in enumerate(table.column("b_sd"))] if "b_sd" in table.header else [0.0] * len(ids))
    return {item: (b, sd) for item, b, sd in zip(ids, b_mean, b_sd)}


def read_pool(path: str | os.PathLike, question_field: str, answer_field: str) -> dict:
    """``{item_id: (question, answer)}`` from a benchmark's ``test.jsonl``."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        fail(f"{path}: item pool not found")
    pool = {}
    for line, record in read_jsonl_objects(path, ("item_id", question_field, answer_field)):
        item = str(record["item_id"])
        if item in pool:
            fail(f"{path} line {line}: item_id {item!r} appears twice")
        answer = record[answer_field]
        pool[item] = (str(record[question_field]), answer if isinstance(answer, str) else json.dumps(answer))
    return pool


def load_seed_set(name: str, calibration_path, pool_path, question_field: str = "question",
                   answer_field: str = "answer") -> SeedSet:
    """Join calibration and pool on item_id and normalize; every calibrated item must be in the pool."""
    calibration = read_calibration(calibration_path)
    pool = read_pool(pool_path, question_field, answer_field)
    absent = [item for item in calibration if item not in pool]
    if absent:
        fail(f"{pool_path}: calibrated item {absent[0]!r} is not in the pool ({len(absent)} missing): the "
             f"calibration's item IDs must be the pool's item_id values (its record indices in the released "
             f"layout); a fit's difficulty.csv names items by its count matrix's columns, so fit a matrix whose "
             f"columns are the pool's item_ids")
    ids = list(calibration)
    b = [calibration[i][0] for i in ids]
    z = normalize_min_max(b, where=str(calibration_path))
    items = tuple(Item(i, pool[i][0], pool[i][1], zi, calibration[i][0], calibration[i][1]) for i, zi in zip(ids, z))
    return SeedSet(name, items, min(b), max(b))
