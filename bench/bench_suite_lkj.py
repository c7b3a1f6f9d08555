#!/usr/bin/env python3
"""Do the LKJ posterior's intervals for the correlation cover the truth? Side by side with the empirical-Bayes estimate.

Simulated suites with a known correlation matrix R (3 benchmarks: correlations 0.8, 0.3, 0.5), abilities
θ_j ~ Normal(μ, diag(s) R diag(s)) with μ = (1, −0.5, 0) and s = (1.5, 1, 0.7), b ~ Normal(0, 1), K trials per
cell and a fraction of cells absent (planned at random). Each
replication is fitted two ways on the same data:

* ``correlated`` — :func:`benchmeasure.suite.mirt.fit_correlated` (NUTS, LKJ(2), the full posterior): the posterior
  mean of every pairwise correlation, and whether its central 94 % interval covers the truth;
* ``correlated-eb`` — :func:`benchmeasure.suite.fit.fit_suite` with ``abilities="correlated"`` (the method-of-moments
  point estimate; no interval).

Printed: per replication the three correlations (truth, posterior mean [94 % interval], EB estimate), then the
coverage over all (replication, pair) intervals with its binomial standard error, the mean absolute error of each
estimate, wall time of each method, and R-hat / ESS / divergences of each NUTS fit.

``--routes collapsed,joint`` fits the LKJ model both ways on each replication (the collapsed route, the default,
and the joint one) and prints their times and the largest difference of their posterior means of the
correlations, abilities and difficulties in units of the combined Monte Carlo standard error.

    nice -n 10 .venv-irt/bin/python bench/bench_suite_lkj.py                       # 6 replications
    .venv-irt/bin/python bench/bench_suite_lkj.py --reps 1 --routes collapsed,joint # the two routes side by side
    .venv-irt/bin/python bench/bench_suite_lkj.py --reps 2 --tune 300 --draws 300  # a quick look
"""

from __future__ import annotations

import argparse
import runpy
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))

TRUTH = np.array([[1.0, 0.8, 0.3], [0.8, 1.0, 0.5], [0.3, 0.5, 1.0]])
MEANS = np.array([1.0, -0.5, 0.0])    # benchmark mean abilities (an easy, a hard and a middling benchmark)
SPREADS = np.array([1.5, 1.0, 0.7])   # and spreads


