#!/usr/bin/env python3
"""What the gibbs route's shift move buys: the same sweeps with and without it, side by side in one run.

A simulated 200 × 2,000 binary matrix with 50 % of the cells absent at random (θ, b ~ N(0, 1.1²), seed 1); 4 chains
of 1,500 sweeps each (500 burn-in) of b | θ and θ | b (``benchmeasure.irt.routes.gibbs.kernel.update_block``),
once followed by the exact shift move (``kernel.shift``, as the route runs) and once without it. Printed per
variant: min bulk ESS of θ and of b, max R-hat, and the bulk ESS of the common level (the mean of θ over
models), of 4,000 kept draws.

    nice -n 10 .venv-irt/bin/python bench/bench_gibbs_shift.py
"""

from __future__ import annotations

import argparse
import runpy
from pathlib import Path

import numba
import numpy as np

runpy.run_path(str(Path(__file__).resolve().parent.parent / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.irt.diagnostics import summarize_draws  # noqa: E402
from benchmeasure.irt.routes.gibbs import kernel, sparse  # noqa: E402


@numba.njit
def _sweeps(theta, b, d_i, d_m, draws_b, draws_th, z, out_theta, out_b, use_shift):
    for s in range(z.shape[0]):
        kernel.update_block(b, -1.0, d_i, theta, draws_b[0, s], draws_b[1, s], draws_b[1, s], sparse.NU,
                           sparse.NEWTON_STEPS)
        kernel.update_block(theta, 1.0, d_m, -b, draws_th[0, s], draws_th[1, s], draws_th[1, s], sparse.NU,
                           sparse.NEWTON_STEPS)
        if use_shift:
            kernel.shift(theta, b, z[s])
        out_theta[s] = theta
        out_b[s] = b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--sweeps", type=int, default=1500)
    parser.add_argument("--burn-in", type=int, default=500)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    m, n = args.models, args.items
    theta_true, b_true = rng.normal(size=m) * 1.1, rng.normal(size=n) * 1.1
    trials = (rng.random((m, n)) >= 0.5).astype(int)
    counts = rng.binomial(trials, 1 / (1 + np.exp(b_true[None, :] - theta_true[:, None])))
    data = sparse.SparseData(counts, trials)
    d_i, d_m = data.blocks()
    print(f"{m} × {n}, 50 % absent, 4 chains × {args.sweeps} sweeps ({args.burn_in} burn-in)")
    print("| variant | min bulk ESS θ | min bulk ESS b | max R-hat | bulk ESS of mean θ | kept draws |")
    print("|---|---|---|---|---|---|")
    for use_shift in (True, False):
        thetas, bs = [], []
        for chain in range(4):
            r = np.random.default_rng(chain)
            theta, b = data.start(r)
            s = args.sweeps
            draws_b = np.stack([r.standard_t(sparse.NU, (s, n)), 1 - r.random((s, n))])
            draws_t = np.stack([r.standard_t(sparse.NU, (s, m)), 1 - r.random((s, m))])
            out_t, out_b = np.empty((s, m)), np.empty((s, n))
            _sweeps(theta, b, d_i, d_m, draws_b, draws_t, r.standard_normal(s), out_t, out_b, use_shift)
            thetas.append(out_t[args.burn_in:])
            bs.append(out_b[args.burn_in:])
        t, b = np.array(thetas), np.array(bs)
        st, sb, level = summarize_draws(t), summarize_draws(b), summarize_draws(t.mean(axis=2, keepdims=True))
        print(f"| {'with the shift move' if use_shift else 'without it'} | {st['ess_bulk'].min():.0f} | "
              f"{sb['ess_bulk'].min():.0f} | {max(st['r_hat'].max(), sb['r_hat'].max()):.4f} | "
              f"{level['ess_bulk'][0]:.0f} | {t.shape[0] * t.shape[1]} |")


if __name__ == "__main__":
    main()
