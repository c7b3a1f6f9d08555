#!/usr/bin/env python3
"""The gibbs route's sweep, this checkout beside an earlier revision's, on the same data in one run.

The earlier revision's ``benchmeasure/irt/gibbs.py`` (``--before``, default ``3734fb0``: the last commit before the
plain kernels of issue 31) is read from git into a module of its own and compiled without a disk cache; this
checkout's module is imported as users run it. Both run ``run_chains`` on one simulated binary matrix
(``MODELSxITEMSxHOLES``: θ, b ~ N(0, 1.1²), that fraction of cells absent at random, seed 0) for ``--sweeps`` burn-in
+ ``--sweeps`` kept sweeps, alternately, ``--repeats`` times each: one chain on one core, then 4 chains on 2 cores.
Printed per revision: the median wall seconds, the core-nanoseconds per present cell and sweep, its ratio to one
vectorized logistic on this machine (NumPy's 1/(1 + e^−x), float64, measured here; issue 31 asks for ≤ 5×), the
acceptance rates, and the largest difference between the two revisions' θ draws (the same seed gives the same
chain while every acceptance decision is the same; the kernels sum in another order, so the values differ in their
last bits, and a last-bit difference may flip a rare decision).

    nice -n 10 .venv-irt/bin/python bench/bench_gibbs_kernel.py
    .venv-irt/bin/python bench/bench_gibbs_kernel.py --sizes 200x2000x0.5 --sweeps 25
"""

from __future__ import annotations

import argparse
import importlib.util
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))
_floor = runpy.run_path(str(Path(__file__).with_name("bench_sparse_suite.py")), run_name="bench")["logistic_floor_ns"]

from benchmeasure.irt.routes.gibbs import chains, kernel, sparse, sums  # noqa: E402

# this checkout's gibbs route, its parts read as one module (as the earlier revisions' single gibbs.py)
after = types.SimpleNamespace(**{**vars(sparse), **vars(sums), **vars(kernel), **vars(chains)})


def load_revision(rev: str, folder: Path):
    """``benchmeasure/irt/gibbs.py`` at ``rev`` as a module (its kernels compiled in this process, not cached)."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:benchmeasure/irt/gibbs.py"], check=True,
                          capture_output=True, text=True).stdout
    text = text.replace("cache=True", "cache=False")
    path = folder / "gibbs_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("gibbs_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def simulate(m: int, n: int, holes: float):
    rng = np.random.default_rng(0)
    theta, b = rng.normal(0, 1.1, m), rng.normal(0, 1.1, n)
    trials = (rng.random((m, n)) >= holes).astype(np.int64)
    counts = (rng.random((m, n)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))).astype(np.int64) * trials
    return counts, trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="400x5000x0.5", help="comma-separated MODELSxITEMSxHOLES")
    parser.add_argument("--before", default="3734fb0", help="the earlier revision (default 3734fb0)")
    parser.add_argument("--sweeps", type=int, default=50, help="burn-in and kept sweeps per chain (each)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    floor = _floor()
    print(f"floor: one vectorized logistic (NumPy, float64) {floor:.2f} ns per value")
    print("| matrix | chains / cores | revision | wall s (median) | core-ns per cell per sweep | × floor | "
          "acceptance b / θ | max |Δθ| against the other |")
    print("|---" * 8 + "|", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        before = load_revision(args.before, Path(tmp))
        for size in args.sizes.split(","):
            m, n, holes = size.split("x")
            counts, trials = simulate(int(m), int(n), float(holes))
            for chains, cores in ((1, 1), (4, 2)):
                walls = {"before": [], "after": []}
                results = {}
                for module in (before, after):   # compile (or load) every kernel before timing
                    module.run_chains(module.SparseData(counts, trials), chains=1, tune=2, draws=2, seed=1, cores=1)
                for _ in range(args.repeats):
                    for name, module in (("before", before), ("after", after)):
                        data = module.SparseData(counts, trials)
                        start = time.perf_counter()
                        results[name] = module.run_chains(data, chains=chains, tune=args.sweeps, draws=args.sweeps,
                                                          seed=1, cores=cores)
                        walls[name].append(time.perf_counter() - start)
                diff = float(np.abs(results["before"][0] - results["after"][0]).max())
                cells = int(np.count_nonzero(trials))
                for name in ("before", "after"):
                    wall = statistics.median(walls[name])
                    ns = wall * cores / (chains * 2 * args.sweeps * cells) * 1e9
                    info = results[name][2]
                    label = args.before if name == "before" else "this checkout"
                    print(f"| {int(m):,} × {int(n):,}, {float(holes):.0%} holes | {chains} / {cores} | {label} | "
                          f"{wall:.2f} | {ns:.1f} | {ns / floor:.1f} | {info['acceptance_b']:.3f} / "
                          f"{info['acceptance_theta']:.3f} | {diff:.1e} |", flush=True)
    print(f"\nMachine: {_machine['cpu_name']()}; Python {sys.version.split()[0]}; "
          f"{_machine['versions'](['numba', 'numpy'])}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          "load average (1 min) " + open("/proc/loadavg").read().split()[0])


if __name__ == "__main__":
    main()
