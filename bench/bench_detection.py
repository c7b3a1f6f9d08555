#!/usr/bin/env python3
"""Time the stratified randomization test at the paper's Table 12 size (31 items × 32 rollouts).

Target: under 1 s for 100,000 permutations. Prints wall times of a few repeats, and the
p-value of the same data from an explicit row-shuffling implementation (fewer
permutations, it is slow) so the two can be compared.

    .venv-irt/bin/python bench/bench_detection.py [--permutations 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import runpy
import time
from pathlib import Path

import numpy as np

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.analyses.detection import stratified_test, tallies_from_outcomes  # noqa: E402


def shuffle_p_value(pre, post, permutations, seed):
    """The naive test: shuffle each item's pooled outcomes and recompute the gain."""
    rng = np.random.default_rng(seed)
    observed = np.mean([np.mean(b) - np.mean(a) for a, b in zip(pre, post)])
    pooled = [np.concatenate([a, b]) for a, b in zip(pre, post)]
    exceed = 0
    for _ in range(permutations):
        gains = []
        for a, both in zip(pre, pooled):
            shuffled = rng.permutation(both)
            gains.append(shuffled[len(a):].mean() - shuffled[:len(a)].mean())
        exceed += np.mean(gains) >= observed - 1e-12
    return (1 + exceed) / (1 + permutations)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--permutations", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shuffle-permutations", type=int, default=2_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    p_pre = rng.uniform(0.05, 0.95, 31)
    p_post = np.clip(p_pre + 0.03, 0, 1)
    pre = [(rng.random(32) < p).astype(np.int8) for p in p_pre]
    post = [(rng.random(32) < p).astype(np.int8) for p in p_post]
    data = tallies_from_outcomes(range(31), pre, post)
    times = []
    for r in range(args.repeats):
        start = time.perf_counter()
        result = stratified_test(data, args.permutations, seed=r)
        times.append(time.perf_counter() - start)
        print(f"hypergeometric: {args.permutations} permutations, 31 items x 32 rollouts: "
              f"{times[-1]:.3f} s (gain {100 * result.gain:+.3f} points, p = {result.p_value:.5f})")
    print(f"best {min(times):.3f} s, median {sorted(times)[len(times) // 2]:.3f} s (target < 1 s)")
    start = time.perf_counter()
    p_shuffle = shuffle_p_value(pre, post, args.shuffle_permutations, seed=0)
    elapsed = time.perf_counter() - start
    print(f"row shuffling: {args.shuffle_permutations} permutations: {elapsed:.3f} s "
          f"(≈ {elapsed * args.permutations / args.shuffle_permutations:.1f} s for {args.permutations}); "
          f"p = {p_shuffle:.4f}")


if __name__ == "__main__":
    main()
