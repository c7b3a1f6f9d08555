"""Mass fill: BenchFill applied gap after gap until a target Max Gap or a budget is reached.

The paper's filled benchmarks (README, ``data/filled_benchs/``) come from iterative gap filling:
the same loop as a BenchFill run (paper, Section 4, Figure 4) — the :class:`~.loop.Loop` that
:func:`.runner.open_loop` wires to the benchmark, panel, client and journal — is pointed at one
gap at a time. Each *step*:

1. puts the original items and the items inserted so far on the original benchmark's min–max
   scale (an inserted item's z is its online calibration, which uses the original min and
   max, :mod:`.calibration`), and takes the widest adjacent gap [left, right] not yet tried;
2. runs BenchFill on it with target z* = (left + right)/2 (rounds, retrieval, reference list,
   verifier, early stop and final selection exactly as in a run; the step number plays the
   gap's rank, so child IDs are ``benchfill-g<step>-r<round>-p<parent>-c<child>``);
3. inserts the gap's final item if it lies strictly inside (left, right) — then the gap really
   shrinks. Otherwise the step *missed*: nothing is inserted and that gap is not targeted again
   (one full BenchFill attempt per gap), so the next step moves to the next widest gap.

Stop rules, checked before each step: Max Gap ≤ ``target_max_gap``; ``max_items`` inserted;
``max_rounds`` rounds spent in all; ``max_calls`` model calls spent (journaled keyed calls:
rewrites, independent solves, one per panel model's rollouts of an item; retries not counted);
no untried gap left. A step's rewrite budget is capped so that it cannot overrun the round or
call budget (a rewrite costs at most 2 + M calls with M panel models), so the totals never
exceed the limits. At least one of the three budgets must be set.

Crash safety is the run's: each step's choice (gap, budget) and its outcome are journaled in
``events.jsonl`` beside the loop's own events, and a resumed ``run`` replays them — recorded
steps, rounds and calls are not repeated. ``run.lock`` keeps a second run out.

Outputs (atomic, in the run folder): ``filled_benchmark.json`` — a JSON array of
``{id, question, answer}``: the originals first in item_id order as ``<BENCH>-origin-NNN``
(question and answer exactly as in the pool), then the inserted items in insertion order as
``<BENCH>-fill-NNN`` from 001; ``mass_fill_records.csv`` — one row per inserted item, the
columns of ``new_item_records.csv`` plus ``fill_id`` and the Max Gap after it (``gap`` is the
step); ``mass_fill_summary.json`` — Max Gap, Top-5 Gap Sum and DDM (paper, Section 2) before and
after, items added, steps, rounds and calls spent, stop reason, limits, settings, input SHA-256s,
package versions.
"""

from __future__ import annotations

import asyncio
import csv
import datetime
import json
import logging
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.base.files import (
    all_or_nothing,
    atomic_write,
    command_line,
    package_versions,
    read_jsonl_objects,
    write_json,
)
from benchmeasure.base.resources import example_path, missing_input_hint
from benchmeasure.benchfill.config import load_config
from benchmeasure.benchfill.eventlog import lock_holder, run_lock, select
from benchmeasure.benchfill.gaps import load_seed_set
from benchmeasure.benchfill.records import RECORD_COLUMNS, Annotation, Call, GapDone, ItemRecord, MassResult, MassStep
from benchmeasure.benchfill.run_folder import MASS_MARKER, RunFolder
from benchmeasure.benchfill.runner import init_run, open_loop
from benchmeasure.benchfill.strategies.difficulty_aware import NAME as BENCHFILL  # loop.BENCHFILL
from benchmeasure.core.metrics import Gap, ddm, largest_gaps, max_gap, top_k_gap_sum

