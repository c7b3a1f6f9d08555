"""Calibration of DDM, Max Gap and Top-5 Gap Sum on benchmarks with known difficulties (issue 18).

For each world × n × K and replication: draw true difficulties, abilities ~ N(0, 1.5²) for M
models, binomial counts; fit the paper's 1PL on the collapsed route (the exact posterior,
NUTS on the abilities, every difficulty drawn exactly); then compare, for each metric, with
the truth computed from the true difficulties:

With ``--abilities true`` the difficulties are drawn exactly given the true abilities instead
(:func:`benchmeasure.irt.routes.collapsed.quadrature.sample`): the same per-item posterior without the abilities'
uncertainty, which with M = 12 models and n ≥ 40 items is mostly a common shift of every b that
min–max normalized metrics do not see.

* ``plugin`` — the paper's value (metric of the posterior means) with the per-draw min–max
  interval the project reported before;
* ``new`` — the noise-aware estimator of :mod:`benchmeasure.analyses.noise_aware` and its interval;
* for Max Gap also ``fillcorr`` — the plug-in gap plus the depth noise is expected to fill
  (:mod:`benchmeasure.core.resolution`), a check of the filled-depth formula (no interval).

Prints bias, RMSE and 94 % coverage side by side, plus how often the widest gap was marked
resolved. The whole grid (4 worlds × n ∈ {40, 300, 2000} × K ∈ {1, 8, 32} × 8 replications)
takes hours on a 2-core machine; choose a subset with the options, e.g.

    python bench/bench_gap_calibration.py --n 40,300 --k 1,8 --reps 8 --draws 400 --tune 300
"""

from __future__ import annotations

import argparse
import json
import runpy
import time
from pathlib import Path

import numpy as np

runpy.run_path(str(Path(__file__).resolve().parent.parent / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.analyses.gap_calibration import METRICS, WORLDS, replicate, summarize  # noqa: E402
from benchmeasure.analyses.gap_calibration import true_difficulties as world_difficulties  # noqa: E402


def true_difficulties(world: str, n: int, rng) -> np.ndarray:
    """n true difficulties of a world (names as in the issue; :mod:`benchmeasure.analyses.gap_calibration`)."""
    return world_difficulties(world, n, rng)


def one(world, n, k, models, rng, args):
    b = true_difficulties(world, n, rng)
    theta = rng.normal(0, 1.5, models)
    return replicate(b, theta, k, rng, chains=args.chains, tune=args.tune, draws=args.draws,
                     replicates=args.replicates, abilities=args.abilities, refuse_k1=False)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worlds", default="normal,uniform,band,clusters")
    p.add_argument("--n", default="40,300,2000")
    p.add_argument("--k", default="1,8,32")
    p.add_argument("--reps", type=int, default=8)
    p.add_argument("--models", type=int, default=12)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--tune", type=int, default=500)
    p.add_argument("--draws", type=int, default=500)
    p.add_argument("--abilities", choices=("nuts", "true"), default="nuts",
                   help="nuts: the paper's full fit (collapsed route); true: b drawn exactly given the true "
                        "abilities (no ability uncertainty; minutes instead of hours on 2 cores)")
    p.add_argument("--replicates", type=int, default=100, help="Bayesian-bootstrap refits of the population")
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument("--json", help="also write every cell's summary here")
    args = p.parse_args()
    results = {}
    print("| world | n | K | truth MG | resolved | metric | plug-in bias | RMSE | cover | new bias | RMSE | "
          "cover | fill-corrected bias |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for world in args.worlds.split(","):
        for n in map(int, args.n.split(",")):
            for k in map(int, args.k.split(",")):
                rng = np.random.default_rng([args.seed, n, k, WORLDS.index(world)])
                start = time.perf_counter()
                rows = [one(world, n, k, args.models, rng, args) for _ in range(args.reps)]
                s = summarize(rows)
                s["seconds"] = time.perf_counter() - start
                results[f"{world},{n},{k}"] = s
                for m in METRICS:
                    c = s[m]
                    fc = f"{c['fillcorr']['bias']:+.3f}" if "fillcorr" in c else ""
                    print(f"| {world} | {n} | {k} | {s['max_gap']['truth_mean']:.3f} | {s['resolved']} | {m} | "
                          f"{c['plugin']['bias']:+.3f} | {c['plugin']['rmse']:.3f} | {c['plugin']['coverage']} | "
                          f"{c['new']['bias']:+.3f} | {c['new']['rmse']:.3f} | {c['new']['coverage']} | {fc} |",
                          flush=True)
                if args.json:  # after every cell, so that a long run's finished cells are kept
                    Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
