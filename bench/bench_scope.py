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

from benchmeasure.core.metrics import largest_gaps
from benchmeasure.scope import arithmetic
from benchmeasure.scope.runner import run_simulated
from benchmeasure.scope.space import space_from_dict
from benchmeasure.scope.utility import band_thresholds


def parse_strategy(spec: str) -> tuple[str, dict]:
    """``uniform:200`` → ("uniform", {"pulls_each": 200})."""
    name, _, each = spec.partition(":")
    return name, ({"pulls_each": int(each)} if each else {})


def one_run(spec: str, seed: int, budget: int, delta: float, tau: float) -> dict:
    space = space_from_dict(arithmetic.SPACE, "arithmetic")
    truth = lambda config: arithmetic.error_probability(config, seed)  # noqa: E731
    strategy, settings = parse_strategy(spec)
    pool = run_simulated(space, strategy, truth, budget, seed, delta, lambda c: tau, settings=settings)
    certified = [i for i, c in enumerate(pool.certified_at) if c is not None]
    hard = sum(truth(pool.configs[i]) >= tau for i in certified)
    times = sorted(pool.certified_at[i] for i in certified)
    return {"certified": len(certified), "hard": hard, "false": len(certified) - hard,
            "first10": times[9] if len(times) >= 10 else None, "arms": len(pool)}


PANEL = (-1.0, 0.0, 1.0)  # the band bench's panel abilities θ (held fixed)


def simulated_benchmark(seed: int) -> tuple[float, float, object]:
    """A benchmark with a hole: 80 items near b = −3 and 80 near b = 2.5; its (b_min, b_max, widest gap)."""
    rng = np.random.default_rng([seed, 5])
    b = np.concatenate([rng.normal(-3.0, 0.7, 80), rng.normal(2.5, 0.7, 80)])
    z = (b - b.min()) / (b.max() - b.min())
    return float(b.min()), float(b.max()), largest_gaps(list(z), 1)[0]


def band_run(spec: str, seed: int, budget: int, delta: float) -> dict:
    strategy, settings = parse_strategy(spec)
    space = space_from_dict(arithmetic.SPACE, "arithmetic")
    b_min, b_max, gap = simulated_benchmark(seed)
    low, high = band_thresholds(PANEL, gap.left, gap.right, b_min, b_max)

    def logit_difficulty(config):  # the configuration's true 1PL difficulty b (θ = 0: the solver's law)
        p = arithmetic.error_probability(config, seed)
        return float(np.log(p / (1 - p)))

    rates = lambda config: [1 - 1 / (1 + np.exp(logit_difficulty(config) - t)) for t in PANEL]  # noqa: E731
    pool = run_simulated(space, strategy, rates, budget, seed, delta, lambda c: (low, high), panel=len(PANEL),
                         settings=settings)
    certified = [i for i, c in enumerate(pool.certified_at) if c is not None]
    inside = sum(gap.left <= (logit_difficulty(pool.configs[i]) - b_min) / (b_max - b_min) <= gap.right
                 for i in certified)
    truly = sum(gap.left <= (logit_difficulty(space.configuration(i)) - b_min) / (b_max - b_min) <= gap.right
                for i in range(space.size))
    return {"certified": len(certified), "inside": inside, "truly": truly, "gap": (gap.left, gap.right)}


def band_table(args) -> None:
    print(f"\nband utility: panel θ = {PANEL}, band = the widest gap of a simulated 160-item benchmark "
          f"(normalized scale), budget {args.budget} calls ({len(PANEL)} per instance), δ = {args.delta}")
    print(f"{'strategy':<12} {'certified':>10} {'truly in band':>14} {'outside':>8} {'band (z)':>16} "
          f"{'configs truly in band':>22}")
    for strategy in args.strategies.split(","):
        runs = [band_run(strategy, seed, args.budget, args.delta) for seed in range(args.seeds)]
        certified = sum(r["certified"] for r in runs)
        inside = sum(r["inside"] for r in runs)
        gap = runs[0]["gap"]
        print(f"{strategy:<12} {certified / len(runs):>10.1f} {inside / len(runs):>14.1f} "
              f"{certified - inside:>8d} {f'[{gap[0]:.2f}, {gap[1]:.2f}]':>16} "
              f"{statistics.mean(r['truly'] for r in runs):>22.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--strategies", default="uniform,uniform:200,quickscope,shared",
                        help="uniform:N = uniform with N pulls per configuration")
    parser.add_argument("--only", choices=["error", "band", "both"], default="both")
    args = parser.parse_args()
    if args.only != "band":
        error_table(args)
    if args.only != "error":
        band_table(args)


def error_table(args) -> None:
    space = space_from_dict(arithmetic.SPACE, "arithmetic")
    hard_counts = [sum(arithmetic.error_probability(space.configuration(i), s) >= args.threshold
                       for i in range(space.size)) for s in range(args.seeds)]
    print(f"world: {space.size} configurations, truly hard (error ≥ {args.threshold}): "
          f"{statistics.mean(hard_counts):.0f} on average over {args.seeds} world seeds; budget {args.budget}, "
          f"δ = {args.delta}")
    header = (f"{'strategy':<12} {'true hard certified':>22} {'false pos.':>10} {'FPR':>7} "
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
        print(f"{strategy:<12} {statistics.mean(hard):>12.1f} ± {sd / np.sqrt(len(hard)):<5.1f}(se) "
              f"{false:>10d} {false / certified if certified else 0.0:>7.3f} "
              f"{sum(r['false'] > 0 for r in runs):>8d}/{len(runs):<5d} {first:>27} "
              f"{statistics.mean(r['arms'] for r in runs):>8.0f} {seconds:>6.1f}")
    if "shared" in results:
        for other in ("quickscope", "uniform", "uniform:200"):
            if other in results:
                ratio = results["shared"] / results[other] if results[other] else float("inf")
                print(f"shared / {other}: {ratio:.1f}× the truly hard configurations certified")


if __name__ == "__main__":
    main()
