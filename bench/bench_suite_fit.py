"""Scale of the suite fit with holes: models × items × share of absent cells → wall time, memory, accuracy.

Each row simulates a 1PL suite (θ ~ N(0, 1), b ~ N(0, 1.5²), one trial per cell), removes a share of the cells at
random (planned holes), and fits every difficulty by ``fit-suite``'s route (:func:`benchmeasure.suite.fit.
fit_suite`: marginal maximum a posteriori by EM, masked likelihood). Printed side by side with what a user
without hole support must do — keep only the items every model answered (complete-case analysis) — as the items
left and the error of the difficulties against the truth (RMSE over the items each route estimates).

    .venv-irt/bin/python bench/bench_suite_fit.py            # 29 × 12,032 (0.5 %), 100 × 2,000, 400 × 5,000 (50 %)
    .venv-irt/bin/python bench/bench_suite_fit.py --quick        # the first two rows
"""

from __future__ import annotations

import argparse
import os
import resource
import runpy
import sys
import time
from pathlib import Path

import numpy as np

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["use_checkout"]()
from benchmeasure.suite.chain import single_thread  # noqa: E402
from benchmeasure.suite.fit import fit_suite  # noqa: E402
from benchmeasure.suite.reader import Suite  # noqa: E402

CONFIGS = [(29, 12_032, 0.005), (100, 2_000, 0.5), (400, 5_000, 0.5)]


def simulate(models: int, items: int, holes: float, seed: int) -> tuple[Suite, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(0, 1, models), rng.normal(0, 1.5, items)
    correct = (rng.random((models, items)) < 1 / (1 + np.exp(b[None] - theta[:, None]))).astype(np.int32)
    trials = (rng.random((models, items)) >= holes).astype(np.int32)
    trials[np.arange(models), rng.integers(0, items, models)] = 1          # every model answers something
    suite = Suite([f"m{j}" for j in range(models)], [f"q{i}" for i in range(items)], ["sim"],
                  np.zeros(items, dtype=np.int64), correct * trials, trials)
    return suite, b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print("| models × items | absent | fit-suite (EM, masked): wall | peak RSS | EM iterations | RMSE of b | "
          "complete-case: items left | RMSE of b |")
    print("|---|---|---|---|---|---|---|---|")
    for models, items, holes in CONFIGS[:2] if args.quick else CONFIGS:
        suite, truth = simulate(models, items, holes, args.seed)
        start = time.perf_counter()
        with single_thread():
            fit = fit_suite(suite)
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rmse = float(np.sqrt(np.mean((fit.b - fit.b.mean() - (truth - truth.mean())) ** 2)))
        complete = np.flatnonzero((suite.trials > 0).all(axis=0))
        if complete.size >= 2:
            kept = Suite(suite.models, [suite.items[i] for i in complete], ["sim"], np.zeros(complete.size, np.int64),
                         suite.counts[:, complete], suite.trials[:, complete])
            with single_thread():
                cc = fit_suite(kept).b
            cc_rmse = f"{np.sqrt(np.mean((cc - cc.mean() - (truth[complete] - truth[complete].mean())) ** 2)):.3f}"
        else:
            cc_rmse = "— (nothing left to fit)"
        print(f"| {models} × {items:,} | {holes:.1%} | {wall:.1f} s | {peak:.0f} MB (process) | {fit.iterations} | "
              f"{rmse:.3f} | {complete.size:,} | {cc_rmse} |")
    print(f"\nMachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; load average {load:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end (shared machine). RMSE after centring both (the scale's origin is set "
          "by the prior).")


if __name__ == "__main__":
    main()