FILLED = "filled_benchmark.json"
RECORDS = "mass_fill_records.csv"
SUMMARY = "mass_fill_summary.json"
MASS_COLUMNS = ["fill_id", *RECORD_COLUMNS, "max_gap_after"]
TOP_K = 5

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """When mass fill stops (any rule that is set and met stops it).

    Attributes
    ----------
    target_max_gap : float or None
        Stop once the Max Gap of the filled benchmark is at most this (normalized scale).
    max_items, max_calls, max_rounds : int or None
        Budgets: items inserted, model calls, BenchFill rounds (all steps together).
    """

    target_max_gap: float | None = None
    max_items: int | None = None
    max_calls: int | None = None
    max_rounds: int | None = None

    def check(self, where: str) -> Limits:
        if self.target_max_gap is not None and not 0.0 < self.target_max_gap < 1.0:
            fail(f"{where}: target Max Gap must be in (0, 1), got {self.target_max_gap}")
        for name in ("max_items", "max_calls", "max_rounds"):
            value = getattr(self, name)
            if value is not None and value < 1:
                fail(f"{where}: {name.replace('_', '-')} must be >= 1, got {value}")
        if self.max_items is None and self.max_calls is None and self.max_rounds is None:
            fail(f"{where}: set a budget: --max-items, --max-calls or --max-rounds (a target Max Gap alone "
                 f"may never be reached)")
        return self

    def merged(self, overrides: dict) -> Limits:
        """These limits with the non-None ``overrides`` applied."""
        return Limits(**{**asdict(self), **{k: v for k, v in overrides.items() if v is not None}})


def read_limits(folder: Path) -> Limits:
    path = folder / MASS_MARKER
    if not path.is_file():
        fail(f"{folder}: not a mass-fill folder (no {MASS_MARKER}; create one with 'benchmeasure mass-fill init')")
    try:
        limits = Limits(**json.loads(path.read_text(encoding="utf-8"))["limits"])
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
        fail(f"{path}: damaged ({' '.join(str(exc).split())})")
    for name, value in asdict(limits).items():
        kind = float if name == "target_max_gap" else int
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float) if kind is float
                                                                               else int)):
            fail(f"{path}: damaged ({name} is {value!r})")
    return limits


def limits_record(limits: Limits) -> dict:
    """The mass-fill marker's content (``mass_fill.json``)."""
    return {"limits": asdict(limits)}


def write_limits(folder: Path, limits: Limits) -> None:
    write_json(folder / MASS_MARKER, limits_record(limits), sort_keys=True)


# -- ids of the filled benchmark -------------------------------------------------------------------
def origin_order(benchmark) -> list:
    """``[(item, number)]`` in item_id order; item IDs must be integers (the released layout's 0 … N−1)."""
    numbered = []
    for item in benchmark.items:
        try:
            number = int(item.item_id)
        except ValueError:
            fail(f"{benchmark.name}: item_id {item.item_id!r} is not an integer; the filled benchmark's "
                 f"<BENCH>-origin-NNN ids need integer item_ids")
        if number < 0:
            fail(f"{benchmark.name}: item_id {item.item_id!r} is negative")
        numbered.append((item, number))
    numbers = [n for _, n in numbered]
    if len(set(numbers)) != len(numbers):
        fail(f"{benchmark.name}: two item_ids denote the same integer (e.g. '7' and '07')")
    return sorted(numbered, key=lambda pair: pair[1])


def prefix(benchmark_name: str) -> str:
    return benchmark_name.upper()


def fill_id(benchmark_name: str, index: int) -> str:
    return f"{prefix(benchmark_name)}-fill-{index:03d}"


# -- state, from the journal -----------------------------------------------------------------------
@dataclass(frozen=True)
class State:
    """Where mass fill stands, recovered from the journal's events."""

    inserted: tuple  # MassResult events of accepted steps, in step order
    tried: frozenset  # (left, right) of every gap a finished step targeted and missed
    steps: int  # finished steps
    rounds: int
    calls: int

    @classmethod
    def from_events(cls, events: list) -> State:
        results = sorted(select(events, MassResult), key=lambda e: e.step)
        steps = {e.step for e in select(events, MassStep)}
        rounds = sum(e.rounds for e in select(events, GapDone, mode=BENCHFILL) if e.gap in steps)
        return cls(tuple(e for e in results if e.accepted),
                   frozenset((e.left, e.right) for e in results if not e.accepted),
                   len(results), rounds, len(select(events, Call)))

    def z(self, original_z: list) -> list:
        return list(original_z) + [e.z for e in self.inserted]


