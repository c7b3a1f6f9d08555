"""Simulated growing benchmarks: power, false alarms and τ error of ``benchmeasure drift`` (docs/drift.md).

Each world: 71 models × 1,055 items dated over 24 months (2023-05 … 2025-04) in three releases (months 0–7,
8–15, 16–23), K = 10 for the first 40 models and K = 1 for the rest, block holes (a third of the models join
only at release 2, a fifth answer only releases 1–2), abilities N(0, 1.2²), difficulties N(0, 1.5²).

* ``null``         no contamination;
* ``trend``        no contamination, difficulty rising by 2 logits over the 24 months;
* ``slopes``       no contamination, items of release 2 with discrimination 0.6 and of release 3 with 1.6;
* ``panels``       no contamination, panels that change between releases (half the models answer one release);
* ``contaminated`` 10 models with a 1-logit boost on the items dated up to their cut-off (cut-offs at months
                   7–16, so ≥ 300 pre-cut-off items unless holes take some); plus the trend and slope differences.
                   Power is printed over all of them, over those with ≥ 300 answered pre-cut-off items, and over
                   those of these that also answered ≥ 20 items after the cut-off (a step needs both sides);
                   and how well ``--predict-after`` predicts their accuracy on the newest release.

Printed per world: false-alarm rate per clean model at the 5 % level (BH q ≤ 0.05, and raw p ≤ 0.05), power
(contaminated models flagged) and the share of detections with τ within one month of the cut-off. Then the
timing of the real command on one world's files (71 × 1,055, K per cell, holes).

    .venv-irt/bin/python bench/bench_drift.py              # 3 replicate worlds each
    .venv-irt/bin/python bench/bench_drift.py --quick      # 1 replicate each
    .venv-irt/bin/python bench/bench_drift.py --worlds trend --replicates 10 --no-timing
    .venv-irt/bin/python bench/bench_drift.py --worlds contaminated --replicates 10 --no-timing --model-dates
"""

from __future__ import annotations

import argparse
import csv
import platform
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.analyses.drift import DriftSettings, run_drift  # noqa: E402
from benchmeasure.core.item_meta import Covariate, month_date  # noqa: E402
from benchmeasure.core.matrix import ResponseMatrix  # noqa: E402

M, N, MONTHS, START = 71, 1055, 24, 2023 * 12 + 4   # 2023-05
SEEDS = {"null": 1, "trend": 2, "slopes": 3, "panels": 4, "contaminated": 5}


