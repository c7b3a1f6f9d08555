"""Resolve first: ask the panel for the extra trials that tell a real target gap from estimation noise.

A target gap is *resolved* when its two edge items lie at least two posterior sds of their difference apart
(:mod:`benchmeasure.core.resolution`); otherwise they may be in the wrong order and the gap noise (issue 30: in a
simulated world with known truth, the third widest fitted gap was such a gap, and BenchFill spent a third of its
calls there). With ``[search] unresolved = "resolve"`` a run does not guess: before any rewrite it asks each panel
model for the extra trials on the two edge items that :func:`~benchmeasure.core.resolution.trials_to_resolve`
says would resolve the gap if it is as wide as it looks (at most ``[search] resolve_max_trials`` per model and
item; a gap needing more is skipped without a call), recalibrates the two items and looks at the widest gaps
again, for up to ``[search] resolve_rounds`` rounds or until they are all resolved. A gap that is real stays and is
now resolved; a gap that was noise narrows or closes and the next widest gets its turn; a target that is still
unresolved after the last round is skipped, with a line that says so. The trials asked of an item that was asked
before are estimated from the matrix's K (its information per trial is then overestimated, so it may be asked
again in the next round).

**The recalibration** is BenchFill's own online calibration (:func:`benchmeasure.irt.anchored.calibrate_item`,
the estimator of every child and every certified keep): the panel's abilities held fixed, the N(0, 1) prior, and
each model's trials pooled — its cells of the response matrix (K per cell, holes allowed) plus the extra trials,
a sum of binomials with one p_j. The item's new difficulty replaces the fitted one in the seed set for the whole
run, and Table 2 is computed on that seed set: the benchmark the run fills is the one its data now describe. The
min–max scale is that seed set's (it moves only when a recalibrated item is the lowest or the highest); every
child is calibrated after this step, so all of a run's z share one scale (``summary.json → b_range``). With the
abilities held at their means the new sd leaves out their uncertainty, so the new separation is slightly
optimistic; the extra trials shrink the item's own noise far more than that.

Every extra batch is journaled (:class:`~.records.Resolution`, model calls under ``resolve<round>/<item>/<model>``),
so a killed run resumes without asking again and reaches the same targets.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import numpy as np

from benchmeasure.benchfill.gaps import SeedSet
from benchmeasure.irt.anchored import calibrate_item

log = logging.getLogger(__name__)


def requests(choice: list[dict], max_trials: int) -> tuple[dict, list[dict]]:
    """Extra trials per model to ask for each edge item of the unresolved targets in ``choice``
    (:meth:`~benchmeasure.benchfill.gaps.SeedSet.target_choice` rows), ``{item_id: trials}`` (an item at the edge
    of two targets gets the larger request); and the targets that cannot be resolved within ``max_trials``."""
    wanted: dict = {}
    beyond = []
    for row in choice:
        extra = row["extra_trials_per_model"]
        if row["resolved"]:
            continue
        if extra is None or extra > max_trials or row["lower_item"] is None or row["upper_item"] is None:
            beyond.append(row)
            continue
        for item in (row["lower_item"], row["upper_item"]):
            wanted[item] = max(wanted.get(item, 0), extra)
    return wanted, beyond


def recalibrated(benchmark: SeedSet, item_id: str, extra_counts: dict, extra_trials: int, matrix,
                 abilities: dict, guessing: float) -> tuple:
    """The item's (b_mean, b_sd) from its matrix cells and the extra trials pooled, the panel's ``abilities``
    fixed (models of the panel only: those are the abilities the run holds)."""
    models = sorted(abilities)
    column = matrix.items.index(item_id) if item_id in matrix.items else None
    rows = {m: j for j, m in enumerate(matrix.models)}
    counts, trials = [], []
    for m in models:
        j = rows.get(m)
        k = 0 if column is None or j is None else int(matrix.n_trials if matrix.trials is None
                                                          else matrix.trials[j, column])
        y = 0 if k == 0 else int(matrix.counts[j, column])
        counts.append(y + int(extra_counts.get(m, 0)))
        trials.append(k + extra_trials)
    top = max(trials)
    note = calibrate_item(np.asarray(counts), [abilities[m] for m in models], top, guessing,
                          (benchmark.b_min, benchmark.b_max), trials=np.asarray(trials))
    return note.b_mean, note.b_sd


def with_items(benchmark: SeedSet, updates: dict) -> SeedSet:
    """``benchmark`` with the difficulties of ``{item_id: (b_mean, b_sd)}`` replaced and every z on the min–max
    scale of the difficulties it now has (the scale moves only when a recalibrated item is the lowest or highest)."""
    b = {item.item_id: updates.get(item.item_id, (item.b_mean, item.b_sd)) for item in benchmark.items}
    low, high = min(v[0] for v in b.values()), max(v[0] for v in b.values())
    items = tuple(dataclasses.replace(item, b_mean=b[item.item_id][0], b_sd=b[item.item_id][1],
                                      z=(b[item.item_id][0] - low) / (high - low)) for item in benchmark.items)
    return dataclasses.replace(benchmark, items=items, b_min=low, b_max=high)


async def resolve_first(loop, k: int, n_trials: int, max_trials: int, rounds: int, read_matrix) -> tuple:
    """Up to ``rounds`` rounds: ask for the extra trials of every unresolved gap among the ``k`` widest (the paper's
    targets), recalibrate their edge items (each from all of its trials so far) and look again, until the ``k``
    widest are resolved or nothing more can be asked. Returns ``(seed set, choice, record)``: the recalibrated seed
    set, its targets (resolved first) and summary.json's ``resolution`` — per round the trials asked per item, per
    item its trials and difficulty before and after, per first-round widest gap what became of it.
    ``read_matrix()`` gives the response matrix (read only when something is asked)."""
    benchmark = current = loop.benchmark
    first = benchmark.target_choice(k, n_trials, widest=True)
    asked: dict = {}        # item -> its Resolution events, in round order
    record_rounds, matrix = [], None
    for round_no in range(1, rounds + 1):
        choice = current.target_choice(k, n_trials, widest=True)
        wanted, beyond = requests(choice, max_trials)
        for row in beyond:
            extra = row["extra_trials_per_model"]
            log.warning("target gap [%.4f, %.4f] is not resolved and %s: it is not resolved first", row["gap"].left,
                        row["gap"].right, "no practical number of trials would resolve it" if extra is None else
                        f"resolving it needs {extra} more trials per model, above resolve_max_trials = {max_trials}")
        if not wanted:
            break
        log.info("resolve round %d: %d of the %d widest gaps are not resolved; asking %s", round_no,
                 sum(not r["resolved"] for r in choice), len(choice),
                 ", ".join(f"{trials} more trials per model on item {item!r}"
                           for item, trials in sorted(wanted.items())))
        events = await asyncio.gather(*(loop.extra_trials(item, trials, round_no)
                                        for item, trials in sorted(wanted.items())))
        matrix = matrix or read_matrix()
        for event in events:
            asked.setdefault(event.item_id, []).append(event)
        current = with_items(benchmark, {item: _pooled(benchmark, item, mine, matrix, loop) for item, mine in
                                         asked.items()})
        record_rounds.append({"round": round_no, "asked": dict(sorted(wanted.items()))})
    before = {item.item_id: item for item in benchmark.items}
    now = {item.item_id: item for item in current.items}
    items = []
    for item, mine in sorted(asked.items()):
        old, new = before[item], now[item]
        items.append({"item_id": item, "extra_trials_per_model": sum(e.trials for e in mine), "b_before": old.b_mean,
                      "b_sd_before": old.b_sd, "b_after": new.b_mean, "b_sd_after": new.b_sd, "z_before": old.z,
                      "z_after": new.z})
        log.info("item %r from %d more trials per model: b %.3f ± %.3f -> %.3f ± %.3f", item,
                 items[-1]["extra_trials_per_model"], old.b_mean, old.b_sd, new.b_mean, new.b_sd)
    record = {"rounds": record_rounds, "items": items,
              "targets": _targets(first, current.target_choice(k, n_trials, widest=True))}
    return current, current.target_choice(k, n_trials), record


def _pooled(benchmark: SeedSet, item: str, events: list, matrix, loop) -> tuple:
    """(b_mean, b_sd) of one item from its matrix cells and every extra batch asked of it."""
    counts: dict = {}
    for event in events:
        for model, y in event.counts.items():
            counts[model] = counts.get(model, 0) + y
    return recalibrated(benchmark, item, counts, sum(e.trials for e in events), matrix, loop.abilities,
                        loop.config.benchmark.guessing)


def _targets(first: list[dict], again: list[dict]) -> list[dict]:
    """What became of each of the widest gaps before: still among the widest (and resolved or not) or not."""
    out = []
    for row in first:   # the same gap later: a widest gap that shares an edge item with it
        later = next((r for r in again if {r["lower_item"], r["upper_item"]} & {row["lower_item"], row["upper_item"]}
                      - {None}), None)
        out.append({"left": row["gap"].left, "right": row["gap"].right, "lower_item": row["lower_item"],
                    "upper_item": row["upper_item"], "separation_before": row["separation"],
                    "resolved_before": row["resolved"],
                    "left_after": None if later is None else later["gap"].left,
                    "right_after": None if later is None else later["gap"].right,
                    "separation_after": None if later is None else later["separation"],
                    "outcome": ("resolved" if later is not None and later["resolved"] else
                                "still unresolved" if later is not None else
                                "no longer among the widest gaps")})
    return out
