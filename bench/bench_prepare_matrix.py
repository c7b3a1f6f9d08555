"""Benchmark scripts/prepare_response_matrix.py at scale (issue: 400 models × 10,000 items × 5 trials).

Generates a seeded long-format responses CSV (20 million rows by default), then runs, each
in a fresh process so that peak memory (max RSS) is its own:

* ours      — ``scripts/prepare_response_matrix.py`` (validation included), and
* naive     — the obvious pandas alternative: ``read_csv`` with object strings, then
              ``groupby(['model', 'item_id']).correct.sum().unstack()`` (no validation).

Targets on a 2-core machine: under 60 s and under 4 GB peak for ours.

    .venv-irt/bin/python bench/bench_prepare_matrix.py              # full size
    .venv-irt/bin/python bench/bench_prepare_matrix.py --models 40   # 2 million rows
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

NAIVE = """
import sys, pandas as pd
frame = pd.read_csv(sys.argv[1], dtype=str)
frame["correct"] = frame["correct"].astype(int)
frame.groupby(["model", "item_id"], sort=False)["correct"].sum().unstack().to_csv(sys.argv[2])
"""


def write_responses(path: Path, n_models: int, n_items: int, n_trials: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_models)
    b = rng.normal(size=n_items)
    prefixes = [f"item-{i:05d},{t}" for i in range(n_items) for t in range(n_trials)]
    with open(path, "w", encoding="utf-8") as out:
        out.write("model,item_id,trial,correct\n")
        for j in range(n_models):
            p = 1 / (1 + np.exp(-(theta[j] - b)))
            outcome = (rng.random((n_items, n_trials)) < p[:, None]).ravel().astype(np.int8)
            name = f"model-{j:03d}"
            out.write("".join(f"{name},{prefix},{c}\n" for prefix, c in zip(prefixes, outcome.tolist())))
    return n_models * n_items * n_trials


def run_measured(command: list) -> tuple[float, float]:
    """Wall seconds and peak RSS (GB) of one child process (its own rusage, via wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed: {' '.join(command)}\n{proc.stderr.read().decode()}")
    return wall, usage.ru_maxrss / 1024**2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=400)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-naive", action="store_true", help="measure only our script")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        responses = Path(tmp) / "responses.csv"
        start = time.perf_counter()
        rows = write_responses(responses, args.models, args.items, args.trials, args.seed)
        size = os.path.getsize(responses) / 1024**2
        print(f"generated {rows:,} rows ({size:,.0f} MB) in {time.perf_counter() - start:.1f} s")
        ours = run_measured([sys.executable, str(ROOT / "scripts/prepare_response_matrix.py"), str(responses),
                             "--n-trials", str(args.trials), "--output", str(Path(tmp) / "ours.csv"), "--quiet"])
        results = [("prepare_response_matrix.py (validated)", *ours)]
        if not args.skip_naive:
            naive = run_measured([sys.executable, "-c", NAIVE, str(responses), str(Path(tmp) / "naive.csv")])
            results.append(("naive pandas groupby (no checks)", *naive))
    print(f"\n{args.models} models x {args.items} items x {args.trials} trials = {rows:,} rows; "
          f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    print(f"{'method':<42} {'wall s':>8} {'peak GB':>8}")
    for name, wall, peak in results:
        print(f"{name:<42} {wall:8.1f} {peak:8.2f}")


if __name__ == "__main__":
    main()
