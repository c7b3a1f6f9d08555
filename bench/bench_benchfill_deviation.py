"""BenchFill's target deviation three ways, side by side, on the simulated world where the truth is known.

For each seed: a BenchFill run on the synthetic benchmark (calibration and abilities = the ground
truth, so the only noise is the panel's rollouts) against the local simulated server, with
``[search] reannotate = K``. Printed per method (BenchFill, baseline):

* ``paper`` — ``target_deviation``: mean |ẑ − z*| with ẑ the calibration that selected the item;
* ``indep.`` — ``target_deviation_independent`` ± its sd: ẑ from K fresh rollouts per model;
* ``truth`` — mean |z_true − z*|, z_true from the hidden tag of the item's text (the simulation's truth).

The paper's number is biased low (the selected item is the best of several noisy calibrations); the
independent one should sit near the truth. Usage::

    .venv-irt/bin/python bench/bench_benchfill_deviation.py [--seeds 1 2 3] [--reannotate 32]
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

from benchmeasure.serving.sim.dataset import make_sim_benchmark  # noqa: E402
from benchmeasure.serving.sim.server import serve  # noqa: E402
from benchmeasure.serving.sim.world import TAG, World  # noqa: E402

CLI = [sys.executable, str(ROOT / "propose" / "benchfill.py")]


def one_run(work: Path, seed: int, reannotate: int) -> dict:
    config = make_sim_benchmark(work / f"data{seed}", seed, truth=True, search={"reannotate": reannotate})
    server, url = serve(World.load(work / f"data{seed}" / "world.json"), seed=seed)
    env = {**os.environ, "BENCHFILL_SIM_URL": url}
    try:
        init = subprocess.run([*CLI, "init", "--config", str(config), "--name", f"s{seed}", "--results",
                               str(work / "res")], capture_output=True, text=True, env=env, check=True)
        folder = Path(init.stdout.strip())
        subprocess.run([*CLI, "run", str(folder)], capture_output=True, text=True, env=env, check=True)
    finally:
        server.shutdown()
    b = [float(r["b_mean"]) for r in csv.DictReader(open(work / f"data{seed}" / "calibration.csv"))]
    b_min, b_max = min(b), max(b)
    summary = json.loads((folder / "summary.json").read_text())
    out = {}
    for mode, name in (("benchfill", "new_item_records.csv"), ("baseline", "baseline_item_records.csv")):
        rows = list(csv.DictReader(open(folder / name, encoding="utf-8")))
        truth = [abs((float(TAG.search(r["question"]).group(1)) - b_min) / (b_max - b_min) - float(r["target"]))
                 for r in rows]
        row = summary[mode]
        out[mode] = (row["target_deviation"], row["target_deviation_independent"],
                     row["target_deviation_independent_sd"], sum(truth) / len(truth) if truth else None)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--reannotate", type=int, default=32)
    args = parser.parse_args()
    print(f"{'seed':>4} {'method':<10} {'paper':>8} {'indep. ± sd':>17} {'truth':>8}")
    totals = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for mode, (paper, indep, sd, truth) in one_run(Path(tmp), seed, args.reannotate).items():
                print(f"{seed:>4} {mode:<10} {paper:>8.4f} {indep:>8.4f} ± {sd:.4f} {truth:>8.4f}", flush=True)
                totals.setdefault(mode, []).append((paper, indep, truth))
    for mode, values in totals.items():
        n = len(values)
        print(f"{'mean':>4} {mode:<10} {sum(v[0] for v in values) / n:>8.4f} {sum(v[1] for v in values) / n:>8.4f}"
              f"{'':>9} {sum(v[2] for v in values) / n:>8.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