def world(kind: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    month = np.sort(rng.integers(0, MONTHS, N))
    release = np.where(month < 8, "r1", np.where(month < 16, "r2", "r3"))
    theta = rng.normal(0, 1.2, M)
    b = rng.normal(0, 1.5, N)
    a = np.ones(N)
    if kind in ("trend", "contaminated"):
        b = b + 2.0 * month / (MONTHS - 1) - 1.0
    if kind in ("slopes", "contaminated"):
        a = np.where(release == "r2", 0.6, np.where(release == "r3", 1.6, 1.0))
    K = np.where(np.arange(M) < 40, 10, 1)
    trials = np.repeat(K[:, None], N, axis=1)
    late = rng.choice(M, M // 3, replace=False)
    trials[np.ix_(late, np.flatnonzero(release == "r1"))] = 0
    early = rng.choice(np.setdiff1d(np.arange(M), late), M // 5, replace=False)
    trials[np.ix_(early, np.flatnonzero(release == "r3"))] = 0
    if kind == "panels":
        for m in rng.choice(M, M // 2, replace=False):
            keep = rng.choice(["r1", "r2", "r3"])
            trials[m, release != keep] = 0
    eta = a * (theta[:, None] - b)
    bad, cutoff = np.zeros(M, bool), np.full(M, -1)
    if kind == "contaminated":
        chosen = rng.choice(M, 10, replace=False)
        bad[chosen] = True
        cutoff[chosen] = rng.integers(7, 17, chosen.size)
        for m in chosen:
            eta[m] = a * (theta[m] + 1.0 * (month <= cutoff[m]) - b)
    counts = rng.binomial(trials, 1 / (1 + np.exp(-eta)))
    return {"counts": counts, "trials": trials, "month": month, "release": release, "bad": bad, "cutoff": cutoff,
            "K": 10, "theta": theta, "b": b, "a": a}


def matrix_of(w) -> ResponseMatrix:
    models = [f"m{j:02d}" for j in range(M)]
    items = [f"q{i:04d}" for i in range(N)]
    return ResponseMatrix(models, items, w["counts"], 10, w["trials"])


def dates(w) -> list:
    return [month_date(START + int(k))[:8] + "15" for k in w["month"]]


def model_cutoffs(w, seed: int) -> dict:
    """``--model-meta``'s ``cutoff`` column for ``--model-dates``: each contaminated model's true cut-off month,
    every clean model a month drawn uniformly from the same range (7–16), as a user would state one."""
    month = np.where(w["bad"], w["cutoff"], np.random.default_rng(seed + 99).integers(7, 17, M))
    return {"cutoff": [_day(month_date(START + int(k))) for k in month]}


def _day(text: str):
    import datetime

    return datetime.date.fromisoformat(text)


def run_world(kind: str, seed: int, model_dates: bool = False) -> dict:
    w = world(kind, seed)
    cov = Covariate("date", "date", dates(w), [float(START + k) for k in w["month"]])
    newest = w["release"] == "r3"
    report = run_drift(matrix_of(w), cov, list(w["release"]), list(w["release"]),
                       model_cutoffs(w, seed) if model_dates else None,
                       DriftSettings(seed=seed, check_models=0, predict=(newest, "release r3"), tau_near=model_dates))
    flagged = np.array([r["flagged"] for r in report.models])
    p = np.array([r["p_value"] for r in report.models])
    tau = [r["tau"] for r in report.models]
    pre = np.array([((w["trials"][m] > 0) & (w["month"] <= w["cutoff"][m])).sum() for m in range(M)])
    post = np.array([((w["trials"][m] > 0) & (w["month"] > w["cutoff"][m])).sum() for m in range(M)])
    big = w["bad"] & (pre >= 300)
    both = big & (post >= 20)
    within = []
    for m in np.flatnonzero(flagged & w["bad"]):
        y, mo = int(tau[m][:4]), int(tau[m][5:7])
        step_month = y * 12 + mo - 1 - START          # first month after the step
        within.append(abs(step_month - (w["cutoff"][m] + 1)) <= 1)
    # --predict-after on the flagged contaminated models: the accuracy each predicts on the newest release
    # against the truth, the expected accuracy of its true ability (no boost) on those items
    err_all = err_after = covered = 0.0
    for m in np.flatnonzero(flagged & w["bad"]):
        row = report.predictions[m]
        truth = float(np.mean(1 / (1 + np.exp(-w["a"][newest] * (w["theta"][m] - w["b"][newest])))))
        err_all += abs(row["accuracy_predicted_all"] - truth)
        err_after += abs(row["accuracy_predicted"] - truth)
        covered += row["accuracy_predicted_lo"] <= truth <= row["accuracy_predicted_hi"]
    return {"clean": int((~w["bad"]).sum()), "false": int((flagged & ~w["bad"]).sum()),
            "pred_err_all": err_all, "pred_err_after": err_after, "pred_covered": int(covered),
            "false_raw": int(((p <= 0.05) & ~w["bad"]).sum()), "bad": int(w["bad"].sum()),
            "hit": int((flagged & w["bad"]).sum()), "within": int(sum(within)), "detections": len(within),
            "bad300": int(big.sum()), "hit300": int((flagged & big).sum()), "bad_both": int(both.sum()),
            "hit_both": int((flagged & both).sum())}


def write_files(w, folder: Path) -> tuple:
    matrix = folder / "matrix.csv"
    with open(matrix, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["model", *[f"q{i:04d}" for i in range(N)]])
        for j in range(M):
            out.writerow([f"m{j:02d}", *["" if w["trials"][j, i] == 0 else int(w["counts"][j, i])
                                        for i in range(N)]])
    with open(folder / "matrix.trials.csv", "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["model", *[f"q{i:04d}" for i in range(N)]])
        for j in range(M):
            out.writerow([f"m{j:02d}", *["" if t == 0 else int(t) for t in w["trials"][j]]])
    meta = folder / "items.csv"
    with open(meta, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["item", "date", "release"])
        for i, (d, r) in enumerate(zip(dates(w), w["release"])):
            out.writerow([f"q{i:04d}", d, r])
    return matrix, meta


def _share(k: int, n: int) -> str:
    return f"{k}/{n} = {k / n:.0%}" if n else "0/0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--replicates", type=int, default=3)
    parser.add_argument("--worlds", default="null,trend,slopes,panels,contaminated",
                        help="comma-separated worlds to run (default: all five)")
    parser.add_argument("--no-timing", action="store_true", help="skip the timing of the real command")
    parser.add_argument("--model-dates", action="store_true",
                        help="give every model a cut-off date (the true one for contaminated models, a random month "
                             "7–16 for the rest) and search τ only within a month of it (--tau-near-cutoff)")
    args = parser.parse_args()
    reps = 1 if args.quick else args.replicates
    print(f"machine: {platform.processor() or platform.machine()}, {__import__('os').cpu_count()} CPUs, "
          f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d', time.gmtime())}")
    print("| world | clean models | false alarms (BH q≤.05) | rate | raw p≤.05 (± binomial s.e.) | power "
          "| τ within 1 month | s |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in args.worlds.split(","):
        t0 = time.perf_counter()
        total = {}
        for r in range(reps):
            for key, value in run_world(kind, 1000 * r + SEEDS[kind], args.model_dates).items():
                total[key] = total.get(key, 0) + value
        power = (f"{_share(total['hit'], total['bad'])}; ≥ 300 answered pre-cut-off items: "
                 f"{_share(total['hit300'], total['bad300'])}; of these, ≥ 20 answered after: "
                 f"{_share(total['hit_both'], total['bad_both'])}" if total["bad"] else "—")
        raw = total["false_raw"] / total["clean"]
        tau = (f"{total['within']}/{total['detections']} = {total['within'] / total['detections']:.0%}"
               if total["detections"] else "—")
        print(f"| {kind} | {total['clean']} | {total['false']} | {total['false'] / total['clean']:.1%} | "
              f"{total['false_raw']} = {raw:.1%} ± {np.sqrt(raw * (1 - raw) / total['clean']):.1%} | {power} | {tau} | "
              f"{time.perf_counter() - t0:.0f} |",
              flush=True)
    if total.get("hit"):
        print(f"--predict-after on the {total['hit']} flagged contaminated models (release r3, the newest): mean "
              f"|predicted − true| accuracy {total['pred_err_after'] / total['hit']:.1%} from the ability after τ, "
              f"{total['pred_err_all'] / total['hit']:.1%} from all items; the 95% interval covers the truth for "
              f"{total['pred_covered']}/{total['hit']}")
    if args.no_timing:
        return
    with tempfile.TemporaryDirectory() as tmp:
        matrix, meta = write_files(world("contaminated", 7), Path(tmp))
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "benchmeasure", "drift", str(matrix), "--item-meta", str(meta),
                               "--by", "date", "--n-trials", "10", "--allow-missing", "--output-dir",
                               str(Path(tmp) / "out"), "--quiet"], capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        print(f"benchmeasure drift on 71 × 1,055 (K = 10 or 1 per cell, holes): exit {done.returncode}, "
              f"{wall:.1f} s wall" + (f"\n{done.stderr}" if done.returncode else ""))


if __name__ == "__main__":
    main()
