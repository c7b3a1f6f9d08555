"""The hierarchical prior's compiled density against the PyMC graph it replaces: same posterior, how much faster.

One real matrix (default ZeroEval MATH level 5, 43 × 721 with its own holes, read as ``bench/bench_priors.py``
reads it) is fitted twice by ``fit --route joint --prior hierarchical`` with nutpie and the same settings and seed:
once on the compiled density (``irt/routes/joint/hierarchical.py``, what the route uses) and once on the PyMC graph
(``irt.model.build_model(prior="hierarchical")``, the reference: the same route with the prior's compiled density
withheld in this process). Printed, for each: wall time, compile time, sampling time, leapfrog steps per draw,
max R-hat and min bulk ESS over θ, b and the hyperparameters; then, for every parameter (θ_j, b_i, σ_θ, μ_b, σ_b),
the difference of the two posterior means in units of its Monte Carlo standard error,
z = (m₁ − m₂)/√(mcse₁² + mcse₂²), mcse = sd/√ESS_bulk, and of the two sds (an sd's Monte Carlo error from that of
the mean squared deviation, sd((x − m)²)/√ESS_bulk((x − m)²), divided by 2·sd). If both
fits sample one posterior, z is about N(0, 1): about 4.6 % of |z| above 2 and 0.3 % above 3.

    .venv-irt/bin/python bench/bench_hier_density.py                       # 4 chains x (1000 + 1000)
    .venv-irt/bin/python bench/bench_hier_density.py --skip-graph         # the compiled density only
"""

from __future__ import annotations

import argparse
import os
import runpy
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))
cpu_name, versions = _machine["cpu_name"], _machine["versions"]
load = runpy.run_path(str(Path(__file__).with_name("bench_priors.py")))["load"]   # the shared matrices' reader

from benchmeasure.core.matrix import ResponseMatrix  # noqa: E402
from benchmeasure.irt.diagnostics import summarize_draws  # noqa: E402
from benchmeasure.irt.draws import Draws  # noqa: E402
from benchmeasure.irt.fit import available_cpus, fit_1pl  # noqa: E402
from benchmeasure.irt.plan import FitSettings  # noqa: E402
from benchmeasure.irt.priors import PRIORS  # noqa: E402

NAMES = ("theta", "b", "sigma_theta", "mu_b", "sigma_b")


def fit(matrix, args, graph: bool):
    """One hierarchical fit on the joint route; ``graph``: on the PyMC graph (the prior's compiled density withheld)."""
    entry = PRIORS["hierarchical"]
    kept = entry.compiled
    if graph:
        object.__setattr__(entry, "compiled", None)
    try:
        settings = FitSettings(chains=args.chains, tune=args.tune, draws=args.draws, seed=args.seed, route="joint",
                               prior="hierarchical", cores=min(args.chains, available_cpus()))
        start = time.perf_counter()
        result = fit_1pl(matrix, settings=settings)
        wall = time.perf_counter() - start
    finally:
        object.__setattr__(entry, "compiled", kept)
    d = result.diagnostics
    assert d["prior"]["density"] == ("pymc graph" if graph else "compiled"), d["prior"]["density"]
    draws = Draws.of(result.posterior)
    steps = np.asarray(draws.stats["n_steps"], dtype=float)
    moments = {}
    for name in NAMES:
        values = np.asarray(draws.values(name), dtype=float)
        values = values.reshape(values.shape[0], values.shape[1], -1)
        summary = summarize_draws(values)
        mean, sd = values.mean(axis=(0, 1)), values.std(axis=(0, 1), ddof=1)
        square = (values - mean) ** 2   # the sd's Monte Carlo error: that of the mean square deviation, by its ESS
        se_sd = square.std(axis=(0, 1), ddof=1) / np.sqrt(summarize_draws(square)["ess_bulk"]) / (2 * sd)
        moments[name] = (mean, sd, summary["ess_bulk"], summary["r_hat"], se_sd)
    r_hat = max(float(np.nanmax(m[3])) for m in moments.values())
    ess = min(float(np.nanmin(m[2])) for m in moments.values())
    return {"wall": wall, "compile": d.get("compile_time_s"), "sampling": d.get("sampling_time_s"),
            "steps": float(steps.mean()), "divergences": d.get("divergences"), "r_hat": r_hat, "ess": ess,
            "moments": moments}


