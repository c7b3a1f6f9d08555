"""BenchFill's item-fit keep criterion (``[search] misfit_p``): how many sound children it drops, how many
children whose answers run against ability it catches.

    .venv-irt/bin/python bench/bench_benchfill_item_fit.py [--children 2000] [--seed 0]

The panel is the simulated world's (12 models, θ evenly from −1.5 to 2.5, held fixed as BenchFill holds them). Each
child has a true b uniform on [−2, 3] (the sim benchmark's range). *Sound* children answer by the 1PL, σ(θ − b);
*reversed* ones by 1 − σ(θ − b) (a wrong key: strong models fail, weak ones succeed); *flat* ones by σ((θ − b) / 3)
(a curve a third as steep: an item that barely separates the panel). Each child is checked by
:func:`benchmeasure.benchfill.calibration.item_fit` on K trials per model, at K = 4, 8 and 32 (the simulated panel's
32 is the default rollouts there), and the share dropped at misfit_p = 0.05 is printed with its binomial standard
error.
"""

from __future__ import annotations

import argparse
import math
import runpy
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()

from bench.machine import cpu_name  # noqa: E402
from benchmeasure.benchfill.calibration import item_fit  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=2000, help="children per kind and K (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--misfit-p", type=float, default=0.05)
    args = parser.parse_args()
    theta = np.linspace(-1.5, 2.5, 12)
    abilities = {f"m{j:02d}": float(t) for j, t in enumerate(theta)}
    rng = np.random.default_rng(args.seed)
    curves = {"sound (1PL)": lambda b: 1 / (1 + np.exp(-(theta - b))),
              "reversed": lambda b: 1 - 1 / (1 + np.exp(-(theta - b))),
              "flat (slope 1/3)": lambda b: 1 / (1 + np.exp(-(theta - b) / 3))}
    print(f"machine: {cpu_name()}; {args.children} children per cell, misfit_p = {args.misfit_p}, seed {args.seed}")
    print(f"{'children':<18} {'K':>3} {'dropped':>18} {'against ability':>18} {'ms/child':>9}")
    for name, curve in curves.items():
        for k in (4, 8, 32):
            dropped = against = 0
            start = time.perf_counter()
            for _ in range(args.children):
                counts = rng.binomial(k, curve(rng.uniform(-2.0, 3.0)))
                fit = item_fit(dict(zip(abilities, counts.tolist())), abilities, k, args.misfit_p)
                dropped += fit["misfit"]
                against += fit["against_ability"]
            ms = 1000 * (time.perf_counter() - start) / args.children
            n = args.children
            print(f"{name:<18} {k:>3} {_share(dropped, n):>18} {_share(against, n):>18} {ms:>9.2f}")


def _share(count: int, n: int) -> str:
    """``count`` of ``n`` as a percentage with its binomial standard error; at 0 or n, the one-sided 95 % bound
    (the rule of three) instead."""
    if count == 0:
        return f"0 % (≤ {300 / n:.2g} %)"
    if count == n:
        return f"100 % (≥ {100 - 300 / n:.3g} %)"
    p = count / n
    return f"{100 * p:.1f} % ± {100 * math.sqrt(p * (1 - p) / n):.1f}"


if __name__ == "__main__":
    main()
