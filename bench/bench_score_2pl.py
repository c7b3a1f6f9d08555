"""score-models against a 2PL fit's items on a real matrix split (issue 51 part 3, docs/anchored.md).

ZeroEval MATH level 5 (43 models × 721 items, K = 1, 1 % absent; ``/work/shared/data/zeroeval/math_l5`` or
``--responses``): the models are shuffled (``--seed``) and ``--held-out`` of them set aside. The 2PL
(``fit --model 2pl --save-posterior``) and the default 1PL are fitted to the rest (calibration) and to every model
(the full fits, the reference). Each held-out model is then scored by ``benchmeasure score`` against the
calibration fit's items, under each model, from all its answers and from ``--anchors`` random items (the same for
every model), and compared with its ability in the full fit of the same model (RMSE, and how often the full fit's
value lies in the score's 94 % HDI), and, from the anchors, its predicted accuracy on every item with its observed
accuracy (MAE in points, coverage of the 94 % interval). The 2PL is scored with its plug-in items and with
``--difficulty-draws`` (the calibration posterior's paired b and a).

    .venv-irt/bin/python bench/bench_score_2pl.py --work /tmp/score2pl
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import runpy
import subprocess
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))  # shared by the benches
SOURCE = Path("/work/shared/data/zeroeval/math_l5/responses_long.csv")


def bm(*args) -> subprocess.CompletedProcess:
    return _machine["benchmeasure_command"](ROOT, *args)


def read(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def write_long(path: Path, rows: list) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", "item_id", "trial", "correct"])
        writer.writerows([r["model"], r["item_id"], 0, r["correct"]] for r in rows)
    return path


def fit(matrix: Path, out: Path, model: str, args) -> dict:
    if not (out / "diagnostics.json").exists():
        extra = ["--model", "2pl", "--save-posterior"] if model == "2pl" else []
        bm("fit", matrix, "--n-trials", 1, "--allow-missing", "--chains", args.chains, "--tune", args.tune,
           "--draws", args.draws, "--seed", args.seed, "--no-calibrate", "--quiet", *extra, "--output-dir", out)
    record = json.loads((out / "diagnostics.json").read_text())
    return {"max_r_hat": record.get("max_r_hat"), "min_ess_bulk": record.get("min_ess_bulk"),
            "divergences": record.get("divergences")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=Path, default=SOURCE)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--held-out", type=int, default=8)
    parser.add_argument("--anchors", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=500)
    args = parser.parse_args()
    start = time.time()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    rows = read(args.responses)
    models = sorted({r["model"] for r in rows})
    items = sorted({r["item_id"] for r in rows}, key=lambda v: (len(v), v))
    rng = np.random.default_rng(args.seed)
    held = set(rng.permutation(models)[:args.held_out])
    anchors = set(rng.choice(items, args.anchors, replace=False))
    calibration = [r for r in rows if r["model"] not in held]
    matrices = {}
    for name, part in (("calibration", calibration), ("full", rows)):
        long = write_long(work / f"{name}_long.csv", part)
        matrices[name] = work / f"{name}.csv"
        if not matrices[name].exists():
            bm("prepare", long, "--n-trials", 1, "--allow-missing", "--output", matrices[name], "--quiet")
    fits = {}
    for name in ("calibration", "full"):
        for model in ("1pl", "2pl"):
            fits[f"{name}_{model}"] = fit(matrices[name], work / f"{name}_{model}", model, args)
    held_rows = [r for r in rows if r["model"] in held]
    all_answers = write_long(work / "held_all.csv", held_rows)
    anchor_answers = write_long(work / "held_anchors.csv", [r for r in held_rows if r["item_id"] in anchors])
    accuracy = {m: np.mean([float(r["correct"]) for r in held_rows if r["model"] == m]) for m in held}
    results = {}
    for model in ("1pl", "2pl"):
        full = {r["model"]: float(r["theta_mean"]) for r in read(work / f"full_{model}" / "ability.csv")}
        variants = [("", [])] + ([("+draws", ["--difficulty-draws", work / f"calibration_{model}" / "posterior.zarr"])]
                                 if model == "2pl" else [])
        for label, extra in variants:
            for answers, path in (("all", all_answers), ("anchors", anchor_answers)):
                out = work / f"scores_{model}{label.replace('+', '_')}_{answers}.csv"
                t0 = time.time()
                bm("score", path, "--difficulty", work / f"calibration_{model}" / "difficulty.csv", "--n-trials", 1,
                   "--allow-missing", "--output", out, "--quiet", *extra)
                seconds = time.time() - t0
                scored = read(out)
                err = np.array([float(r["theta_mean"]) - full[r["model"]] for r in scored])
                inside = np.mean([float(r["theta_hdi_low"]) <= full[r["model"]] <= float(r["theta_hdi_high"])
                                  for r in scored])
                acc_err = np.array([float(r["accuracy_predicted_full"]) - accuracy[r["model"]] for r in scored])
                acc_in = np.mean([float(r["accuracy_predicted_low"]) - 1e-6 <= accuracy[r["model"]]
                                  <= float(r["accuracy_predicted_high"]) + 1e-6 for r in scored])  # 6 digits
                results[f"{model}{label} {answers}"] = {
                    "theta_rmse_vs_full_fit": float(np.sqrt(np.mean(err ** 2))),
                    "theta_mean_abs_err": float(np.mean(np.abs(err))),
                    "full_fit_theta_in_hdi": float(inside),
                    "mean_theta_sd": float(np.mean([float(r["theta_sd"]) for r in scored])),
                    "accuracy_mae_points": float(100 * np.mean(np.abs(acc_err))),
                    "accuracy_interval_coverage": float(acc_in), "score_wall_s": seconds}
    report = {"held_out": sorted(held), "anchors": args.anchors, "fits": fits, "results": results,
              "settings": vars(args) | {"responses": str(args.responses), "work": str(work)},
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.processor() or ''}, "
                         f"load average {os.getloadavg()[0]:.1f} at the end",
              "wall_s": time.time() - start}
    (work / "report.json").write_text(json.dumps(report, indent=1, default=str))
    print(f"{'scored':22} {'θ RMSE vs full':>14} {'in HDI':>7} {'mean sd':>8} {'acc MAE pts':>11} {'acc cover':>9}")
    for key, r in results.items():
        print(f"{key:22} {r['theta_rmse_vs_full_fit']:14.3f} {r['full_fit_theta_in_hdi']:7.2f} "
              f"{r['mean_theta_sd']:8.3f} {r['accuracy_mae_points']:11.2f} {r['accuracy_interval_coverage']:9.2f}")
    print(json.dumps(fits))
    print(report["machine"], f"{report['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
