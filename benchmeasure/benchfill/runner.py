"""``init`` / ``run`` / ``status`` of a BenchFill run folder (driven by ``run_experiment.sh``).

A run folder ``<results>/<benchmark>/<run>/`` (:class:`~.run_folder.RunFolder`) holds:

* ``config.json`` — the resolved settings, the input files' and the panel's SHA-256 and package
  versions (``init``); ``run`` refuses to resume once any of those files changed;
* ``events.jsonl`` — the journal of plans, model calls, annotations and finished gaps (``run``);
* ``run.lock`` — held while a ``run`` is active;
* ``summary.json``, ``table2.txt``, ``new_item_records.csv``, ``baseline_item_records.csv`` —
  written atomically when every gap is done.

``status`` only reads. Progress goes to the ``benchmeasure.benchfill`` loggers; the command line
shows it (:mod:`benchmeasure.commands.benchfill`).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import dataclasses
import datetime
import json
import logging
import time
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.base.extras import missing_packages
from benchmeasure.base.files import all_or_nothing, atomic_write, package_versions, sha256_file, write_json
from benchmeasure.base.resources import example_path, missing_input_hint
from benchmeasure.benchfill.abilities import fit_abilities, read_abilities
from benchmeasure.benchfill.config import check_name, load_config, results_root
from benchmeasure.benchfill.eventlog import EventLog, lock_holder, run_lock
from benchmeasure.benchfill.gap_choice import skip_unresolved, warn_unresolved
from benchmeasure.benchfill.gaps import load_seed_set
from benchmeasure.benchfill.prompts import Prompts, prompt_folder
from benchmeasure.benchfill.records import (
    RECORD_COLUMNS,
    Annotation,
    Call,
    GapDone,
    ItemRecord,
    Keep,
    Plan,
    RaceBatch,
    Reannotation,
    Resolution,
)
from benchmeasure.benchfill.run_folder import CONFIG, MASS_MARKER, RunFolder, write_latest
from benchmeasure.benchfill.strategies import STRATEGIES
from benchmeasure.benchfill.summary import (
    format_keeps,
    format_misfits,
    format_table,
    independent_deviation,
    keep_rows,
    misfit_rows,
    table2,
)
from benchmeasure.benchfill.validity_check import ValidityCheck
from benchmeasure.verifier.llm_client import LLMClient
from benchmeasure.verifier.panel import load_panel
from benchmeasure.verifier.panel_verifier import PanelVerifier
from benchmeasure.verifier.rollouts import DirectRollouts

__all__ = ["CONFIG", "MASS_MARKER", "RECORD_COLUMNS", "init_run", "open_loop", "results_root", "run", "status"]

log = logging.getLogger(__name__)


def init_run(config_path, results_root, run_name: str | None = None, extra: dict | None = None) -> Path:
    """Create a run folder with the resolved config; refuses an existing folder or a name outside ``results_root``.

    ``extra`` (file name → JSON object) is written into the folder too, before it becomes the benchmark's
    LATEST run (mass fill's marker); the folder appears with all of its files or not at all."""
    config_path = example_path(config_path, "config")  # a path, or a shipped config by name (aime24)
    config = load_config(config_path)
    default = datetime.datetime.now().strftime("run-%Y%m%d-%H%M%S")
    name = default if run_name is None else check_name(run_name, "run name")
    results_root = Path(results_root).absolute()
    folder = results_root / config.benchmark.name / name
    if folder.exists():
        fail(f"{folder}: run folder already exists (choose another --name or run it)")
    inputs = {}
    labels = ("calibration", "pool", "matrix") + (("abilities",) if config.abilities else ())
    for label in labels:
        value = getattr(config, label) if label == "abilities" else getattr(config.benchmark, label)
        path = config.path(value)
        if not path.is_file():
            where = "abilities" if label == "abilities" else f"[benchmark] {label}"
            fail(f"{config_path}: {where} file {path} not found ({missing_input_hint(value)})")
        inputs[label] = {"path": str(path), "sha256": sha256_file(path)}
    panel_path = config.panel_path(f"{config_path}: panel = {config.panel!r} (see PANEL_CONFIG in env.example)")
    load_panel(panel_path)  # reject a bad panel now rather than at run time
    # Resolved once, here: the panel (it may come from $PANEL_CONFIG), so the run keeps the panel it started
    # with, and the ability cache (default: under the results root, never in the checkout).
    cache = config.path(config.ability_cache) if config.ability_cache else results_root / "cache" / "abilities"
    settings = {**config.as_dict(), "panel": str(panel_path), "ability_cache": str(cache)}
    record = {"config": settings, "source": str(Path(config_path).absolute()), "inputs": inputs,
              "panel": {"path": str(panel_path), "sha256": sha256_file(panel_path)},
              "created": datetime.datetime.now().isoformat(timespec="seconds"),
              "versions": package_versions(["numpy", "scipy", "openai"])}
    # all or nothing: a failed write (a full disk) leaves no run folder, and LATEST as it was (written atomically)
    created = [p for p in (folder.parent, folder) if not p.exists()]
    files = {CONFIG: record, **(extra or {})}
    try:
        for name, content in files.items():
            write_json(folder / name, content, sort_keys=True)
        write_latest(folder)
    except BaseException:
        with contextlib.suppress(OSError):
            for name in files:
                (folder / name).unlink(missing_ok=True)
            for path in reversed(created):
                path.rmdir()
        raise
    return folder


@contextlib.asynccontextmanager
async def open_loop(run: RunFolder):
    """The loop of a run folder, wired to its benchmark, panel, client and journal.

    Yields ``(benchmark, loop, client)``; on exit the client and the journal are closed. Both
    ``run`` and mass fill (:mod:`.mass_fill`) drive the loop they get here, so they share one
    code path from the inputs to the journal.
    """
    # imported here, where the loop is built: the loop brings Numba (its calibration's kernels), about half of a
    # start-up that ``init``, ``status`` and a refused folder or journal never use (0.9 → 0.4 s of CPU each)
    from benchmeasure.benchfill.loop import Loop

    config = run.config
    bench_cfg = config.benchmark
    if config.search.misfit_p > 0:
        try:   # the item-fit check (calibration.item_fit) runs on SciPy; the rest of the loop does not need it
            import scipy.special  # noqa: F401
        except ImportError:
            fail(missing_packages("the item-fit keep criterion ([search] misfit_p)", ["scipy"], "benchfill",
                                  "; or set [search] misfit_p = 0 in a new run's config to keep children unchecked"))
    benchmark = load_seed_set(bench_cfg.name, config.path(bench_cfg.calibration), config.path(bench_cfg.pool),
                               bench_cfg.question_field, bench_cfg.answer_field)
    panel = load_panel(config.panel_path())
    if panel.rewriter is None:
        fail(f"{config.panel}: the panel config has no [rewriter]")
    if config.abilities:
        abilities = read_abilities(config.path(config.abilities))
    else:
        # init records the resolved folder; the fallback (a hand-made config.json) is the results root's cache
        default = run.path.parents[1] / "cache" / "abilities"
        cache = config.path(config.ability_cache) if config.ability_cache else default
        abilities, _ = fit_abilities(config.path(bench_cfg.matrix), bench_cfg.matrix_n_trials, cache,
                                     bench_cfg.guessing, config.search.seed)
    models = [m for m in panel.models if m.name in abilities]
    absent = [m.name for m in panel.models if m.name not in abilities]
    if absent:
        fail(f"panel model {absent[0]!r} has no ability in the response matrix's fit (models there: "
             f"{', '.join(sorted(abilities))})")
    abilities = {m.name: abilities[m.name] for m in models}
    n_trials = panel.n_trials(bench_cfg.name)
    journal = EventLog(run.events_path)
    c = config.client
    client = LLMClient(c.max_concurrency, c.timeout, c.max_retries, c.backoff, journal=journal, seed=config.search.seed)
    try:
        rollouts = DirectRollouts(client, models, n_trials, bench_cfg.grader,
                                  grade_options=config.validity.get("grade_options"))
        holder = []  # the loop, once built: the validity check asks it what a candidate must not duplicate
        check = ValidityCheck(client, panel.rewriter, rollouts, lambda candidate: holder[0].existing(candidate),
                              int(config.validity.get("solve_n", 1)))
        prompts = Prompts(prompt_folder(config.search.prompts, config.path(config.search.prompts)))
        loop = Loop(config, benchmark, prompts, panel.rewriter,
                    PanelVerifier(rollouts, check), client, journal, abilities, n_trials)
        holder.append(loop)
        yield benchmark, loop, client
    finally:
        await _cancel_other_tasks()
        await client.close()
        journal.close()


async def _cancel_other_tasks() -> None:
    """Cancel every other task of the running event loop and wait until they have stopped.

    When one model call fails for good, ``asyncio.gather`` (here and in the verifier) passes the
    error up but leaves the sibling calls running; closing the client under them would make
    each fail on its own and print its traceback at shutdown. The event loop belongs to the run
    (``asyncio.run`` in :func:`run` and in mass fill), so every other task is one of its calls.
    On success no other task is left and this does nothing.
    """
    current = asyncio.current_task()
    others = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


async def _run(run: RunFolder) -> tuple:
    """The run's search; returns what :func:`write_outputs` needs (written after the event loop has ended, all
    or nothing, so a Ctrl-C there stops at once and leaves none of them)."""
    search, bench_cfg = run.config.search, run.config.benchmark
    async with open_loop(run) as (benchmark, loop, client):
        choice = benchmark.target_choice(search.gaps, bench_cfg.matrix_n_trials)
        skipped, resolution = [], None
        if search.unresolved == "resolve":
            from benchmeasure.benchfill.resolve import resolve_first
            from benchmeasure.core.matrix import read_matrix_allowing_holes

            benchmark, choice, resolution = await resolve_first(
                loop, search.gaps, bench_cfg.matrix_n_trials, search.resolve_max_trials, search.resolve_rounds,
                lambda: read_matrix_allowing_holes(run.config.path(bench_cfg.matrix), bench_cfg.matrix_n_trials))
            loop.reseed(benchmark)
        if search.unresolved in ("skip", "resolve"):
            choice, skipped = skip_unresolved(choice)
        else:
            warn_unresolved([(row["gap"], row["separation"]) for row in choice],
                            [row["extra_trials_per_model"] for row in choice])
        targets = [row["gap"] for row in choice]
        log.info("%s: %d items; targets %s", run.config.benchmark.name, len(benchmark.items),
                 ", ".join(f"gap {t.rank} [{t.left:.3f}, {t.right:.3f}] z*={t.midpoint:.3f}" for t in targets))
        results = await loop.run(targets)
    return benchmark, loop, targets, results, client.usage, choice, skipped, resolution


def _target_record(target, row) -> dict:
    return {"gap": target.rank, "left": target.left, "right": target.right, "target": target.midpoint,
            **({k: v for k, v in row.items() if k != "gap"} if row else {})}


def write_outputs(run: RunFolder, benchmark, loop, targets, results, usage, choice=None, skipped=(),
                  resolution=None) -> dict:
    config = run.config
    children = {c.item_id: c for c in loop.children()}
    keeps = {(k.mode, k.gap): k for k in loop.journal.of_type(Keep)}
    for keep in keeps.values():   # a certified keep is reported with its pooled calibration (screening + race)
        if keep.certified and keep.item_id in children:
            children[keep.item_id] = dataclasses.replace(children[keep.item_id], b_mean=keep.b_mean, b_sd=keep.b_sd,
                                                         z=keep.z)
    selected = {name: [] for name in STRATEGIES}  # per strategy (benchmeasure.benchfill.strategies)
    records = {name: [] for name in STRATEGIES}
    for target, pair in zip(targets, results):
        for done in pair:
            child = children.get(done.final) if done.final else None
            selected[done.mode].append(None if child is None else (child.z, target.midpoint))
            if child is not None:
                records[done.mode].append(ItemRecord.of(benchmark.name, target.rank, target.left, target.right,
                                                        target.midpoint, child, loop.lineage(child.item_id)))
    rows = table2(benchmark.z_values(), selected, len(targets))
    reannotations = loop.journal.of_type(Reannotation)
    for mode in STRATEGIES:
        budget = {str(d.gap): {"rounds": d.rounds, "rewrites": d.rewrites, "stopped_early": d.stopped_early}
                  for pair in results for d in pair if d.mode == mode}
        rows[mode]["budget"] = budget
        rows[mode]["rewrites"] = sum(b["rewrites"] for b in budget.values())
        rows[mode].update(independent_deviation([r for r in reannotations if r.mode == mode],
                                                config.search.reannotate))
        mine = [keeps[mode, t.rank] for t in targets if (mode, t.rank) in keeps]
        if mine:
            rows[mode].update(keep_rows(mine))
        rows[mode].update(misfit_rows([d for pair in results for d in pair if d.mode == mode]))
    summary = {**rows, "benchmark": benchmark.name, "b_range": [benchmark.b_min, benchmark.b_max],
               "targets": [_target_record(t, c) for t, c in zip(targets, choice or [None] * len(targets))],
               "skipped_targets": [_target_record(row["gap"], row) for row in skipped],
               **({"resolution": resolution} if resolution is not None else {}),
               "settings": config.as_dict(), **run.provenance(), "calls_this_session": usage,
               "versions": package_versions(["numpy", "scipy", "openai"])}
    text = format_table(benchmark.name, rows)
    for extra in (format_keeps(rows), format_misfits(rows)):
        if extra:
            text += "\n" + extra
    if resolution and resolution["items"]:
        text += ("\nresolved first (summary.json resolution): "
                 + ", ".join(f"item {r['item_id']} +{r['extra_trials_per_model']} trials per model, "
                             f"z {r['z_before']:.3f} -> {r['z_after']:.3f}" for r in resolution["items"]))
    if skipped:
        text += (f"\nskipped {len(skipped)} unresolved target gap(s), no call spent on rewrites: "
                 + ", ".join(f"[{row['gap'].left:.3f}, {row['gap'].right:.3f}]" for row in skipped)
                 + ' (summary.json skipped_targets; [search] unresolved = "fill" aims at them)')
    outputs = [(run.path / STRATEGIES[name].records_file, records[name]) for name in STRATEGIES]
    for path, items in outputs:
        with atomic_write(path) as handle:
            writer = csv.DictWriter(handle, RECORD_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(item.to_dict() for item in items)
    with atomic_write(run.path / "table2.txt") as handle:
        handle.write(text + "\n")
    write_json(run.path / "summary.json", summary, sort_keys=True)
    return summary


def run(folder) -> dict:
    """Start or resume the run in ``folder`` (exclusive: a second concurrent run refuses)."""
    run_folder = RunFolder.open(folder)
    if run_folder.is_mass_fill:
        fail(f"{folder}: a mass-fill folder; run it with benchmeasure mass-fill run {folder}")
    with run_lock(run_folder.path):
        run_folder.check_unchanged()
        run_folder.events()  # a damaged journal is one error line before any model call
        started = time.monotonic()
        pieces = asyncio.run(_run(run_folder))
        with all_or_nothing():
            summary = write_outputs(run_folder, *pieces)
        log.info("%s", (run_folder.path / "table2.txt").read_text(encoding="utf-8").rstrip())
        log.info("done in %.1f s; outputs in %s", time.monotonic() - started, run_folder.path)
    return summary


def status(folder) -> str:
    """A read-only progress report: per gap and method, target, rounds, best child, deviation, calls."""
    run_folder = RunFolder.open(folder)
    events = run_folder.events()
    holder = lock_holder(run_folder.path)
    lines = [f"run {run_folder.path}", f"benchmark {run_folder.config.benchmark.name}; "
             + (f"running (pid {holder})" if holder else "not running")]
    plans = [e for e in events if isinstance(e, Plan)]
    notes = [e for e in events if isinstance(e, Annotation)]
    calls = [e for e in events if isinstance(e, Call)]
    done = {(e.mode, e.gap) for e in events if isinstance(e, GapDone)}
    again = {(e.mode, e.gap): e for e in events if isinstance(e, Reannotation)}
    keeps = {(e.mode, e.gap): e for e in events if isinstance(e, Keep)}
    races: dict = {}
    for e in events:
        if isinstance(e, RaceBatch):
            races[e.mode, e.gap] = races.get((e.mode, e.gap), 0) + 1
    targets = {p.gap: p.target for p in plans}
    order = {name: i for i, name in enumerate(STRATEGIES)}
    gaps = sorted({(e.mode, e.gap) for e in plans}, key=lambda k: (k[1], order.get(k[0], len(order))))
    if not gaps:
        lines.append("no rounds started yet")
    for mode, gap in gaps:
        mine = [n for n in notes if n.mode == mode and n.gap == gap]
        rounds = max((p.round for p in plans if p.mode == mode and p.gap == gap), default=0)
        target = targets.get(gap)
        valid = [n for n in mine if n.valid]
        misfit = sum(n.misfits for n in mine)
        best = min((n for n in valid if not n.misfits), key=lambda n: abs(n.z - n.target), default=None)
        n_calls = sum(1 for c in calls if f"{mode}-g{gap}-" in c.key)
        state = "done" if (mode, gap) in done else "running" if holder else "stopped"
        line = (f"{mode:<9} gap {gap}: target {target if target is None else f'{target:.4f}'}, "
                f"rounds {rounds}, children {len(mine)} ({len(valid)} valid"
                + (f", {misfit} misfit: not kept" if misfit else "") + "), best "
                + (f"{best.item_id} z={best.z:.4f} deviation {abs(best.z - best.target):.4f}" if best else "none")
                + f", calls {n_calls}, {state}")
        if (mode, gap) in races:
            line += f", race batches {races[mode, gap]}"
        keep = keeps.get((mode, gap))
        if keep is not None:
            line += (f"; kept {keep.item_id} z={keep.z:.4f} [{keep.z_low:.4f}, {keep.z_high:.4f}] (certified)"
                     if keep.certified else "; no child certified, nothing kept")
        if (mode, gap) in again:
            line += f"; re-annotated deviation {again[mode, gap].deviation:.4f}"
        lines.append(line)
    extra = [e for e in events if isinstance(e, Resolution)]
    if extra:
        lines.append(f"resolved first ({max(e.round for e in extra)} round(s)): "
                     + ", ".join(f"item {e.item_id} +{e.trials} trials per model" for e in extra)
                     + f" ({sum(1 for c in calls if c.key.startswith('resolve'))} calls)")
    tokens = sum(c.result.get("prompt_tokens", 0) + c.result.get("completion_tokens", 0) for c in calls)
    lines.append(f"calls recorded {len(calls)}, tokens {tokens}")
    summary = run_folder.path / "summary.json"
    if summary.is_file():
        try:
            rows = json.loads(summary.read_text("utf-8"))
            lines.append(format_table(run_folder.config.benchmark.name, rows))
            for extra in (format_keeps(rows), format_misfits(rows)):
                if extra:
                    lines.append(extra)
        except (ValueError, KeyError, TypeError):
            fail(f"{summary}: damaged (rerun 'run' to write it again)")
    return "\n".join(lines)


