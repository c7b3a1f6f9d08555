"""Bench: uniform vs QuickScope-style vs the shared-strength strategy on a simulated dynamic benchmark.

World: the built-in arithmetic template's space (10 × 10 × 4 × 25 = 10,000 configurations) with its known
error law (:func:`benchmeasure.scope.arithmetic.error_probability`, world seed = run seed), so each
configuration's true error rate is known. Each pull is a Bernoulli draw from it (no server: the bench
measures allocation; the HTTP path is tested in tests/test_scope.py). Same budget, δ, threshold and the
same certifier for every strategy.

    PYTHONPATH=. python bench/bench_scope.py --seeds 10 --budget 20000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmeasure.scope import arithmetic
from benchmeasure.scope.runner import run_simulated
from benchmeasure.scope.space import space_from_dict


def one_run(strategy: str, seed: int, budget: int, delta: float, tau: float) -> dict:
    space = space_from_dict(arithmetic.SPACE, "arithmetic")
    truth = lambda config: arithmetic.error_probability(config, seed)  # noqa: E731
    pool = run_simulated(space, strategy, truth, budget, seed, delta, lambda c: tau)
    certified = [i for i, c in enumerate(pool.certified_at) if c is not None]
    hard = sum(truth(pool.configs[i]) >= tau for i in certified)
    times = sorted(pool.certified_at[i] for i in certified)
    return {"certified": len(certified), "hard": hard, "false": len(certified) - hard,
            "first10": times[9] if len(times) >= 10 else None, "arms": len(pool)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--strategies", default="uniform,quickscope,shared")
    args = parser.parse_args()
    space = space_from_dict(arithmetic.SPACE, "arithmetic")
    hard_counts = [sum(arithmetic.error_probability(space.configuration(i), s) >= args.threshold
                       for i in range(space.size)) for s in range(args.seeds)]
    print(f"world: {space.size} configurations, truly hard (error ≥ {args.threshold}): "
          f"{statistics.mean(hard_counts):.0f} on average over {args.seeds} world seeds; budget {args.budget}, "
          f"δ = {args.delta}")
    header = (f"{'strategy':<11} {'true hard certified':>22} {'false pos.':>10} {'FPR':>7} "
              f"{'runs with a FP':>14} {'pulls to 10 cert. (median)':>27} {'configs':>8} {'s/run':>6}")
    print(header)
    results = {}
    for strategy in args.strategies.split(","):
        start = time.perf_counter()
        runs = [one_run(strategy, seed, args.budget, args.delta, args.threshold) for seed in range(args.seeds)]
        seconds = (time.perf_counter() - start) / args.seeds
        hard = [r["hard"] for r in runs]
        false = sum(r["false"] for r in runs)
        certified = sum(r["certified"] for r in runs)
        firsts = [r["first10"] for r in runs if r["first10"] is not None]
        first = f"{statistics.median(firsts):.0f} ({len(firsts)}/{len(runs)} runs)" if firsts else "never"
        sd = statistics.stdev(hard) if len(hard) > 1 else 0.0
        results[strategy] = statistics.mean(hard)
        print(f"{strategy:<11} {statistics.mean(hard):>12.1f} ± {sd / np.sqrt(len(hard)):<5.1f}(se) "
              f"{false:>10d} {false / certified if certified else 0.0:>7.3f} "
              f"{sum(r['false'] > 0 for r in runs):>8d}/{len(runs):<5d} {first:>27} "
              f"{statistics.mean(r['arms'] for r in runs):>8.0f} {seconds:>6.1f}")
    if "shared" in results:
        for other in ("quickscope", "uniform"):
            if other in results:
                ratio = results["shared"] / results[other] if results[other] else float("inf")
                print(f"shared / {other}: {ratio:.1f}× the truly hard configurations certified")


if __name__ == "__main__":
    main()
