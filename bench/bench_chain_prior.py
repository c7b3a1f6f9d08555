"""The chain under the paper's prior and the hierarchical prior, side by side (``chain --prior``, issue 51).

For each shared real suite (the checkout's bundled ``data/``: ChemBench, one benchmark of 22
models × 2,854 items; ZeroEval GSM8K then MATH level 5, 57 models with holes; MMLU-Pro's 14 categories with
``--mmlu-pro``), the Growing Pains protocol (:func:`benchmeasure.suite.chain.run_chain`, what ``benchmeasure chain``
runs) at ``--anchors`` anchors per benchmark over ``--splits`` random splits of the models (25 % held out), once
per prior, on the same splits (the split generator is seeded and draws nothing else). Printed per suite and method:
the MAE of the predicted accuracy in points and the 90 % intervals' coverage, each as mean ± standard error over
the splits, under both priors; the per-split paired difference of the MAE (hierarchical − paper); and, per prior,
the paired difference of the method's MAE and the raw anchor accuracy's on the same anchors (the issue's goal:
MAE ≤ raw, i.e. a difference ≤ 0, and coverage in 85–97 % at 100 anchors). The hierarchical prior's
hyperparameters are those of the calibration on every model. The anchors are stratified on each prior's own
calibrated difficulties (as ``chain`` chooses them), so the raw anchor accuracy's row differs between the priors
too: compare each prior's methods with its own raw row. For ``blended`` it also prints the weight λ of the raw
accuracy that the calibration models' cross-validation chose (:mod:`benchmeasure.suite.chain_blend`).

    .venv-irt/bin/python bench/bench_chain_prior.py                    # 100 anchors, 10 splits, ChemBench + ZeroEval
    .venv-irt/bin/python bench/bench_chain_prior.py --only zeroeval --splits 3
"""

from __future__ import annotations

import argparse
import csv
import os
import runpy
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))  # CPU name and versions, shared by the benches
cpu_name, versions = _machine["cpu_name"], _machine["versions"]

from benchmeasure.suite.chain import METHODS, calibrate_suite, run_chain, single_thread  # noqa: E402
from benchmeasure.suite.reader import Suite, read_suite  # noqa: E402

DATA = ROOT / "data"   # the bundled copies of the shared real matrices (/work/shared/data holds the same data)
PRIORS = ("paper", "hierarchical")