def compare(a, b):
    """Per parameter: z of the difference of posterior means and of sds (module docstring)."""
    zm, zs, ratio = [], [], []
    for name in NAMES:
        ma, sa, ea, _, qa = a["moments"][name]
        mb, sb, eb, _, qb = b["moments"][name]
        zm.append((ma - mb) / np.sqrt(sa ** 2 / ea + sb ** 2 / eb))
        zs.append((sa - sb) / np.sqrt(qa ** 2 + qb ** 2))
        ratio.append(sa / sb)
    return np.concatenate(zm), np.concatenate(zs), np.concatenate(ratio)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", default="zeroeval/math_l5", help="a folder under /work/shared/data")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-graph", action="store_true", help="fit on the compiled density only")
    args = parser.parse_args(argv)
    models, items, counts, trials = load(args.matrix)
    k = int(trials.max())
    matrix = ResponseMatrix(list(models), list(items), counts, k, trials=trials if (trials != k).any() else None)
    print(f"machine: {cpu_name()}, {available_cpus()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; "
          f"{versions(['numpy', 'pymc', 'nutpie', 'numba'])}")
    print(f"{args.matrix}: {len(models)} x {len(items)}, {int((trials == 0).sum())} absent cells; --prior "
          f"hierarchical on the joint route, nutpie {args.chains} chains x ({args.tune} + {args.draws}), seed "
          f"{args.seed}", flush=True)
    runs = {"compiled": fit(matrix, args, graph=False)}
    if not args.skip_graph:
        runs["pymc graph"] = fit(matrix, args, graph=True)
    print(f"{'density':<11} {'wall s':>7} {'compile s':>9} {'sampling s':>10} {'steps/draw':>10} {'diverg.':>7} "
          f"{'max R-hat':>9} {'min ESS':>8}  sigma_theta / mu_b / sigma_b (mean ± sd)")
    for name, r in runs.items():
        hyper = " / ".join(f"{r['moments'][h][0][0]:.3f} ± {r['moments'][h][1][0]:.3f}"
                           for h in ("sigma_theta", "mu_b", "sigma_b"))
        print(f"{name:<11} {r['wall']:>7.1f} {r['compile']:>9.1f} {r['sampling']:>10.1f} {r['steps']:>10.1f} "
              f"{r['divergences']:>7} {r['r_hat']:>9.4f} {r['ess']:>8.0f}  {hyper}")
    if "pymc graph" in runs:
        a, b = runs["compiled"], runs["pymc graph"]
        zm, zs, ratio = compare(a, b)
        for label, z in (("means", zm), ("sds", zs)):
            print(f"posterior {label} (compiled − graph) in Monte Carlo standard errors over {z.size} parameters: "
                  f"max |z| {np.max(np.abs(z)):.2f}, |z| > 2: {100 * np.mean(np.abs(z) > 2):.1f} %, |z| > 3: "
                  f"{100 * np.mean(np.abs(z) > 3):.1f} % (one posterior: about 4.6 % and 0.3 %)")
        print(f"sd ratio (compiled / graph): median {np.median(ratio):.3f}, mean {ratio.mean():.3f}, "
              f"range {ratio.min():.3f} to {ratio.max():.3f}")
        hz = zm[-3:]
        print(f"hyperparameters' mean z: sigma_theta {hz[0]:+.2f}, mu_b {hz[1]:+.2f}, sigma_b {hz[2]:+.2f}")
        print(f"speed-up (graph / compiled): wall {b['wall'] / a['wall']:.1f}x, sampling "
              f"{b['sampling'] / a['sampling']:.1f}x, per leapfrog step "
              f"{(b['sampling'] / b['steps']) / (a['sampling'] / a['steps']):.1f}x")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