def next_step(z: list, state: State, limits: Limits, search, calls_per_rewrite: int, sd: list | None = None) -> tuple:
    """The next gap to fill and its rewrite budget, or why mass fill stops.

    Returns
    -------
    (Gap or None, int, str)
        The widest gap not yet tried (``metrics.largest_gaps``), the step's rewrite budget, and
        ``""``; or ``(None, 0, reason)`` when a stop rule holds.
    """
    if limits.target_max_gap is not None and max_gap(z) <= limits.target_max_gap:
        return None, 0, f"target Max Gap {limits.target_max_gap} reached"
    if limits.max_items is not None and len(state.inserted) >= limits.max_items:
        return None, 0, f"{limits.max_items} items inserted (--max-items)"
    floor = limits.target_max_gap or 0.0
    open_gaps = [g for g in largest_gaps(z) if (g.left, g.right) not in state.tried and g.width > floor]
    if sd is not None:  # resolved gaps first (gap_choice); inserted items take the originals' median sd
        from benchmeasure.benchfill.gap_choice import warn_unresolved
        from benchmeasure.core.resolution import resolved_first

        chosen = resolved_first(open_gaps, z, list(sd) + [statistics.median(sd)] * (len(z) - len(sd)))[:1]
        warn_unresolved(chosen)
        open_gaps = [g for g, _ in chosen]
    gap = open_gaps[0] if open_gaps else None
    if gap is None:
        return None, 0, "no untried gap wider than the target is left"
    per_round = search.parents * search.children
    budget = search.rounds * per_round
    if limits.max_rounds is not None:
        budget = min(budget, (limits.max_rounds - state.rounds) * per_round)
        if budget < search.children:
            return None, 0, f"{limits.max_rounds} rounds spent (--max-rounds)"
    if limits.max_calls is not None:
        affordable = (limits.max_calls - state.calls) // calls_per_rewrite
        budget = min(budget, affordable // search.children * search.children)
        if budget < search.children:
            return None, 0, (f"call budget spent: {state.calls} of {limits.max_calls} calls used, one parent's "
                             f"{search.children} rewrites may need {search.children * calls_per_rewrite}")
    return gap, budget, ""


def step_outcome(step: MassStep, done: GapDone, children: dict) -> MassResult:
    """The journal's :class:`MassResult` of a step from its :class:`GapDone`: insert or miss."""
    child = children.get(done.final) if done.final else None
    if child is None:
        misfit = len(done.misfits or [])
        accepted, reason = False, "no valid child" + (f" that fits ({misfit} misfit the panel's abilities)"
                                                      if misfit else "")
    elif step.left < child.z < step.right:
        accepted, reason = True, "inside the gap"
    else:
        accepted, reason = False, "final item outside the gap"
    return MassResult(step.step, step.left, step.right, step.target, None if child is None else child.item_id,
                      None if child is None else child.z, done.deviation, accepted, reason, done.rounds, done.rewrites)


async def fill_many(loop, benchmark, limits: Limits) -> str:
    """Run steps until a stop rule holds; returns the stop reason. Replays recorded steps first."""
    journal, search = loop.journal, loop.search
    calls_per_rewrite = 2 + len(loop.abilities)  # rewrite, independent solve, one rollout call per model
    original_z = benchmark.z_values()
    step_no = 0
    while True:
        step_no += 1
        step = journal.find(MassStep, step=step_no)
        if step is None:
            state = State.from_events(journal.events)
            z = state.z(original_z)
            gap, budget, reason = next_step(z, state, limits, search, calls_per_rewrite, benchmark.sd_values())
            if gap is None:
                log.info("stop: %s", reason)
                return reason
            step = journal.append(MassStep(step_no, gap.left, gap.right, gap.midpoint, gap.width, budget, max_gap(z)))
            log.info("step %d: gap [%.4f, %.4f] (width %.4f), target %.4f, up to %d rewrites", step_no, gap.left,
                     gap.right, gap.width, gap.midpoint, budget)
        if journal.find(MassResult, step=step_no) is not None:
            continue
        done = await loop.fill(BENCHFILL, Gap(step.left, step.right, step_no), step.budget, certify=False)
        result = journal.append(step_outcome(step, done, {c.item_id: c for c in loop.children(BENCHFILL, step_no)}))
        if result.accepted:
            log.info("step %d: inserted %s at z=%.4f (deviation %.4f)", step_no, result.item_id, result.z,
                     result.deviation)
        else:
            log.info("step %d: missed (%s); this gap is not targeted again", step_no, result.reason)


# -- outputs ---------------------------------------------------------------------------------------
def _raw_pool(path: Path) -> dict:
    """The pool's records as written (answers keep their JSON type), by item_id."""
    return {str(record["item_id"]): record for _, record in read_jsonl_objects(path, ("item_id",))}


def diagnostics(z: list) -> dict:
    return {"items": len(z), "max_gap": max_gap(z), f"top{TOP_K}_gap_sum": top_k_gap_sum(z, TOP_K), "ddm": ddm(z)}


def write_outputs(run: RunFolder, benchmark, loop, limits: Limits, reason: str, usage: dict) -> dict:
    config = run.config
    bench_cfg = config.benchmark
    events = loop.journal.events
    state = State.from_events(events)
    pool = _raw_pool(config.path(bench_cfg.pool))
    name = bench_cfg.name
    filled = [{"id": f"{prefix(name)}-origin-{number:03d}",
               "question": pool[item.item_id][bench_cfg.question_field],
               "answer": pool[item.item_id][bench_cfg.answer_field]} for item, number in origin_order(benchmark)]
    children = {c.item_id: c for c in loop.children(BENCHFILL)}
    original_z = benchmark.z_values()
    records, z_now = [], list(original_z)
    for index, result in enumerate(state.inserted, start=1):
        child = children[result.item_id]
        z_now.append(child.z)
        filled.append({"id": fill_id(name, index), "question": child.question, "answer": child.answer})
        item = ItemRecord.of(name, result.step, result.left, result.right, result.target, child,
                             loop.lineage(child.item_id))
        records.append({"fill_id": fill_id(name, index), **item.to_dict(), "max_gap_after": max_gap(z_now)})
    calls = select(events, Call)
    steps = [{k: v for k, v in e.to_dict().items() if k not in ("type", "time")} for e in select(events, MassResult)]
    for entry in steps:
        entry["fill_id"] = next((r["fill_id"] for r in records if r["gap"] == entry["step"]), None)
    summary = {
        "benchmark": name, "before": diagnostics(original_z), "after": diagnostics(z_now),
        "items_added": len(records), "steps": steps, "stop_reason": reason, "rounds": state.rounds,
        "calls": {"recorded": len(calls), "prompt_tokens": sum(c.result.get("prompt_tokens", 0) for c in calls),
                  "completion_tokens": sum(c.result.get("completion_tokens", 0) for c in calls),
                  "this_session": usage},
        "limits": asdict(limits), "settings": config.as_dict(), "inputs": run.record["inputs"],
        "outputs": {"filled_benchmark": FILLED, "records": RECORDS},
        "versions": package_versions(["numpy", "scipy", "openai"]), "command": command_line(),
        "written": datetime.datetime.now().isoformat(timespec="seconds")}
    write_json(run.path / FILLED, filled)
    with atomic_write(run.path / RECORDS) as handle:
        writer = csv.DictWriter(handle, MASS_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
    write_json(run.path / SUMMARY, summary, sort_keys=True)
    return summary


def format_summary(summary: dict) -> str:
    before, after = summary["before"], summary["after"]
    key = f"top{TOP_K}_gap_sum"
    return "\n".join([
        f"mass fill ({summary['benchmark']}): {summary['items_added']} items added in {len(summary['steps'])} steps, "
        f"{summary['rounds']} rounds, {summary['calls']['recorded']} calls; stop: {summary['stop_reason']}",
        f"{'':<8} {'items':>6} {'Max Gap':>9} {'Top-5 Sum':>10} {'DDM':>8}",
        *(f"{label:<8} {d['items']:>6} {d['max_gap']:>9.4f} {d[key]:>10.4f} {d['ddm']:>8.4f}"
          for label, d in (("before", before), ("after", after)))])


# -- commands --------------------------------------------------------------------------------------
def init_mass(config_path, results_root, name: str | None, limits: Limits) -> Path:
    """Check the limits and the benchmark's IDs, then create the run folder (``init_run``) and mark it."""
    limits.check("mass fill")
    config_path = example_path(config_path, "config")  # a path, or a shipped config by name (aime24)
    config = load_config(config_path)
    bench_cfg = config.benchmark
    for label in ("calibration", "pool"):
        if not config.path(getattr(bench_cfg, label)).is_file():
            fail(f"{config_path}: [benchmark] {label} file {config.path(getattr(bench_cfg, label))} not found "
                 f"({missing_input_hint(getattr(bench_cfg, label))})")
    origin_order(load_seed_set(bench_cfg.name, config.path(bench_cfg.calibration), config.path(bench_cfg.pool),
                                bench_cfg.question_field, bench_cfg.answer_field))
    name = name or datetime.datetime.now().strftime("mass-%Y%m%d-%H%M%S")
    return init_run(config_path, results_root, name, extra={MASS_MARKER: limits_record(limits)})


async def _mass(run: RunFolder, limits: Limits) -> tuple:
    async with open_loop(run) as (benchmark, loop, client):
        origin_order(benchmark)
        before = diagnostics(benchmark.z_values())
        log.info("%s: %d items, Max Gap %.4f; limits %s", run.config.benchmark.name, before["items"],
                 before["max_gap"], ", ".join(f"{k}={v}" for k, v in asdict(limits).items() if v is not None))
        reason = await fill_many(loop, benchmark, limits)
        return benchmark, loop, limits, reason, client.usage   # written after the event loop, all or nothing


def run_mass(folder, overrides: dict | None = None) -> dict:
    """Start or resume mass fill in ``folder``; ``overrides`` replace stored limits (and are stored)."""
    run = RunFolder.open(folder)
    limits = read_limits(run.path)
    with run_lock(run.path):
        run.check_unchanged()
        run.events()  # a damaged journal is one error line before any model call
        changed = limits.merged(overrides or {}).check(str(folder))
        if changed != limits:
            write_limits(run.path, changed)
        started = time.monotonic()
        pieces = asyncio.run(_mass(run, changed))
        with all_or_nothing():
            summary = write_outputs(run, *pieces)
        log.info("%s", format_summary(summary))
        log.info("done in %.1f s; outputs in %s", time.monotonic() - started, run.path)
    return summary


def status_mass(folder) -> str:
    """Read-only progress: limits, steps with their gap and outcome, current Max Gap, calls."""
    run = RunFolder.open(folder)
    folder, config = run.path, run.config
    limits = read_limits(folder)
    bench_cfg = config.benchmark
    benchmark = load_seed_set(bench_cfg.name, config.path(bench_cfg.calibration), config.path(bench_cfg.pool),
                               bench_cfg.question_field, bench_cfg.answer_field)
    events = run.events()
    state = State.from_events(events)
    holder = lock_holder(folder)
    z = state.z(benchmark.z_values())
    lines = [f"mass fill {folder}", f"benchmark {bench_cfg.name}; " + (f"running (pid {holder})" if holder
                                                                      else "not running"),
             "limits " + ", ".join(f"{k}={v}" for k, v in asdict(limits).items() if v is not None)]
    results = {e.step: e for e in select(events, MassResult)}
    annotations = select(events, Annotation, mode=BENCHFILL)
    for step in select(events, MassStep):
        head = (f"step {step.step}: gap [{step.left:.4f}, {step.right:.4f}] target {step.target:.4f}, "
                f"budget {step.budget}")
        result = results.get(step.step)
        if result is None:
            mine = [a for a in annotations if a.gap == step.step]
            lines.append(f"{head}: in progress, {len(mine)} children ({sum(a.valid for a in mine)} valid)")
        elif result.accepted:
            lines.append(f"{head}: inserted {result.item_id} z={result.z:.4f} deviation "
                         f"{result.deviation:.4f}, rounds {result.rounds}")
        else:
            lines.append(f"{head}: missed ({result.reason}), rounds {result.rounds}")
    lines.append(f"items inserted {len(state.inserted)}, Max Gap {max_gap(z):.4f} "
                 f"(was {max_gap(benchmark.z_values()):.4f}), rounds {state.rounds}, calls {state.calls}")
    summary = folder / SUMMARY
    if summary.is_file():
        try:
            lines.append(format_summary(json.loads(summary.read_text(encoding="utf-8"))))
        except (ValueError, KeyError, TypeError):
            fail(f"{summary}: damaged (rerun 'run' to write it again)")
    return "\n".join(lines)
