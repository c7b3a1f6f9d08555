"""BenchFill judged on the truth: the fitted-scale Table 2 beside the same run read on the simulation's true scale.

For each seed: the synthetic benchmark of simulation mode calibrated as a user's would be (as ``benchfill sim-data``
does: the panel's responses fitted with the 1PL, so b_mean and b_sd carry estimation noise; ``--items`` and
``--trials`` change its size), then BenchFill runs against the local simulated server, one per ``[search] keep``
rule (``--keep``: ``certified``, the default, keeps only a child whose posterior interval lies in the target band;
``closest``, the paper's rule and the run before issue 30) and ``[search] unresolved`` choice (``--unresolved``:
``skip``, the default, ``resolve`` or ``fill``). Each run also runs the budget-matched baseline. Every item's true
difficulty is known (the hidden tag of its text; ``true_difficulty.csv`` for the originals), so per run and method this
prints:

* ``fit red.`` / ``fit dev.`` — the paper's Table 2 numbers (Top-3 Gap Sum reduction %, target deviation), on the
  fitted scale;
* ``true red.`` — the Top-3 Gap Sum reduction of the kept items on the true scale (originals and kept items at their
  true difficulties, normalized by the originals' true range), ``oracle`` — what one item at the centre of each
  of the three widest *true* gaps reaches (the best a 3-item fill can do), and ``of or.`` — their ratio (%);
* ``true dev.`` — mean |z_true(kept) − centre of the true gap its target stood for| (the true positions of the
  target's two edge items); ``inside`` — kept items that lie inside that true gap;
* ``tgt err.`` — the same distance for a perfect placement at the fitted target: the true position of an item
  whose calibrated z is exactly z* (the fitted b at z*, less the panel's mean fitted-minus-true ability), i.e. the
  part of ``true dev.`` no keep rule can remove;
* ``targets`` (kept targets / skipped), ``calls`` — the method's model calls on its gaps (rewrites, solves,
  rollouts, race batches, and for BenchFill the extra trials of ``resolve``; from the journal) and
  ``calls/kept`` — those over the items kept.

The mean rows average over seeds; ``of or.`` and ``calls/kept`` there are ratios of the means.

Usage::

    .venv-irt/bin/python bench/bench_benchfill_truth.py [--seeds 1 2 3 4] [--items 40] [--trials 32]
        [--keep certified closest] [--unresolved skip]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.benchfill.abilities import fit_abilities, read_abilities  # noqa: E402
from benchmeasure.benchfill.eventlog import read_events  # noqa: E402
from benchmeasure.benchfill.records import Call  # noqa: E402
from benchmeasure.benchfill.summary import oracle_points, reduction  # noqa: E402
from benchmeasure.serving.sim.dataset import calibrate_from_fit, make_sim_benchmark  # noqa: E402
from benchmeasure.serving.sim.server import serve  # noqa: E402
from benchmeasure.serving.sim.world import TAG, World  # noqa: E402

CLI = [sys.executable, str(ROOT / "propose" / "benchfill.py")]
RECORDS = {"benchfill": "new_item_records.csv", "baseline": "baseline_item_records.csv"}


def true_scale(data: Path):
    """item_id → true b of the originals, and the map from a true b to the normalized true axis."""
    truth = {r["item_id"]: float(r["b_true"]) for r in csv.DictReader(open(data / "true_difficulty.csv"))}
    low, high = min(truth.values()), max(truth.values())
    return truth, lambda b: (b - low) / (high - low)


def ability_shift(data: Path, fit: Path) -> float:
    """Mean fitted-minus-true ability of the panel: a new item calibrated at b̂ has true b ≈ b̂ − shift."""
    true = World.load(data / "world.json").abilities
    fitted = read_abilities(fit / "ability.csv")
    return sum(fitted[m] - true[m] for m in true) / len(true)


def method_calls(folder: Path, mode: str) -> int:
    """Model calls the journal recorded for one method's children (every key names its child's ID); BenchFill's
    also count the extra trials of ``unresolved = "resolve"`` (keys ``resolve<round>/…``), which serve both methods."""
    mark = f"{mode}-g"
    return sum(1 for e in read_events(folder / "events.jsonl")
               if isinstance(e, Call) and (mark in e.key or (mode == "benchfill" and e.key.startswith("resolve"))))


def one_run(data: Path, results: Path, seed: int, keep: str, unresolved: str, shift: float, extra=()) -> dict:
    config = data / f"config-{keep}-{unresolved}.toml"
    text = (data / "config.toml").read_text()
    settings = "".join(f"{line}\n" for line in (f'unresolved = "{unresolved}"', f'keep = "{keep}"', *extra))
    config.write_text(text.replace("[search]\n", "[search]\n" + settings))
    name = f"s{seed}-{keep}-{unresolved}"
    shutil.rmtree(results / "math_sim" / name, ignore_errors=True)   # a rerun with --out
    server, url = serve(World.load(data / "world.json"), seed=seed)
    env = {**os.environ, "BENCHFILL_SIM_URL": url}
    try:
        init = subprocess.run([*CLI, "init", "--config", str(config), "--name", name,
                               "--results", str(results)], capture_output=True, text=True, env=env, check=True)
        folder = Path(init.stdout.strip())
        subprocess.run([*CLI, "run", str(folder)], capture_output=True, text=True, env=env, check=True)
    finally:
        server.shutdown()
    summary = json.loads((folder / "summary.json").read_text())
    truth, norm = true_scale(data)
    z_true = [norm(b) for b in truth.values()]
    oracle = reduction(z_true, oracle_points(z_true, 3))
    edges = {t["gap"]: (norm(truth[t["lower_item"]]), norm(truth[t["upper_item"]])) for t in summary["targets"]}
    centre = {g: (min(e) + max(e)) / 2 for g, e in edges.items()}
    fitted = [float(r["b_mean"]) for r in csv.DictReader(open(data / "calibration.csv"))]
    b_min, b_max = summary.get("b_range") or (min(fitted), max(fitted))   # the run's scale (resolve may move it)
    target_err = [abs(norm(b_min + t["target"] * (b_max - b_min) - shift) - centre[t["gap"]])
                  for t in summary["targets"]]
    out = {}
    for mode, name in RECORDS.items():
        rows = list(csv.DictReader(open(folder / name, encoding="utf-8")))
        kept = [(int(r["gap"]), norm(float(TAG.search(r["question"]).group(1)))) for r in rows]
        dev = [abs(z - centre[g]) for g, z in kept]
        inside = sum(min(edges[g]) <= z <= max(edges[g]) for g, z in kept)
        row = summary[mode]
        out[mode] = {"fit_red": row["top3_gap_sum_reduction"], "fit_dev": row["target_deviation"],
                     "true_red": reduction(z_true, [z for _, z in kept]), "oracle": oracle,
                     "true_dev": sum(dev) / len(dev) if dev else None, "inside": inside, "kept": len(kept),
                     "target_err": sum(target_err) / len(target_err) if target_err else None,
                     "targets": f"{len(summary['targets'])}/{len(summary['skipped_targets'])}",
                     "calls": method_calls(folder, mode)}
    return out


def cell(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def line(seed, keep, unresolved, mode, r) -> str:
    ratio = None if not r["oracle"] or r["true_red"] is None else 100 * r["true_red"] / r["oracle"]
    per_kept = r["calls"] / r["kept"] if r["kept"] else None
    inside, kept = (f"{r[k]:.2f}".rstrip("0").rstrip(".") for k in ("inside", "kept"))
    return (f"{seed!s:>4} {keep:<9} {unresolved:<6} {mode:<9} {cell(r['fit_red'], '.1f'):>8} "
            f"{cell(r['fit_dev'], '.4f'):>8} {cell(r['true_red'], '.1f'):>9} {r['oracle']:>6.1f} "
            f"{cell(ratio, '.0f'):>6} {cell(r['true_dev'], '.4f'):>9} {cell(r['target_err'], '.4f'):>8} "
            f"{inside:>6} {kept:>4} {r.get('targets', ''):>7} {r['calls']:>6.0f} "
            f"{cell(per_kept, '.0f'):>10}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--items", type=int, default=40, help="seed items (default 40, as sim-data)")
    parser.add_argument("--trials", type=int, default=32, help="trials per model and item (default 32, as sim-data)")
    parser.add_argument("--keep", nargs="+", choices=("certified", "closest"), default=["certified", "closest"],
                        help="[search] keep rules to run (default both)")
    parser.add_argument("--unresolved", nargs="+", choices=("skip", "resolve", "fill"), default=["skip"],
                        help="[search] unresolved choices to run (default skip)")
    parser.add_argument("--search", nargs="*", default=[], metavar="KEY=VALUE",
                        help="extra [search] settings for every run (TOML values, e.g. certify_tolerance=0.03)")
    parser.add_argument("--out", type=Path, default=None,
                        help="keep the data sets and run folders here (default: a temporary folder, removed)")
    args = parser.parse_args()
    print(f"{args.items} items, 12 models x {args.trials} trials, calibration from the 1PL fit", flush=True)
    print(f"{'seed':>4} {'keep':<9} {'unres.':<6} {'method':<9} {'fit red.':>8} {'fit dev.':>8} {'true red.':>9} "
          f"{'oracle':>6} {'of or.':>6} {'true dev.':>9} {'tgt err.':>8} {'inside':>6} {'kept':>4} {'targets':>7} "
          f"{'calls':>6} {'calls/kept':>10}", flush=True)
    totals: dict = {}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.out or scratch
        for seed in args.seeds:
            data = Path(tmp) / f"data{seed}"
            if data.exists():
                shutil.rmtree(data)
            make_sim_benchmark(data, seed, n_items=args.items, n_trials=args.trials)
            _, fit = fit_abilities(data / "response_matrix.csv", args.trials, data / "ability_cache", seed=seed)
            calibrate_from_fit(data, fit)   # as `benchfill sim-data` does, at this size
            shift = ability_shift(data, fit)
            for keep in args.keep:
                for unresolved in args.unresolved:
                    for mode, r in one_run(data, Path(tmp) / "res", seed, keep, unresolved, shift,
                                                  [" = ".join(kv.split("=", 1)) for kv in args.search]).items():
                        print(line(seed, keep, unresolved, mode, r), flush=True)
                        totals.setdefault((keep, unresolved, mode), []).append(r)
    for (keep, unresolved, mode), rows in totals.items():
        def mean(key, rows=rows):
            values = [r[key] for r in rows if r[key] is not None]
            return sum(values) / len(values) if values else None
        summary = {key: mean(key) for key in ("fit_red", "fit_dev", "true_red", "oracle", "true_dev", "target_err",
                                              "inside", "kept", "calls")}
        print(line("mean", keep, unresolved, mode, summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