def simulate(rng, models: int, per: int, n_trials: int, holes: float):
    from benchmeasure.suite.reader import Suite

    n_bench = TRUTH.shape[0]
    theta = rng.multivariate_normal(MEANS, TRUTH * np.outer(SPREADS, SPREADS), size=models)
    bench = np.repeat(np.arange(n_bench), per)
    b = rng.normal(size=bench.size)
    p = 1.0 / (1.0 + np.exp(-(theta[:, bench] - b[None, :])))
    trials = np.where(rng.random(p.shape) < holes, 0, n_trials)
    counts = rng.binomial(trials, p)
    return Suite([f"m{j}" for j in range(models)], [f"q{i}" for i in range(bench.size)],
                 [f"B{k}" for k in range(n_bench)], bench, counts, trials)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--models", type=int, default=60)
    parser.add_argument("--items", type=int, default=40, help="items per benchmark")
    parser.add_argument("--n-trials", type=int, default=2)
    parser.add_argument("--holes", type=float, default=0.2)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--routes", default="collapsed", help="collapsed, joint or collapsed,joint")
    args = parser.parse_args(argv)
    routes = args.routes.split(",")
    from benchmeasure.suite.chain import single_thread
    from benchmeasure.suite.fit import fit_suite
    from benchmeasure.suite.mirt import fit_correlated

    rng = np.random.default_rng(args.seed)
    pairs = list(zip(*np.triu_indices(TRUTH.shape[0], k=1)))
    covered, err_nuts, err_eb, wall_nuts, wall_eb, conv = [], [], [], [], [], []
    print(f"{args.models} models x 3 benchmarks x {args.items} items, K = {args.n_trials}, {100 * args.holes:.0f}% "
          f"cells absent; NUTS {args.chains} chains x ({args.tune} + {args.draws}); machine: {_machine['cpu_name']()}")
    for rep in range(args.reps):
        suite = simulate(rng, args.models, args.items, args.n_trials, args.holes)
        start = time.perf_counter()
        with single_thread():
            eb = fit_suite(suite, "correlated")
        wall_eb.append(time.perf_counter() - start)
        fits = {}
        for route in routes:
            start = time.perf_counter()
            fits[route] = fit_correlated(suite.counts, suite.trials, suite.item_benchmark, suite.benchmarks,
                                         chains=args.chains, tune=args.tune, draws=args.draws, seed=args.seed + rep,
                                         route=route)
            d = fits[route].diagnostics
            print(f"  {route}: {time.perf_counter() - start:.1f} s wall (compilation {d['compile_time_s']:.1f} s, "
                  f"sampling {d['sampling_time_s']:.1f} s), {d['leapfrog_steps_per_draw']:.1f} leapfrog steps per "
                  f"draw, R-hat {d['max_r_hat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}", flush=True)
            if route == routes[0]:
                wall_nuts.append(time.perf_counter() - start)
        if len(fits) == 2:
            print(f"  routes differ by at most {_max_z(*fits.values()):.2f} combined Monte Carlo standard errors "
                  "(posterior means of every correlation, ability and difficulty)", flush=True)
        fit = fits[routes[0]]
        d = fit.diagnostics
        conv.append((d["max_r_hat"], d["min_ess_bulk"], d["divergences"]))
        c = fit.correlation
        cells = []
        for a, b in pairs:
            inside = bool(c["low"][a, b] <= TRUTH[a, b] <= c["high"][a, b])
            covered.append(inside)
            err_nuts.append(abs(c["mean"][a, b] - TRUTH[a, b]))
            err_eb.append(abs(eb.correlation[a, b] - TRUTH[a, b]))
            cells.append(f"{TRUTH[a, b]:.1f}: {c['mean'][a, b]:.2f} [{c['low'][a, b]:.2f}, {c['high'][a, b]:.2f}]"
                         f"{'' if inside else ' MISSED'} / EB {eb.correlation[a, b]:.2f}")
        print(f"rep {rep}: " + "; ".join(cells) + f"  (R-hat {d['max_r_hat']:.3f}, min ESS {d['min_ess_bulk']:.0f}, "
              f"{d['divergences']} div, NUTS {wall_nuts[-1]:.0f} s)", flush=True)
    n = len(covered)
    rate = float(np.mean(covered))
    print(f"\ncoverage of the 94% intervals: {rate:.3f} ± {np.sqrt(rate * (1 - rate) / n):.3f} ({sum(covered)} of {n})")
    print(f"mean |error| of the correlation: LKJ posterior mean {np.mean(err_nuts):.3f} ± "
          f"{np.std(err_nuts, ddof=1) / np.sqrt(n):.3f}, empirical Bayes {np.mean(err_eb):.3f} ± "
          f"{np.std(err_eb, ddof=1) / np.sqrt(n):.3f}")
    print(f"wall per fit: LKJ NUTS {np.mean(wall_nuts):.1f} s (compilation included), empirical Bayes "
          f"{np.mean(wall_eb):.2f} s; worst R-hat {max(x[0] for x in conv):.3f}, lowest ESS "
          f"{min(x[1] for x in conv):.0f}, divergences {sum(x[2] for x in conv)}")
    return 0


def _max_z(a, b) -> float:
    """Largest |mean difference| / combined Monte Carlo standard error over correlations, θ and b."""
    worst = 0.0
    pairs = np.triu_indices(a.correlation["mean"].shape[0], k=1)
    for x, y in ((a.theta, b.theta), (a.b, b.b), ({k: v[pairs] for k, v in a.correlation.items()},
                                                  {k: v[pairs] for k, v in b.correlation.items()})):
        se = np.sqrt(x["sd"] ** 2 / x["ess_bulk"] + y["sd"] ** 2 / y["ess_bulk"])
        worst = max(worst, float(np.max(np.abs(x["mean"] - y["mean"]) / se)))
    return worst


if __name__ == "__main__":
    sys.exit(main())
