"""R-hat and bulk ESS of every parameter: the package's own vectorized implementation vs ArviZ (arviz-stats).

``benchmeasure.irt.diagnostics.summarize_draws`` computes rank-normalized split R-hat and bulk ESS (ArviZ's
definitions; ``tests/test_irt_diagnostics.py`` checks they are equal to 1e-10) for every difficulty after a
fit. This bench times it against ``arviz.rhat`` + ``arviz.ess`` on the same draws at the sizes the fits
produce: 4 chains × 1,000 draws (the paper's settings) and N = 100 (a small benchmark), 2,854 (ChemBench) and
20,000 items (a large suite), and prints both side by side with the largest difference between the results.

    .venv-irt/bin/python bench/bench_rhat_ess.py
    .venv-irt/bin/python bench/bench_rhat_ess.py --items 100 2854 --repeats 3
"""

from __future__ import annotations

import argparse
import platform
import runpy
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()

_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))  # CPU name and versions, shared by the benches
cpu_name, versions = _machine["cpu_name"], _machine["versions"]

from benchmeasure.irt.diagnostics import summarize_draws  # noqa: E402


def ar1(chains, draws, n_params, seed):
    rng = np.random.default_rng(seed)
    rho = rng.uniform(0.0, 0.9, n_params)
    x = np.zeros((chains, draws, n_params))
    noise = rng.normal(size=x.shape)
    x[:, 0] = noise[:, 0]
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + noise[:, t]
    return x


def best_of(repeats, fn):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    import arviz as az
    import xarray as xr

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[100, 2854, 20000])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{cpu_name()}, Python {platform.python_version()}; {versions(['numpy', 'arviz', 'arviz-stats', 'xarray'])}")
    print(f"{args.chains} chains x {args.draws} draws; best of {args.repeats}")
    print(f"{'items':>7} {'ours s':>9} {'arviz s':>9} {'speed-up':>9} {'max |diff| r_hat':>17} "
          f"{'max rel diff ess':>17}")
    for n in args.items:
        x = ar1(args.chains, args.draws, n, seed=n)
        tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"b": (("chain", "draw", "item"), x)})})
        t_ours, ours = best_of(args.repeats, lambda x=x: summarize_draws(x))
        t_az, (rhat, ess) = best_of(args.repeats, lambda tree=tree: (np.asarray(az.rhat(tree)["b"].values),
                                                           np.asarray(az.ess(tree)["b"].values)))
        d_rhat = float(np.max(np.abs(ours["r_hat"] - rhat)))
        d_ess = float(np.max(np.abs(ours["ess_bulk"] - ess) / ess))
        print(f"{n:>7} {t_ours:>9.3f} {t_az:>9.3f} {t_az / t_ours:>8.1f}x {d_rhat:>17.2e} {d_ess:>17.2e}", flush=True)


if __name__ == "__main__":
    main()
