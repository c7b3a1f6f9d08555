#!/usr/bin/env python3
"""What the model-fit check that ``benchmeasure fit`` runs by default costs: the default ChemBench fit (22 × 2,854,
K = 1, 4 chains × (1,000 + 1,000), seed 2026, calibrated intervals) with the check and with ``--no-check-fit``.

Each run is the command users run, in a fresh process (``python -m benchmeasure fit``); the two modes alternate, so
a change in the machine's load falls on both. One untimed run first warms the kernel cache. Per mode the table gives
the median and range of the process's wall time and CPU time (user + system, from ``getrusage`` of the child), and
the check's own time as the fit records it (``diagnostics.json → check_fit``: wall and CPU seconds of the check,
not counting the writing of ``check_fit/``); then the mean difference of each run with the check and the run
without it that follows it, with its standard error. The goal (issue 51): a default fit grows by at most 10 %.

    PYTHONPATH=. .venv-irt/bin/python bench/bench_fit_check_cost.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
cpu_name = runpy.run_path(str(Path(__file__).with_name("machine.py")))["cpu_name"]


def run(argv: list) -> tuple[float, float]:
    """Run ``python -m benchmeasure ARGV`` (must succeed); its wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchmeasure", *map(str, argv)], capture_output=True, text=True,
                          cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"benchmeasure {' '.join(map(str, argv))} failed:\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def spread(values: list) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per mode (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        matrix = work / "response_matrix.csv"
        run(["prepare", "--from", "wide", ROOT / "data" / "chembench" / "binary_matrix.csv", "--items-as-rows",
             "--n-trials", "1", "--output", matrix])
        fit = ["fit", matrix, "--n-trials", "1", "--seed", "2026", "--quiet"]
        run([*fit, "--output-dir", work / "warm"])
        times = {"with the check": [], "--no-check-fit": []}
        check_wall, check_cpu, loads = [], [], [os.getloadavg()[0]]
        for _ in range(args.repeats):
            for mode in times:
                out = work / ("check" if mode == "with the check" else "plain")
                times[mode].append(run([*fit, "--output-dir", out, *(["--no-check-fit"] if "no" in mode else [])]))
                loads.append(os.getloadavg()[0])
            record = json.loads((work / "check" / "diagnostics.json").read_text(encoding="utf-8"))["check_fit"]
            check_wall.append(record["seconds"])
            check_cpu.append(record["cpu_seconds"])
        summary = record["summary"]
    print(f"ChemBench default fit (22 × 2,854, K = 1, seed 2026), {args.repeats} runs per mode, alternating; "
          f"{cpu_name()}, {os.cpu_count()} CPUs, load average {min(loads):.1f}–{max(loads):.1f}\n")
    print("| mode | wall s: median (range) | CPU s: median (range) |")
    print("|---|---|---|")
    for mode, pairs in times.items():
        print(f"| {mode} | {spread([w for w, _ in pairs])} | {spread([c for _, c in pairs])} |")
    plain_wall = statistics.median(w for w, _ in times["--no-check-fit"])
    plain_cpu = statistics.median(c for _, c in times["--no-check-fit"])
    grow_wall = statistics.median(w for w, _ in times["with the check"]) / plain_wall - 1
    grow_cpu = statistics.median(c for _, c in times["with the check"]) / plain_cpu - 1
    print(f"\ngrowth of the median: wall {100 * grow_wall:+.1f} %, CPU {100 * grow_cpu:+.1f} % (goal ≤ 10 %)")
    for k, what, base in ((0, "wall", plain_wall), (1, "CPU", plain_cpu)):   # each run against its neighbour
        diffs = [a[k] - b[k] for a, b in zip(times["with the check"], times["--no-check-fit"])]
        se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
        print(f"paired difference, {what}: {statistics.mean(diffs):+.2f} s ± {se:.2f} (standard error of the mean of "
              f"{len(diffs)} pairs) = {100 * statistics.mean(diffs) / base:+.1f} % ± {100 * se / base:.1f} %")
    print(f"the check itself (diagnostics.json): wall {spread(check_wall)} s, CPU {spread(check_cpu)} s "
          f"= {100 * statistics.median(check_cpu) / plain_cpu:.1f} % of the fit's median CPU")
    print(f"its line: {summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
