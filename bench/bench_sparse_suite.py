#!/usr/bin/env python3
"""The scaling table of posterior fits with holes: the gibbs route against the collapsed NUTS route, side by side.

Each size ``MODELSxITEMSxHOLES`` is a simulated binary matrix (``bench_fit_memory.simulate``: θ, b ~ N(0, 1.1²),
that fraction of cells absent at random, seeded) fitted by ``benchmeasure fit --allow-missing --route R`` at the
paper's settings (4 chains × (1,000 + 1,000); on the gibbs route 1,000 burn-in sweeps + 1,000 kept sweeps), each
fit a fresh process pinned to the same cores; ``mmlu`` is MMLU-Pro as bundled (29 × 12,032, 1,713 absent cells).
A run still going after ``--limit-seconds`` is stopped, and the row gives how far it got and the time its rate
projects for the whole run. One line per row, printed as each run ends:

    matrix, holes, P (distinct trials columns), route → wall, CPU (user + system of the fit process, whatever else
    runs), peak resident memory, min bulk ESS, max R-hat, ESS/s (min bulk ESS / sampling seconds), acceptance
    (gibbs: the b and θ updates), gibbs: core-nanoseconds of sampling per present cell and sweep and its ratio to the
    cost of one vectorized logistic on this machine (measured first; issue 31 asks for ≤ 5×), target (issue 19:
    ≤ 15 min with R-hat ≤ 1.01, ESS ≥ 400), load average.

    nice -n 10 .venv-irt/bin/python bench/bench_sparse_suite.py                        # the whole table
    nice -n 10 .venv-irt/bin/python bench/bench_sparse_suite.py --sizes 400x5000x0.5 --routes gibbs   # headline
    .venv-irt/bin/python bench/bench_sparse_suite.py --sizes 50x500x0.5 --tune 200 --draws 200      # quick look
    nice -n 10 .venv-irt/bin/python bench/bench_sparse_suite.py --sizes growing --routes auto,collapsed  # releases
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
HERE = Path(__file__).parent
_holes = runpy.run_path(str(HERE / "bench_holes_fit.py"))
_memory = runpy.run_path(str(HERE / "bench_fit_memory.py"))
_machine = runpy.run_path(str(HERE / "machine.py"))
TARGET_S = 15 * 60
PROGRESS = re.compile(r"(NUTS|Gibbs) (warm-up|draws|sweeps[^,]*), (\d+)/(\d+)")


def max_trials(matrix: Path) -> int:
    """The largest trials per cell of a bench matrix (10 for :func:`growing_matrix`, else 1)."""
    return 10 if matrix.stem == "matrix_growing" else 1


def trials_columns(matrix: Path) -> int:
    from benchmeasure.core.matrix import read_matrix_allowing_holes
    from benchmeasure.irt.routes.gibbs.chains import distinct_columns

    m = read_matrix_allowing_holes(matrix, max_trials(matrix))
    return distinct_columns(m.trials, m.trials.shape[1]) if m.trials is not None else 1


def fit(matrix: Path, out: Path, route: str, args) -> dict:
    extra = ["--route", route, "--chains", str(args.chains), "--tune", str(args.tune), "--draws", str(args.draws)]
    if args.guessing:
        extra += ["--guessing", str(args.guessing)]
    record = _holes["run_fit"](matrix, max_trials(matrix), out, args.seed, args.limit_seconds, *extra)
    text = (out.parent / f"{out.name}.stderr").read_text(encoding="utf-8")
    steps = PROGRESS.findall(text)
    record["steps"] = (int(steps[-1][2]), int(steps[-1][3])) if steps else (0, 0)
    return record


def growing_matrix(folder: Path, seed: int) -> Path:
    """A real-shaped growing benchmark (issue 31): three nested releases of one benchmark fitted as one matrix.

    71 models × 1,055 items: release 1 (items 1–300) answered by 30 models with K = 10, release 2 (items 1–700) by
    25 models with K = 1, release 3 (every item) by 16 models with K = 10; 10 % of the remaining cells absent at
    random. θ ~ N(0, 1.5²) with four very weak models (θ = −6.5 … −5) in release 1 and three very strong ones
    (3.5 … 4.5) in release 3; b of the releases ~ N(−1, 1), N(0.5, 1.2²), N(1.5, 1.5²): unlike the prior."""
    from benchmeasure.core.matrix_holes import write_counts_and_trials

    rng = np.random.default_rng(seed)
    m, n = 71, 1055
    theta = rng.normal(0, 1.5, m)
    theta[:4] = [-6.0, -5.5, -5.0, -6.5]
    theta[-3:] = [3.5, 4.0, 4.5]
    b = np.concatenate([rng.normal(-1, 1, 300), rng.normal(0.5, 1.2, 400), rng.normal(1.5, 1.5, 355)])
    trials = np.zeros((m, n), dtype=np.int64)
    trials[:30, :300] = 10
    trials[30:55, :700] = 1
    trials[55:, :] = 10
    trials[rng.random((m, n)) < 0.1] = 0
    counts = rng.binomial(trials, 1 / (1 + np.exp(-(theta[:, None] - b[None, :]))))
    path = folder / "matrix_growing.csv"
    write_counts_and_trials([f"m{j}" for j in range(m)], [f"i{i}" for i in range(n)], counts, trials, path)
    return path


def logistic_floor_ns(size: int = 1_000_000, repeats: int = 7) -> float:
    """The cost of one vectorized logistic on this machine, ns per element: NumPy's σ(x) = 1/(1 + e^−x) over
    ``size`` float64 values in place (best of ``repeats``). The issue's yardstick for a Gibbs sweep: every present
    cell needs at least a logistic in each of the two conditional updates."""
    import numpy as np

    x = np.random.default_rng(0).normal(size=size)
    out = np.empty_like(x)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.negative(x, out=out)
        np.exp(out, out=out)
        out += 1.0
        np.reciprocal(out, out=out)
        best = min(best, time.perf_counter() - start)
    return best / size * 1e9


def row(name: str, holes: str, patterns: int, route: str, r: dict, floor_ns: float, args) -> str:
    load = f"{r['load'][0]:.1f}→{r['load'][1]:.1f}"
    head = f"| {name} | {holes} | {patterns:,} | {route} |"
    if r["stopped"]:
        done, total = r["steps"]
        projected = f"~{r['wall'] / done * total / 60:.0f} min projected" if done else "no step done"
        return (f"{head} stopped at {r['wall']:.0f} s ({done}/{total} iterations; {projected}) | {r['cpu']:.0f} | "
                f"{r['peak_mb']:.0f} | – | – | – | – | – | missed | {load} |")
    d = r["diagnostics"]
    sampling = d["timing"].get("sampling_time_s") or float("nan")
    gibbs = d.get("gibbs") or {}
    accept = (f"{gibbs['acceptance_b']:.3f} / {gibbs['acceptance_theta']:.3f}" if gibbs else "–")
    per_cell = "–"
    if gibbs.get("cells"):   # core-seconds of sampling per cell and sweep, and its ratio to the logistic floor
        ns = sampling * min(args.cores, args.chains) / (args.chains * (args.tune + args.draws) * gibbs["cells"]) * 1e9
        per_cell = f"{ns:.1f} ({ns / floor_ns:.1f}×)"
    met = r["wall"] <= TARGET_S and d["max_r_hat"] <= 1.01 and d["min_ess_bulk"] >= 400 and d["divergences"] == 0
    return (f"{head} {r['wall']:.1f} | {r['cpu']:.1f} | {r['peak_mb']:.0f} | {d['min_ess_bulk']:.0f} | "
            f"{d['max_r_hat']:.4f} | {d['min_ess_bulk'] / sampling:.1f} | {accept} | {per_cell} | "
            f"{'met' if met else 'missed'} | "
            f"{load} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100x1000x0.5,200x2000x0.5,400x5000x0.5,mmlu",
                        help="comma-separated MODELSxITEMSxHOLES, mmlu or growing (growing_matrix: nested releases, "
                             "K = 10 or 1 per cell, very weak and strong models; default: three simulated sizes and "
                             "MMLU-Pro)")
    parser.add_argument("--routes", default="gibbs,collapsed",
                        help="routes to run on each size, in order (auto: the route the fit command chooses)")
    parser.add_argument("--limit-seconds", type=float, default=900.0, help="stop a run after this long (projected)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--guessing", type=float, default=0.0, help="fit with this guessing floor g (default 0)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cpus[: args.cores])  # children inherit the same cores
        args.cores = min(args.cores, len(cpus))
    print(f"fit --allow-missing{f' --guessing {args.guessing:g}' if args.guessing else ''}, "
          f"{args.chains} chains × ({args.tune} + {args.draws}), seed {args.seed}, "
          f"{args.cores} cores, runs stopped after {args.limit_seconds:.0f} s")
    floor_ns = logistic_floor_ns()
    print(f"floor: one vectorized logistic (NumPy, float64, 1e6 values in place) costs {floor_ns:.2f} ns per value")
    print("| matrix | holes | trials columns | route | wall s | CPU s | peak MB | min bulk ESS | max R-hat | ESS/s | "
          "acceptance b / θ | gibbs ns per cell per sweep (× floor) | ≤ 15 min, R-hat ≤ 1.01, ESS ≥ 400 | load avg |")
    print("|---" * 14 + "|", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_sparse_suite.") as tmp:
        folder = Path(tmp)
        for size in args.sizes.split(","):
            if size == "mmlu":
                matrix, name, holes = _holes["mmlu_matrix"](folder), "MMLU-Pro 29 × 12,032", "0.49 %"
            elif size == "growing":
                matrix, name, holes = growing_matrix(folder, args.seed), "growing, 71 × 1,055, K = 10 / 1", "48 %"
            else:
                m, n, fraction = size.split("x")
                matrix = _memory["simulate"](int(m), int(n), args.seed, folder, float(fraction))
                name, holes = f"{int(m):,} × {int(n):,} (simulated)", f"{100 * float(fraction):g} %"
            patterns = trials_columns(matrix)
            for route in args.routes.split(","):
                out = folder / f"{matrix.stem}_{route}"
                print(row(name, holes, patterns, route, fit(matrix, out, route, args), floor_ns, args), flush=True)
    print(f"\nMachine: {_machine['cpu_name']()}, {args.cores} cores used of {os.cpu_count()}; Python "
          f"{sys.version.split()[0]}; {_machine['versions'](['pymc', 'nutpie', 'numba', 'numpy'])}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Load average: 1-minute, before → after each run.")


if __name__ == "__main__":
    main()