def chembench() -> tuple[Suite, list]:
    """ChemBench's wide table (items as rows, models as columns, 0.0/1.0 cells) as a one-benchmark suite."""
    with open(DATA / "chembench" / "binary_matrix.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    counts = np.array([[int(float(v)) for v in r[1:]] for r in rows[1:]]).T
    items = [f"chembench-{r[0]}" for r in rows[1:]]
    suite = Suite(rows[0][1:], items, ["chembench"], np.zeros(len(items), dtype=np.int64), counts,
                  np.ones_like(counts))
    return suite, ["chembench"]


def zeroeval() -> tuple[Suite, list]:
    folder = DATA / "zeroeval"
    return read_suite([str(folder / "gsm8k.csv.gz"), str(folder / "math_l5.csv.gz")]), ["gsm8k", "math_l5"]


def mmlu_pro() -> tuple[Suite, list]:
    suite = read_suite([str(DATA / "mmlu_pro" / "responses.csv.gz")])
    return suite, list(suite.benchmarks)


SUITES = {"chembench": chembench, "zeroeval": zeroeval, "mmlu_pro": mmlu_pro}


def per_split(rows: list, method: str) -> tuple[np.ndarray, np.ndarray]:
    """MAE (points) and coverage per split of one method's rows."""
    splits = sorted({r[0] for r in rows})
    mae, cover = [], []
    for s in splits:
        mine = np.array([r[6:10] for r in rows if r[0] == s and r[4] == method], dtype=float)
        mae.append(np.mean(np.abs(mine[:, 0] - mine[:, 3])) * 100)
        cover.append(np.mean((mine[:, 1] <= mine[:, 3]) & (mine[:, 3] <= mine[:, 2])))
    return np.array(mae), np.array(cover)


def mean_se(x: np.ndarray) -> str:
    se = x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else float("nan")
    return f"{x.mean():.2f} ± {se:.2f}"


def run(name: str, args) -> None:
    suite, order = SUITES[name]()
    rows, seconds, hyper, blend = {}, {}, None, {prior: [] for prior in PRIORS}
    for prior in PRIORS:
        start = time.perf_counter()
        with single_thread():
            rows[prior] = run_chain(suite, order, [args.anchors], args.splits, args.seed, prior=prior,
                                    blend_log=blend[prior])
            if prior == "hierarchical":
                hyper = calibrate_suite(suite, order, prior=prior)[1]
        seconds[prior] = time.perf_counter() - start
    held = len({r[3] for r in rows["paper"] if r[0] == 0})
    print(f"\n{name}: {len(suite.models)} models x {len(suite.items)} items, order {','.join(order)}; "
          f"{args.anchors} anchors per benchmark, {args.splits} splits ({held} held-out models each), seed "
          f"{args.seed}; {len(rows['paper'])} / {len(rows['hierarchical'])} prediction rows; chain "
          f"{seconds['paper']:.0f} s (paper) / {seconds['hierarchical']:.0f} s (hierarchical)")
    print(f"  hierarchical hyperparameters (every model): sigma_theta {hyper['sigma_theta']:.2f}; "
          + "; ".join(f"{b}: mu_b {v['mu_b']:.2f}, sigma_b {v['sigma_b']:.2f}"
                      for b, v in hyper["per_benchmark"].items()))
    for prior in PRIORS:
        lam = np.array([b["lambda"] for b in blend[prior]])
        print(f"  blended, {prior} prior: weight of the raw anchor accuracy lambda mean {lam.mean():.2f} (range "
              f"{lam.min():.2f}-{lam.max():.2f}) over {lam.size} (split, step, benchmark) choices, each on "
              f"{min(b['models'] for b in blend[prior])}-{max(b['models'] for b in blend[prior])} calibration models")
    raw = {prior: per_split(rows[prior], "anchor_accuracy")[0] for prior in PRIORS}
    print(f"  {'method':<17} {'MAE paper':>13} {'MAE hier.':>13} {'hier - paper':>14}  {'cover paper':>13} "
          f"{'cover hier.':>13}  {'- raw, paper':>14} {'- raw, hier.':>14}")
    for method in METHODS:
        if not any(r[4] == method for r in rows["paper"]):
            continue
        (mp, cp), (mh, ch) = per_split(rows["paper"], method), per_split(rows["hierarchical"], method)
        versus = "" if method == "anchor_accuracy" else \
            f"{mean_se(mp - raw['paper']):>14} {mean_se(mh - raw['hierarchical']):>14}"
        print(f"  {method:<17} {mean_se(mp):>13} {mean_se(mh):>13} {mean_se(mh - mp):>14}  {mean_se(cp):>13} "
              f"{mean_se(ch):>13}  {versus}")
    sys.stdout.flush()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--anchors", type=int, default=100, help="anchors per benchmark (default 100)")
    parser.add_argument("--splits", type=int, default=10, help="random splits of the models (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", action="append", choices=SUITES, help="one suite (repeatable)")
    parser.add_argument("--mmlu-pro", action="store_true", help="also MMLU-Pro (14 benchmarks: many minutes more)")
    args = parser.parse_args(argv)
    names = args.only or ["chembench", "zeroeval"] + (["mmlu_pro"] if args.mmlu_pro else [])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs, load average {load:.1f} at start; "
          f"{versions(['numpy', 'scipy'])}; data {DATA}")
    print("MAE in points and 90 % coverage: mean ± standard error over splits (paired: the same splits under both "
          "priors)")
    start = time.perf_counter()
    for name in names:
        run(name, args)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n{time.perf_counter() - start:.0f} s in all; load average {load:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
