"""``init`` / ``run`` / ``status`` of a BenchFill run folder (driven by ``run_experiment.sh``).

A run folder ``propose/results/<benchmark>/<run>/`` holds:

* ``config.json`` — the resolved settings, the input files' SHA-256 and package versions (``init``);
* ``events.jsonl`` — the journal of plans, model calls, annotations and finished gaps (``run``);
* ``run.lock`` — held while a ``run`` is active;
* ``summary.json``, ``table2.txt``, ``new_item_records.csv``, ``baseline_item_records.csv`` —
  written atomically when every gap is done.

``status`` only reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import datetime
import json
import os
import time
from pathlib import Path

from benchmeasure.benchfill.abilities import fit_abilities, read_abilities
from benchmeasure.benchfill.config import RunConfig, config_from_dict, load_config
from benchmeasure.benchfill.eventlog import EVENTS, EventLog, lock_holder, read_events, run_lock
from benchmeasure.benchfill.gaps import load_benchmark
from benchmeasure.benchfill.loop import BASELINE, BENCHFILL, Loop
from benchmeasure.benchfill.prompts import Prompts
from benchmeasure.benchfill.summary import format_table, table2
from benchmeasure.benchfill.validity_check import ValidityCheck
from benchmeasure.errors import fail
from benchmeasure.files import atomic_write, package_versions, sha256_file, write_json
from benchmeasure.llm_client import LLMClient
from benchmeasure.verifier.panel import load_panel
from benchmeasure.verifier.panel_verifier import PanelVerifier
from benchmeasure.verifier.rollouts import DirectRollouts

CONFIG = "config.json"
MASS_MARKER = "mass_fill.json"  # present in mass-fill folders (.mass_fill), which 'run' refuses
RECORD_COLUMNS = ["benchmark", "gap", "z_L", "z_R", "target", "item_id", "question", "answer", "parent_id", "round",
                  "b_mean", "b_sd", "z", "deviation", "lineage"]


def init_run(config_path, results_root, run_name: str | None = None) -> Path:
    """Create a run folder with the resolved config; refuses an existing folder."""
    config = load_config(config_path)
    name = run_name or datetime.datetime.now().strftime("run-%Y%m%d-%H%M%S")
    folder = Path(results_root) / config.benchmark.name / name
    if folder.exists():
        fail(f"{folder}: run folder already exists (choose another --name or run it)")
    inputs = {}
    for label in ("calibration", "pool", "matrix"):
        path = config.path(getattr(config.benchmark, label))
        if not path.is_file():
            fail(f"{config_path}: [benchmark] {label} file {path} not found")
        inputs[label] = {"path": str(path), "sha256": sha256_file(path)}
    panel_path = config.path(config.panel)
    if not panel_path.is_file():
        fail(f"{config_path}: panel config {panel_path} not found (panel = {config.panel!r}; "
             "see PANEL_CONFIG in env.example)")
    load_panel(panel_path)  # reject a bad panel now rather than at run time
    # The panel is resolved once, here (it may come from $PANEL_CONFIG): the run keeps the panel it started with.
    settings = {**config.as_dict(), "panel": str(panel_path)}
    record = {"config": settings, "source": str(config_path), "inputs": inputs,
              "panel": {"path": str(panel_path), "sha256": sha256_file(panel_path)},
              "created": datetime.datetime.now().isoformat(timespec="seconds"),
              "versions": package_versions(["numpy", "scipy", "openai"])}
    write_json(folder / CONFIG, record, sort_keys=True)
    return folder


def read_run_config(folder) -> RunConfig:
    path = Path(folder) / CONFIG
    if not path.is_file():
        fail(f"{folder}: not a run folder (no {CONFIG}; create one with 'init')")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        fail(f"{path}: not valid JSON ({exc.msg})")
    return config_from_dict(record["config"], str(path))


@contextlib.asynccontextmanager
async def open_loop(folder: Path, config: RunConfig, log):
    """The loop of a run folder, wired to its benchmark, panel, client and journal.

    Yields ``(benchmark, loop, client)``; on exit the client and the journal are closed. Both
    ``run`` and mass fill (:mod:`.mass_fill`) drive the loop they get here, so they share one
    code path from the inputs to the journal.
    """
    bench_cfg = config.benchmark
    benchmark = load_benchmark(bench_cfg.name, config.path(bench_cfg.calibration), config.path(bench_cfg.pool),
                               bench_cfg.question_field, bench_cfg.answer_field)
    panel = load_panel(config.path(config.panel))
    if panel.rewriter is None:
        fail(f"{config.panel}: the panel config has no [rewriter]")
    if config.abilities:
        abilities = read_abilities(config.path(config.abilities))
    else:
        abilities, _ = fit_abilities(config.path(bench_cfg.matrix), bench_cfg.matrix_n_trials,
                                     config.path(config.ability_cache), bench_cfg.guessing, config.search.seed, log=log)
    models = [m for m in panel.models if m.name in abilities]
    absent = [m.name for m in panel.models if m.name not in abilities]
    if absent:
        fail(f"panel model {absent[0]!r} has no ability in the response matrix's fit (models there: "
             f"{', '.join(sorted(abilities))})")
    abilities = {m.name: abilities[m.name] for m in models}
    n_trials = panel.n_trials(bench_cfg.name)
    journal = EventLog(folder / EVENTS)
    c = config.client
    client = LLMClient(c.max_concurrency, c.timeout, c.max_retries, c.backoff, journal=journal, seed=config.search.seed)
    loop = None
    try:
        rollouts = DirectRollouts(client, models, n_trials, bench_cfg.grader,
                                  grade_options=config.validity.get("grade_options"))

        def existing():
            return ([(i.item_id, i.question, i.answer) for i in benchmark.items]
                    + [(ch.item_id, ch.question, ch.answer) for ch in loop.children() if ch.valid])

        check = ValidityCheck(client, panel.rewriter, rollouts, existing, int(config.validity.get("solve_n", 1)))
        loop = Loop(config, benchmark, Prompts(config.path(config.search.prompts)), panel.rewriter,
                    PanelVerifier(rollouts, check), client, journal, abilities, n_trials, log=log)
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


async def _run(folder: Path, config: RunConfig, log) -> dict:
    async with open_loop(folder, config, log) as (benchmark, loop, client):
        targets = benchmark.targets(config.search.gaps)
        log(f"{config.benchmark.name}: {len(benchmark.items)} items; targets "
            + ", ".join(f"gap {t.rank} [{t.z_left:.3f}, {t.z_right:.3f}] z*={t.z_star:.3f}" for t in targets))
        results = await loop.run(targets)
    return write_outputs(folder, config, benchmark, loop, targets, results, client.usage)


def write_outputs(folder: Path, config: RunConfig, benchmark, loop, targets, results, usage) -> dict:
    children = {c.item_id: c for c in loop.children()}
    selected = {BENCHFILL: [], BASELINE: []}
    records = {BENCHFILL: [], BASELINE: []}
    for target, pair in zip(targets, results):
        for done in pair:
            child = children.get(done["final"]) if done["final"] else None
            selected[done["mode"]].append(None if child is None else (child.z, target.z_star))
            if child is not None:
                records[done["mode"]].append({
                    "benchmark": benchmark.name, "gap": target.rank, "z_L": target.z_left, "z_R": target.z_right,
                    "target": target.z_star, "item_id": child.item_id, "question": child.question,
                    "answer": child.answer, "parent_id": child.parent_id, "round": child.round,
                    "b_mean": child.b_mean, "b_sd": child.b_sd, "z": child.z,
                    "deviation": abs(child.z - target.z_star), "lineage": " > ".join(loop.lineage(child.item_id))})
    rows = table2(benchmark.z_values(), selected[BENCHFILL], selected[BASELINE], len(targets))
    budgets = {mode: {str(d["gap"]): {"rounds": d["rounds"], "rewrites": d["rewrites"],
                                      "stopped_early": d["stopped_early"]}
                      for pair in results for d in pair if d["mode"] == mode} for mode in (BENCHFILL, BASELINE)}
    for mode in (BENCHFILL, BASELINE):
        rows[mode]["budget"] = budgets[mode]
        rows[mode]["rewrites"] = sum(b["rewrites"] for b in budgets[mode].values())
    record = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    summary = {**rows, "benchmark": benchmark.name,
               "targets": [{"gap": t.rank, "z_L": t.z_left, "z_R": t.z_right, "target": t.z_star} for t in targets],
               "settings": config.as_dict(), "inputs": record["inputs"], "panel": record.get("panel"),
               "calls_this_session": usage,
               "versions": package_versions(["numpy", "scipy", "openai"])}
    for mode, name in ((BENCHFILL, "new_item_records.csv"), (BASELINE, "baseline_item_records.csv")):
        with atomic_write(folder / name) as handle:
            writer = csv.DictWriter(handle, RECORD_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(records[mode])
    text = format_table(benchmark.name, rows)
    with atomic_write(folder / "table2.txt") as handle:
        handle.write(text + "\n")
    write_json(folder / "summary.json", summary, sort_keys=True)
    return summary


def run(folder, log=print) -> dict:
    """Start or resume the run in ``folder`` (exclusive: a second concurrent run refuses)."""
    folder = Path(folder)
    config = read_run_config(folder)
    if (folder / MASS_MARKER).is_file():
        fail(f"{folder}: a mass-fill folder; run it with propose/mass_fill/mass_fill.py run")
    with run_lock(folder):
        started = time.monotonic()
        summary = asyncio.run(_run(folder, config, log))
        log(format_table(config.benchmark.name, summary))
        log(f"done in {time.monotonic() - started:.1f} s; outputs in {folder}")
    return summary


def status(folder) -> str:
    """A read-only progress report: per gap and method, target, rounds, best child, deviation, calls."""
    folder = Path(folder)
    config = read_run_config(folder)
    events = read_events(folder / EVENTS)
    holder = lock_holder(folder)
    lines = [f"run {folder}", f"benchmark {config.benchmark.name}; "
             + (f"running (pid {holder})" if holder else "not running")]
    plans = [e for e in events if e.get("type") == "plan"]
    notes = [e for e in events if e.get("type") == "annotation"]
    calls = [e for e in events if e.get("type") == "call"]
    done = {(e["mode"], e["gap"]): e for e in events if e.get("type") == "gap_done"}
    targets = {p["gap"]: p["target"] for p in plans}
    gaps = sorted({(e["mode"], e["gap"]) for e in plans}, key=lambda k: (k[1], k[0] != BENCHFILL))
    if not gaps:
        lines.append("no rounds started yet")
    for mode, gap in gaps:
        mine = [n for n in notes if n["mode"] == mode and n["gap"] == gap]
        rounds = max((p["round"] for p in plans if p["mode"] == mode and p["gap"] == gap), default=0)
        target = targets.get(gap)
        valid = [n for n in mine if n["valid"]]
        best = min(valid, key=lambda n: abs(n["z"] - n["target"])) if valid else None
        n_calls = sum(1 for c in calls if f"{mode}-g{gap}-" in c["key"])
        state = "done" if (mode, gap) in done else "running" if holder else "stopped"
        lines.append(f"{mode:<9} gap {gap}: target {target if target is None else f'{target:.4f}'}, "
                     f"rounds {rounds}, children {len(mine)} ({len(valid)} valid), best "
                     + (f"{best['item_id']} z={best['z']:.4f} deviation {abs(best['z'] - best['target']):.4f}"
                        if best else "none")
                     + f", calls {n_calls}, {state}")
    tokens = sum(c["result"].get("prompt_tokens", 0) + c["result"].get("completion_tokens", 0) for c in calls)
    lines.append(f"calls recorded {len(calls)}, tokens {tokens}")
    summary = folder / "summary.json"
    if summary.is_file():
        lines.append(format_table(config.benchmark.name, json.loads(summary.read_text(encoding="utf-8"))))
    return "\n".join(lines)


def results_root() -> Path:
    return Path(os.environ.get("BENCHFILL_RESULTS", Path(__file__).resolve().parents[2] / "propose" / "results"))
