#!/usr/bin/env python3
"""The correlated-abilities suite model with the benchmark means sampled by NUTS or integrated out, side by side.

Issue 31 item 3: on MMLU-Pro (29 models × 12,032 items, 14 categories) the default `fit-suite --abilities correlated`
took 26.6 min and its benchmark means μ_k did not converge (R-hat 1.015, bulk ESS 366, 74 divergences). Both rows
below sample the same posterior (`benchmeasure/suite/mirt.py`):

* ``sampled`` — NUTS on (θ, μ, s, R), b integrated out (the collapsed route as it was);
* ``integrated`` — NUTS on (θ, s, R) with μ integrated out as well (θ's density given Σ in closed form,
  `theta_marginal_logp`), then μ drawn exactly from its Gaussian conditional given each draw (`draw_means`);
* ``partial`` — the same, with θ in the partially non-centred coordinates of `suite/coordinates.py` (the default of
  `fit-suite --abilities correlated`): centred along the directions of Σ the data resolve, non-centred along the
  others; its density is the one compiled once into the kernel cache (`suite/density.py`, the default);
* ``partial-pymc`` — the same posterior in the same coordinates, on the PyMC model's graph compiled by nutpie in
  this process (what ``partial`` was before 2026-12-05): the compiled density against its reference.

Each row is one fit of the same data with the same seed, one after the other in this process. Printed per row:
wall seconds (compilation included), sampling seconds, leapfrog steps per draw, divergences, max R-hat and min bulk
ESS over θ, b, μ, s and the correlations (with where), the min bulk ESS of μ, and min bulk ESS per second of
sampling. Then the largest difference between each later row's posterior means of μ, of the correlations and of θ
and the first row's, in units of their combined Monte Carlo standard error (≲ 4 expected: the same posterior).

    nice -n 10 .venv-irt/bin/python bench/bench_suite_means.py                                   # MMLU-Pro in full
    nice -n 10 .venv-irt/bin/python bench/bench_suite_means.py --means partial --draws 2500 --seed 3  # the default
                                                   # command's posterior (fit-suite --abilities correlated), one seed
    .venv-irt/bin/python bench/bench_suite_means.py --items 60 --chains 2 --tune 300 --draws 300  # a quick look
    .venv-irt/bin/python bench/bench_suite_means.py --items 200 --chains 2 --tune 500 --draws 500 \
        --means integrated,partial                                     # the coordinates, side by side
    .venv-irt/bin/python bench/bench_suite_means.py --items 200 --chains 2 --tune 500 --draws 500 \
        --means partial-pymc,partial                   # the cached compiled density against the PyMC graph
"""

from __future__ import annotations

import argparse
import runpy
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))


def load(path: Path, items: int | None, seed: int):
    """The suite of ``path``; with ``items``, that many items per benchmark drawn at random (``seed``)."""
    from benchmeasure.suite.reader import read_suite

    suite = read_suite([str(path)])
    if items is None:
        return suite.counts, suite.trials, suite.item_benchmark, list(suite.benchmarks)
    rng = np.random.default_rng(seed)
    keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(suite.item_benchmark == k),
                                              min(items, int(np.sum(suite.item_benchmark == k))), replace=False)
                                   for k in range(len(suite.benchmarks))]))
    return suite.counts[:, keep], suite.trials[:, keep], suite.item_benchmark[keep], list(suite.benchmarks)


def mean_se(posterior, name):
    """Posterior means and Monte Carlo standard errors (sd / sqrt(bulk ESS)) of ``name``, flattened."""
    from benchmeasure.irt.diagnostics import summarize_draws

    values = np.asarray(posterior[name].values, dtype=float)
    chains, draws = values.shape[:2]
    stats = summarize_draws(values.reshape(chains, draws, -1))
    return stats["mean"], stats["sd"] / np.sqrt(stats["ess_bulk"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=Path, default=ROOT / "data" / "mmlu_pro" / "responses.csv.gz")
    parser.add_argument("--items", type=int, default=None, help="items per benchmark (default: all)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--means", default="sampled,integrated",
                        help="rows, comma-separated: sampled (centred, μ sampled), integrated (centred, μ integrated), "
                             "partial (the partial coordinates of suite/coordinates.py, μ integrated, the cached "
                             "compiled density), partial-pymc (the same on the PyMC graph)")
    parser.add_argument("--target-accept", type=float, default=0.9)
    args = parser.parse_args(argv)
    from benchmeasure.suite.mirt import fit_correlated

    counts, trials, which, benchmarks = load(args.responses, args.items, args.seed)
    print(f"{args.responses.name}: {counts.shape[0]} models x {counts.shape[1]} items, {len(benchmarks)} benchmarks; "
          f"{args.chains} chains x ({args.tune} + {args.draws}), seed {args.seed}; {_machine['cpu_name']()}; "
          f"{_machine['versions'](['nutpie', 'pymc', 'pytensor', 'numba'])}", flush=True)
    fits = {}
    rows = {"sampled": ("centred", "sampled", "pymc"), "integrated": ("centred", "integrated", "pymc"),
            "partial": ("partial", "integrated", "compiled"), "partial-pymc": ("partial", "integrated", "pymc")}
    for means in args.means.split(","):
        if means not in rows:
            parser.error(f"--means: unknown row {means!r}; choose from {', '.join(rows)}")
        start = time.perf_counter()
        fit = fit_correlated(counts, trials, which, benchmarks, chains=args.chains, tune=args.tune,
                             draws=args.draws, seed=args.seed, parametrization=rows[means][0], means=rows[means][1],
                             density=rows[means][2], target_accept=args.target_accept)
        wall = time.perf_counter() - start
        fits[means] = fit
        d = fit.diagnostics
        post = fit.posterior["posterior"]
        from benchmeasure.irt.diagnostics import summarize_draws

        mu_values = np.asarray(post["mu"].values, dtype=float)
        mu_ess = float(np.min(summarize_draws(mu_values)["ess_bulk"]))
        print(f"{means:>12}: wall {wall:7.1f} s, compile {d['compile_time_s']:5.1f} s, "
              f"sampling {d['sampling_time_s']:7.1f} s, "
              f"{d.get('leapfrog_steps_per_draw') or float('nan'):5.1f} steps/draw, {d['divergences']} divergences, "
              f"max R-hat {d['max_r_hat']:.4f} ({d['worst_r_hat']}), min bulk ESS {d['min_ess_bulk']:.0f} "
              f"({d['worst_ess_bulk']}), min ESS of mu {mu_ess:.0f}, "
              f"min ESS / s {d['min_ess_bulk'] / d['sampling_time_s']:.2f}", flush=True)
    first = next(iter(fits))
    for other in list(fits)[1:]:
        print(f"  {other} against {first}:")
        a, b = (fits[m].posterior["posterior"] for m in (first, other))
        for name in ("mu", "theta"):
            (ma, sa), (mb, sb) = mean_se(a, name), mean_se(b, name)
            print(f"  |difference of posterior means| of {name}: max {np.max(np.abs(ma - mb) / np.hypot(sa, sb)):.2f} "
                  f"combined MCSE")
        ca, cb = (fits[m].correlation for m in (first, other))
        pairs = np.triu_indices(len(benchmarks), k=1)
        se = np.hypot(ca["sd"][pairs] / np.sqrt(ca["ess_bulk"][pairs]),
                      cb["sd"][pairs] / np.sqrt(cb["ess_bulk"][pairs]))
        print(f"  |difference of posterior means| of the correlations: max "
              f"{np.max(np.abs(ca['mean'][pairs] - cb['mean'][pairs]) / se):.2f} combined MCSE")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
