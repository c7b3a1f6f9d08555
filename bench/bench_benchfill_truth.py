"""BenchFill judged on the truth: the fitted-scale Table 2 beside the same run read on the simulation's true scale.

For each seed: the synthetic benchmark of simulation mode calibrated as a user's would be (as ``benchfill sim-data``
does: the panel's responses fitted with the 1PL, so b_mean and b_sd carry estimation noise; ``--items`` and
``--trials`` change its size), then two BenchFill runs
against the local simulated server that differ only in ``[search] unresolved``: ``skip`` (the default: no call on a
target gap whose edges are not resolved) and ``fill`` (the paper's widest-first treatment). Every item's true
difficulty is known (the hidden tag of its text; ``true_difficulty.csv`` for the originals), so per run and method
(BenchFill, baseline) this prints:

* ``fit red.`` / ``fit dev.`` — the paper's Table 2 numbers (Top-3 Gap Sum reduction %, target deviation), on the
  fitted scale;
* ``true red.`` — the Top-3 Gap Sum reduction of the kept items on the true scale (originals and kept items at their
  true difficulties, normalized by the originals' true range), and ``oracle`` — what one item at the centre of each
  of the three widest *true* gaps reaches (the best a 3-item fill can do);
* ``true dev.`` — mean |z_true(kept) − centre of the true gap its target stood for| (the true positions of the
  target's two edge items); ``inside`` — kept items that lie inside that true gap;
* ``targets`` (kept targets / skipped) and ``calls`` — model calls of the run.

Usage::

    .venv-irt/bin/python bench/bench_benchfill_truth.py [--seeds 1 2 3 4] [--items 40] [--trials 32]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.benchfill.abilities import fit_abilities  # noqa: E402
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


def one_run(data: Path, results: Path, seed: int, unresolved: str) -> dict:
    config = data / f"config-{unresolved}.toml"
    text = (data / "config.toml").read_text()
    config.write_text(text.replace("[search]\n", f'[search]\nunresolved = "{unresolved}"\n'))
    server, url = serve(World.load(data / "world.json"), seed=seed)
    env = {**os.environ, "BENCHFILL_SIM_URL": url}
    try:
        init = subprocess.run([*CLI, "init", "--config", str(config), "--name", f"s{seed}-{unresolved}", "--results",
                               str(results)], capture_output=True, text=True, env=env, check=True)
        folder = Path(init.stdout.strip())
        subprocess.run([*CLI, "run", str(folder)], capture_output=True, text=True, env=env, check=True)
    finally:
        server.shutdown()
    summary = json.loads((folder / "summary.json").read_text())
    truth, norm = true_scale(data)
    z_true = [norm(b) for b in truth.values()]
    oracle = reduction(z_true, oracle_points(z_true, 3))
    edges = {t["gap"]: (norm(truth[t["lower_item"]]), norm(truth[t["upper_item"]])) for t in summary["targets"]}
    calls = summary["calls_this_session"]
    out = {}
    for mode, name in RECORDS.items():
        rows = list(csv.DictReader(open(folder / name, encoding="utf-8")))
        kept = [(int(r["gap"]), norm(float(TAG.search(r["question"]).group(1)))) for r in rows]
        dev = [abs(z - (min(edges[g]) + max(edges[g])) / 2) for g, z in kept]
        inside = sum(min(edges[g]) <= z <= max(edges[g]) for g, z in kept)
        row = summary[mode]
        out[mode] = {"fit_red": row["top3_gap_sum_reduction"], "fit_dev": row["target_deviation"],
                     "true_red": reduction(z_true, [z for _, z in kept]), "oracle": oracle,
                     "true_dev": sum(dev) / len(dev) if dev else None, "inside": f"{inside}/{len(kept)}",
                     "targets": f"{len(summary['targets'])}/{len(summary['skipped_targets'])}",
                     "calls": calls["calls"]}
    return out


def cell(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--items", type=int, default=40, help="seed items (default 40, as sim-data)")
    parser.add_argument("--trials", type=int, default=32, help="trials per model and item (default 32, as sim-data)")
    args = parser.parse_args()
    print(f"{args.items} items, 12 models x {args.trials} trials, calibration from the 1PL fit", flush=True)
    print(f"{'seed':>4} {'unresolved':<10} {'method':<10} {'fit red.':>9} {'fit dev.':>9} {'true red.':>10} "
          f"{'oracle':>7} {'true dev.':>10} {'inside':>7} {'targets':>8} {'calls':>7}", flush=True)
    totals: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            data = Path(tmp) / f"data{seed}"
            make_sim_benchmark(data, seed, n_items=args.items, n_trials=args.trials)
            _, fit = fit_abilities(data / "response_matrix.csv", args.trials, data / "ability_cache", seed=seed)
            calibrate_from_fit(data, fit)   # as `benchfill sim-data` does, at this size
            for unresolved in ("skip", "fill"):
                for mode, r in one_run(data, Path(tmp) / "res", seed, unresolved).items():
                    print(f"{seed:>4} {unresolved:<10} {mode:<10} {cell(r['fit_red'], '.1f'):>9} "
                          f"{cell(r['fit_dev'], '.4f'):>9} {cell(r['true_red'], '.1f'):>10} {r['oracle']:>7.1f} "
                          f"{cell(r['true_dev'], '.4f'):>10} {r['inside']:>7} {r['targets']:>8} {r['calls']!s:>7}",
                          flush=True)
                    totals.setdefault((unresolved, mode), []).append(r)
    for (unresolved, mode), rows in totals.items():
        def mean(key, rows=rows):
            values = [r[key] for r in rows if r[key] is not None]
            return sum(values) / len(values) if values else None
        print(f"{'mean':>4} {unresolved:<10} {mode:<10} {cell(mean('fit_red'), '.1f'):>9} "
              f"{cell(mean('fit_dev'), '.4f'):>9} {cell(mean('true_red'), '.1f'):>10} {mean('oracle'):>7.1f} "
              f"{cell(mean('true_dev'), '.4f'):>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
