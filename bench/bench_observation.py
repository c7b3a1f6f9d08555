"""Coverage of the difficulties' intervals under overdispersed repeated samples: binomial vs beta-binomial.

Data of known truth: θ_j, b_i ~ Normal(0, 1) (the fit's priors), p_ij = σ(θ_j − b_i), and the K trials of
one model on one item share a success rate π_ij ~ Beta(p_ij·c, (1 − p_ij)·c), c = (1 − ρ)/ρ (trials
correlated within a cell, e.g. a model that either knows an item or does not); Y_ij ~ Binomial(K, π_ij).
Each replicate is fitted twice by NUTS with the same settings: the paper's binomial 1PL (collapsed
route, trials independent) and ``--observation beta-binomial`` (joint route, ρ ~ Beta(1, 1)). Printed side
by side: the share of true b_i inside each fit's equal-tailed 90% interval (with its binomial standard
error over the items), the mean interval width, the mean absolute error of b_mean, ρ's posterior mean,
and the fit time.

    .venv-irt/bin/python bench/bench_observation.py                      # 3 replicates, 20 models x 40 items, K = 8
    .venv-irt/bin/python bench/bench_observation.py --replicates 1 --rho 0.3 --quick
"""

from __future__ import annotations

import argparse
import runpy
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.core.matrix import ResponseMatrix  # noqa: E402
from benchmeasure.irt.fit import fit_1pl  # noqa: E402
from benchmeasure.irt.observation import OBSERVATIONS  # noqa: E402


def simulate(seed, n_models, n_items, k, rho):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_models), rng.normal(size=n_items)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    counts = OBSERVATIONS["beta-binomial"].simulate(rng, k, p, {"rho": rho})
    matrix = ResponseMatrix([f"m{j}" for j in range(n_models)], [f"q{i}" for i in range(n_items)], counts, k)
    return matrix, b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=3)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--n-trials", type=int, default=8)
    parser.add_argument("--rho", type=float, default=0.3)
    parser.add_argument("--quick", action="store_true", help="2 chains x (300 + 300) instead of 4 x (1000 + 1000)")
    args = parser.parse_args()
    nuts = dict(chains=2, tune=300, draws=300) if args.quick else dict(chains=4, tune=1000, draws=1000)
    rows = {name: {"inside": 0, "total": 0, "width": [], "mae": [], "rho": [], "time": []}
            for name in ("binomial", "beta-binomial")}
    for r in range(args.replicates):
        matrix, b_true = simulate(100 + r, args.models, args.items, args.n_trials, args.rho)
        for name, row in rows.items():
            start = time.perf_counter()
            fit = fit_1pl(matrix, observation=name, seed=r, **nuts)
            row["time"].append(time.perf_counter() - start)
            low, high = fit.interval("b", 0.90)
            row["inside"] += int(((low <= b_true) & (b_true <= high)).sum())
            row["total"] += b_true.size
            row["width"].append(float(np.mean(high - low)))
            row["mae"].append(float(np.mean(np.abs(fit.b_mean - b_true))))
            if "observation" in fit.diagnostics:
                row["rho"].append(fit.diagnostics["observation"]["rho"]["mean"])
            print(f"replicate {r}: {name:13s} R-hat {fit.diagnostics['max_r_hat']:.3f} "
                  f"divergences {fit.diagnostics['divergences']}", flush=True)
    print(f"\n{args.replicates} replicates of {args.models} models x {args.items} items, K = {args.n_trials}, "
          f"true rho = {args.rho}; NUTS {nuts}")
    print(f"{'observation':14s} {'90% coverage of b':>20s} {'mean width':>11s} {'MAE b':>7s} {'rho mean':>9s} "
          f"{'fit s':>6s}")
    for name, row in rows.items():
        share = row["inside"] / row["total"]
        se = np.sqrt(share * (1 - share) / row["total"])
        rho = f"{np.mean(row['rho']):.3f}" if row["rho"] else "-"
        print(f"{name:14s} {share:>12.3f} ± {se:.3f} {np.mean(row['width']):>11.3f} {np.mean(row['mae']):>7.3f} "
              f"{rho:>9s} {np.mean(row['time']):>6.1f}")


if __name__ == "__main__":
    main()
