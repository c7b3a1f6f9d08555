"""check-fit's detectors: planted defects in the shared real matrices, and false-alarm rates in null worlds.

    .venv-irt/bin/python bench/bench_check_fit.py [--data /work/shared/data] [--matrices chembench gsm8k …]

For each real matrix (ChemBench wide table; MMLU-Pro, GSM8K and MATH level 5 long files with a trial column of 0):

1. fit the unmodified matrix (NUTS, collapsed route, 2 chains × 300 + 300) and check it: the items it flags are
   *real suspects* and do not count against precision;
2. plant defects — 2 % of the non-constant items inverted for every model (a wrong key: y → K − y), one mid-panel
   model's present cells shuffled across items (mis-scored), 5 items with accuracy ≥ 0.25 set to 0 for every model
   (unsolvable) — refit, check, and score each detector's precision and recall;
3. null world *at the fit*: data simulated from the unmodified fit's posterior means with the same panel, holes and
   K, refitted and checked: every flag is a false alarm.

Then two worlds *unlike* the fits (abilities bimodal or skewed, difficulties uniform on [−4, 4]), simulated,
fitted and checked. Prints the planted-defect table and the false-alarm rates.
"""

from __future__ import annotations

import argparse
import csv
import os
import runpy
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.analyses.fit_inputs import FitInputs, ParameterTable  # noqa: E402
from benchmeasure.analyses.model_fit import run_check  # noqa: E402
from benchmeasure.core.matrix import ResponseMatrix, read_matrix_allowing_holes  # noqa: E402
from benchmeasure.irt.fit import fit_1pl  # noqa: E402

SOURCES = {"chembench": "chembench/binary_matrix.csv", "gsm8k": "zeroeval/gsm8k/responses_long.csv",
           "math_l5": "zeroeval/math_l5/responses_long.csv", "mmlu_pro": "mmlu_pro/responses_long.csv"}
FIT = {"chains": 2, "tune": 300, "draws": 300}


def load(data: Path, name: str, work: Path) -> ResponseMatrix:
    """The shared matrix as the project's commands read it (prepare, then the reader with holes)."""
    import subprocess

    source = data / SOURCES[name]
    out = work / f"{name}.csv"
    if name == "chembench":
        argv = ["prepare", "--from", "wide", str(source), "--items-as-rows", "--n-trials", "1", "--output", str(out)]
    else:
        long = work / f"{name}_long.csv"
        with open(source, encoding="utf-8", newline="") as src, open(long, "w", encoding="utf-8") as dst:
            rows = csv.reader(src)
            writer = csv.writer(dst, lineterminator="\n")
            writer.writerow([*next(rows), "trial"])
            for row in rows:
                writer.writerow([*row, "0"])
        argv = ["prepare", str(long), "--n-trials", "1", "--allow-missing", "--output", str(out)]
    subprocess.run([sys.executable, "-m", "benchmeasure", *argv], check=True, capture_output=True, cwd=ROOT)
    return read_matrix_allowing_holes(out, 1)


PLUG_IN = False   # --plug-in: the check at the posterior means (one point) instead of averaging over draws


def fit_and_check(matrix: ResponseMatrix, seed: int):
    """NUTS fit in process, then the check on its draws; returns (check, seconds of fit, seconds of check)."""
    from benchmeasure.irt.draws import Draws

    start = time.perf_counter()
    result = fit_1pl(matrix, seed=seed, **FIT)
    fitted = time.perf_counter() - start
    draws = Draws.of(result.posterior)
    theta = draws.values("theta").reshape(-1, len(matrix.models))
    b = draws.values("b").reshape(-1, len(matrix.items))
    if PLUG_IN:
        theta, b = result.theta_mean[None, :], result.b_mean[None, :]
    inputs = FitInputs(matrix, "(in memory)", ParameterTable(matrix.models, result.theta_mean, result.theta_sd),
                       ParameterTable(matrix.items, result.b_mean, result.b_sd), np.zeros(len(matrix.items)), None,
                       "posterior draws of the in-process fit", samples=(theta, b))
    start = time.perf_counter()
    check = run_check(inputs, draws=200, seed=seed)
    return check, result, fitted, time.perf_counter() - start


def trials_of(matrix: ResponseMatrix) -> np.ndarray:
    return np.asarray(matrix.cell_trials() * np.ones(matrix.counts.shape, dtype=np.int64), dtype=np.int64)


