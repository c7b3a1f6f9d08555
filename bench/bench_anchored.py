"""Anchored scoring on the real ChemBench matrix: predict a held-out model's full-benchmark accuracy from k anchors.

Leave-4-models-out: the 22 models are shuffled (seeded) and cut into folds of 4 held-out models (the 2
left over are always in calibration). For each fold the 1PL is fitted to the other 18 models
(``fit_1pl``, NUTS by default; the difficulties' posterior means are then held fixed); each held-out
model answers only k anchors (k = 25, 50, 100, 200 and 400), and its accuracy on all 2,854 questions is
predicted. Printed side by side, as the mean absolute error in accuracy points over held-out models
and anchor draws:

* ``raw / random``         — the model's plain accuracy on random anchors;
* ``IRT / <strategy>``     — ``score_models.py``'s prediction (:func:`benchmeasure.irt.anchored.score_model`)
                             from random, stratified and information anchors (:mod:`benchmeasure.analyses.anchors`);
* ``raw / stratified``     — plain accuracy on the stratified anchors (stratified sampling without IRT);
* a floor that says what the 1PL can reach at all: ``1PL exact`` repeats the IRT prediction on
  answers *simulated* from the 1PL itself (the model's ability from all its 2,854 answers, the
  same difficulties, which the prediction then knows exactly), so the error left is the anchors'
  own Bernoulli noise — no predictor of this model class does better on average.

The coverage of the 94% accuracy intervals is printed beside each IRT row.

    .venv-irt/bin/python bench/bench_anchored.py                 # NUTS calibration, 10 anchor draws
    .venv-irt/bin/python bench/bench_anchored.py --quick          # MAP calibration, 3 draws, k = 25, 100

Data: ChemBench (Mirza et al. 2024) via lamalab-org/irt-on-bench, MIT; see data/chembench/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import runpy
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.analyses.anchors import select_anchors  # noqa: E402
from benchmeasure.irt.anchored import ability_posterior, score_model  # noqa: E402

DATA = ROOT / "data" / "chembench" / "binary_matrix.csv"
ROWS = ["raw / random", "IRT / random", "raw / stratified", "IRT / stratified", "IRT / information",
        "floor: 1PL exact, random", "floor: 1PL exact, stratified"]


def calibrate(counts, models, items, method: str, seed: int, draws: int):
    from benchmeasure.core.matrix import ResponseMatrix
    from benchmeasure.irt.fit import fit_1pl

    result = fit_1pl(ResponseMatrix(models, items, counts, 1), method=method, seed=seed, chains=4,
                     tune=draws, draws=draws)
    return np.asarray(result.b_mean), np.asarray(result.theta_mean), result.diagnostics


def predict(y_anchor, idx, b, g):
    return score_model(y_anchor, idx, b, 1, g)


def run_model(y_full, b, theta_cal, ks, n_draws, seed, rows):
    """Accumulate |error| (points) and interval hits for one held-out model into ``rows``."""
    n = b.size
    g = np.zeros(n)
    truth = y_full.mean()
    rng = np.random.default_rng(seed)
    theta_star = ability_posterior(y_full, b, 1).mean                 # the ability all answers give
    p_star = 1 / (1 + np.exp(b - theta_star))
    for k in ks:
        for _ in range(n_draws):
            s = int(rng.integers(2**31))
            anchors = {name: select_anchors(b, k, name, s, abilities=theta_cal if name == "information" else None)
                       for name in ("random", "stratified", "information")}
            for name, idx in anchors.items():
                score = predict(y_full[idx], idx, b, g)
                rows.setdefault(("IRT / " + name, k), []).append(
                    (abs(score.accuracy_predicted_full - truth),
                     score.accuracy_predicted_low <= truth <= score.accuracy_predicted_high))
                if name != "information":
                    rows.setdefault(("raw / " + name, k), []).append((abs(y_full[idx].mean() - truth), None))
            simulated = (rng.random(n) < p_star).astype(float)
            for name in ("random", "stratified"):
                idx = anchors[name]
                score = predict(simulated[idx], idx, b, g)
                rows.setdefault((f"floor: 1PL exact, {name}", k), []).append(
                    (abs(score.accuracy_predicted_full - simulated.mean()),
                     score.accuracy_predicted_low <= simulated.mean() <= score.accuracy_predicted_high))


def table(rows, ks, title) -> str:
    lines = [title, "", "| predictor / anchors | " + " | ".join(f"k = {k}" for k in ks) + " |",
             "|---|" + "---|" * len(ks)]
    for name in ROWS:
        cells = []
        for k in ks:
            values = rows.get((name, k), [])
            if not values:
                cells.append("")
                continue
            mae = 100 * np.mean([v[0] for v in values])
            hits = [v[1] for v in values if v[1] is not None]
            cells.append(f"{mae:.2f}" + (f" ({100 * np.mean(hits):.0f}%)" if hits else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", default=str(DATA), help="wide ChemBench table, questions as rows")
    parser.add_argument("--method", choices=["nuts", "map"], default="nuts", help="calibration fit (default nuts)")
    parser.add_argument("--fit-draws", type=int, default=500, help="NUTS warm-up and draws per chain (default 500)")
    parser.add_argument("--anchor-draws", type=int, default=10, help="anchor sets per model and k (default 10)")
    parser.add_argument("--ks", default="25,50,100,200,400", help="anchor counts (default 25,50,100,200,400)")
    parser.add_argument("--holdout", type=int, default=4, help="models held out per fold (default 4)")
    parser.add_argument("--repeats", type=int, default=1, help="shuffles of the models (default 1)")
    parser.add_argument("--folds", type=int, default=None, help="run only the first F folds (default: all)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--quick", action="store_true", help="MAP calibration, 3 anchor draws, k = 25, 100")
    parser.add_argument("--markdown", default=str(ROOT / "bench" / "results" / "bench_anchored.md"),
                        help="also write the table here")
    args = parser.parse_args(argv)
    if args.quick:
        args.method, args.anchor_draws, args.ks = "map", 3, "25,100"
    ks = [int(k) for k in args.ks.split(",")]
    from benchmeasure.core.wide import read_wide_matrix

    matrix = read_wide_matrix(args.matrix, 1, items_as_rows=True)
    counts = matrix.counts.astype(float)
    n_models, n_items = counts.shape
    rng = np.random.default_rng(args.seed)
    rows: dict = {}
    start = time.perf_counter()
    load = os.getloadavg()[0]
    fits = []
    for repeat in range(args.repeats):
        order = rng.permutation(n_models)
        for fold in range(min(n_models // args.holdout, args.folds or n_models)):
            held = order[fold * args.holdout:(fold + 1) * args.holdout]
            train = np.setdiff1d(np.arange(n_models), held)
            t0 = time.perf_counter()
            b, theta, diag = calibrate(matrix.counts[train], [matrix.models[j] for j in train], matrix.items,
                                       args.method, args.seed + 100 * repeat + fold, args.fit_draws)
            fits.append((time.perf_counter() - t0, diag.get("max_r_hat"), diag.get("min_ess_bulk")))
            for j in held:
                run_model(counts[j], b, theta, ks, args.anchor_draws, int(rng.integers(2**31)), rows)
            print(f"repeat {repeat + 1} fold {fold + 1}: held out {', '.join(matrix.models[j] for j in held)}; "
                  f"fit {fits[-1][0]:.1f} s ("
                  + (f"max R-hat {fits[-1][1]:.4f}, min ESS {fits[-1][2]:.0f}" if fits[-1][1] else "MAP") + "); "
                  f"{time.perf_counter() - start:.0f} s so far", file=sys.stderr)
    held_models = len(rows[("IRT / random", ks[0])]) // args.anchor_draws
    fit = f"NUTS 4 chains x ({args.fit_draws} + {args.fit_draws})" if args.method == "nuts" else "MAP"
    title = (f"ChemBench ({n_models} models x {n_items} questions, 0/1), leave-{args.holdout}-models-out, "
             f"{held_models} held-out models x {args.anchor_draws} anchor draws; calibration: 1PL {fit}"
             f" on the other {n_models - args.holdout} models. Cells: mean absolute error of the predicted "
             "full-benchmark accuracy in points (coverage of the 94% interval).")
    text = table(rows, ks, title)
    machine = (f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
               f"load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end (shared machine); "
               f"{time.perf_counter() - start:.0f} s in all, calibration fits {np.mean([f[0] for f in fits]):.1f} s "
               f"each" + (f" (max R-hat {max(f[1] for f in fits):.4f})." if fits[0][1] else " (MAP)."))
    print(text)
    print()
    print(machine)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(text + "\n\n" + machine + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