def plant(matrix: ResponseMatrix, rng, fraction: float = 0.02, unsolvable: int = 5):
    """The planted matrix and what was planted: inverted items, the shuffled model, unsolvable items."""
    k = trials_of(matrix)
    y = matrix.counts.copy()
    accuracy = y.sum(axis=0) / np.maximum(k.sum(axis=0), 1)
    varied = np.flatnonzero((accuracy > 0) & (accuracy < 1))
    inverted = rng.choice(varied, size=max(1, round(fraction * len(matrix.items))), replace=False)
    y[:, inverted] = np.where(k[:, inverted] > 0, k[:, inverted] - y[:, inverted], 0)
    candidates = np.setdiff1d(np.flatnonzero(accuracy >= 0.25), inverted)
    dead = rng.choice(candidates, size=unsolvable, replace=False)
    y[:, dead] = 0
    model_accuracy = y.sum(axis=1) / np.maximum(k.sum(axis=1), 1)
    shuffled = int(np.argsort(model_accuracy)[len(model_accuracy) // 2])
    order = rng.permutation(len(matrix.items))   # the row's cells (answers and their trials) move together
    y[shuffled] = y[shuffled, order]
    trials = k.copy()
    trials[shuffled] = trials[shuffled, order]
    planted = ResponseMatrix(matrix.models, matrix.items, y, matrix.n_trials,
                             None if matrix.trials is None else trials)
    return planted, set(matrix.items[i] for i in inverted), set(matrix.items[i] for i in dead), matrix.models[shuffled]


def simulate_null(matrix: ResponseMatrix, theta, b, rng) -> ResponseMatrix:
    k = trials_of(matrix)
    p = 1.0 / (1.0 + np.exp(-(np.asarray(theta)[:, None] - np.asarray(b)[None, :])))
    return ResponseMatrix(matrix.models, matrix.items, rng.binomial(k, p), matrix.n_trials, matrix.trials)


def score(flagged: set, truth: set, suspects: set) -> tuple:
    """(precision, recall): flags on real suspects count neither way."""
    hits = len(flagged & truth)
    counted = len(flagged - (suspects - truth))
    return (hits / counted if counted else float("nan")), (hits / len(truth) if truth else float("nan"))


def null_rates(check) -> dict:
    items = len(check.items)
    return {"item_flag_rate": len(check.flagged_items()) / items, "items": items,
            "flagged": len(check.flagged_items()),
            "against_rate": sum(row["against_ability"] for row in check.items) / items,
            "models_flagged": len(check.flagged_models()), "models": len(check.models),
            "any_item_flag": bool(check.flagged_items())}


def world(name: str, models: int, items: int, k: int, seed: int) -> ResponseMatrix:
    rng = np.random.default_rng(seed)
    if name == "bimodal":
        theta = np.where(rng.random(models) < 0.5, rng.normal(-2.0, 0.5, models), rng.normal(2.0, 0.7, models))
    else:  # skewed: a long tail of weak models
        theta = 1.5 - rng.gamma(1.5, 1.2, models)
    b = rng.uniform(-4.0, 4.0, items)
    trials = np.full((models, items), k)
    trials[rng.random((models, items)) < 0.01] = 0
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    return ResponseMatrix([f"m{j}" for j in range(models)], [f"q{i}" for i in range(items)], rng.binomial(trials, p),
                          k, trials)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="/work/shared/data")
    parser.add_argument("--matrices", nargs="+", default=["chembench", "gsm8k", "math_l5", "mmlu_pro"],
                        choices=sorted(SOURCES))
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--null-worlds", type=int, default=2, help="null worlds per matrix and per unlike kind")
    parser.add_argument("--plug-in", action="store_true",
                        help="check at the posterior means instead of averaging over 200 draws (a comparison)")
    args = parser.parse_args()
    global PLUG_IN
    PLUG_IN = args.plug_in
    rng = np.random.default_rng(args.seed)
    rows, nulls = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.matrices:
            matrix = load(Path(args.data), name, Path(tmp))
            clean, result, fit_s, check_s = fit_and_check(matrix, args.seed)
            suspects = {row["item"] for row in clean.flagged_items()}
            suspect_models = {row["model"] for row in clean.flagged_models()}
            planted, inverted, dead, shuffled = plant(matrix, rng)
            check, _, _, pcheck_s = fit_and_check(planted, args.seed + 1)
            against = {row["item"] for row in check.items if row["against_ability"]}
            anyflag = {row["item"] for row in check.flagged_items()}
            flagged_models = {row["model"] for row in check.flagged_models()}
            running = {row["item"] for row in clean.items if row["point_biserial"] < 0}   # pbis < 0 when clean
            k = trials_of(matrix)
            accuracy = dict(zip(matrix.items, matrix.counts.sum(axis=0) / np.maximum(k.sum(axis=0), 1)))
            middle = {item for item in inverted if 0.1 <= accuracy[item] <= 0.9}
            never, clean_never = check.whole["never_solved"], clean.whole["never_solved"]
            rows.append({
                "matrix": name, "shape": f"{len(matrix.models)}×{len(matrix.items)}", "suspects": len(suspects),
                "running": len(running), "keys": len(inverted), "middle": len(middle),
                "against": score(against, inverted, suspects), "against_running": score(against, inverted, running),
                "recall_middle": len(against & middle) / max(len(middle), 1),
                "any": score(anyflag, inverted, suspects | dead),
                "never": f"{never['observed']} vs {never['replicated_mean']:.0f} ({clean_never['observed']}); "
                         f"{len(anyflag & dead)} of {len(dead)}",
                "shuffled": shuffled in flagged_models,
                "other_models": len(flagged_models - suspect_models - {shuffled}), "clean_models": len(suspect_models),
                "table_p": check.whole["ability_by_difficulty"]["p_value"],
                "clean_table_p": clean.whole["ability_by_difficulty"]["p_value"],
                "fit_s": fit_s, "check_s": pcheck_s})
            for w in range(args.null_worlds):
                null = simulate_null(matrix, result.theta_mean, result.b_mean, rng)
                ncheck, _, _, _ = fit_and_check(null, args.seed + 2 + w)
                nulls.append((f"{name} (at the fit) #{w + 1}", null_rates(ncheck)))
            print(f"done {name}: fit {fit_s:.0f} s, check {check_s:.1f} s", file=sys.stderr, flush=True)
        for w in range(args.null_worlds):
            for label, models, items, k in (("bimodal", 30, 600, 1), ("skewed", 30, 600, 3)):
                ncheck, _, _, _ = fit_and_check(world(label, models, items, k, args.seed + w), args.seed + 3 + w)
                nulls.append((f"{label} θ, b ~ U(−4, 4), {models}×{items}, K={k} (unlike) #{w + 1}",
                              null_rates(ncheck)))
    print("\nPlanted defects (2 % wrong keys, 1 shuffled model, 5 unsolvable items); FDR 0.05")
    print("| matrix | M×N | wrong keys (acc. 0.1–0.9) | clean flagged / pbis < 0 | against ability P / R "
          "(suspects = clean flagged) | P (suspects = pbis < 0 when clean) | R on acc. 0.1–0.9 | any item flag P / R | "
          "never solved: planted vs replicated (clean); planted unsolvable flagged | shuffled model flagged | "
          "other models flagged (clean) | ability × difficulty p, clean → planted | check s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['matrix']} | {r['shape']} | {r['keys']} ({r['middle']}) | {r['suspects']} / {r['running']} | "
              f"{r['against'][0]:.2f} / {r['against'][1]:.2f} | {r['against_running'][0]:.2f} | "
              f"{r['recall_middle']:.2f} | {r['any'][0]:.2f} / {r['any'][1]:.2f} | {r['never']} | "
              f"{'yes' if r['shuffled'] else 'no'} | {r['other_models']} ({r['clean_models']}) | "
              f"{r['clean_table_p']:.3f} → {r['table_p']:.3f} | {r['check_s']:.1f} |")
    print("\nNull worlds (every flag is a false alarm)")
    print("| world | items flagged | against ability | models flagged | any item flagged |")
    print("|---|---|---|---|---|")
    for label, n in nulls:
        print(f"| {label} | {n['item_flag_rate']:.2%} | {n['against_rate']:.2%} | "
              f"{n['models_flagged']} of {n['models']} | {'yes' if n['any_item_flag'] else 'no'} |")
    items = sum(n["items"] for _, n in nulls)
    print(f"\nall null worlds: {sum(n['flagged'] for _, n in nulls)} of {items:,} items flagged "
          f"({sum(n['flagged'] for _, n in nulls) / items:.3%}), "
          f"{sum(n['models_flagged'] for _, n in nulls)} of {sum(n['models'] for _, n in nulls)} models; "
          f"worlds with any item flag: {sum(n['any_item_flag'] for _, n in nulls)} of {len(nulls)}")
    print(f"\nmachine: {os.cpu_count()} CPUs; NUTS {FIT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
