"""The 2pl route's log density, before and after the faster pass (issue 51 part 3): ns per cell and whole fits.

One command prints, side by side in the same process and on the same machine:

1. **ns per cell** of one log-density-and-gradient pass (the compiled kernel called in a Numba loop; the two
   kernels timed in turn, the fastest of 9 rounds each) of the *plain* kernel (the route's kernel before the
   change, kept here verbatim as the baseline) and the route's kernel now (``irt/routes/twopl/density.py``),
   on the simulated 51 × 800 (g = 0, K = 1) and on three variants (guessing 0.25; K = 3 with 5 % absent
   cells; both), with the relative difference of the values and gradients (the two kernels compute the same
   density; the difference is rounding);
2. **whole fits** of the simulated 51 × 800 (``bench/bench_2pl.py --timing-only``'s matrix: seed 51, θ, b ~
   N(0, 1), log a ~ N(0, 0.5)): nutpie on the plain kernel at the old defaults (4 chains × (1000 + 1000),
   target accept 0.95) and on the route's kernel at the route's defaults now, with wall and CPU seconds (this
   process's, every sampler thread included), leapfrog steps per draw, max R-hat, min bulk ESS, divergences.

    .venv-irt/bin/python bench/bench_2pl_kernel.py                      # kernels, then both fits
    .venv-irt/bin/python bench/bench_2pl_kernel.py --no-fits            # the kernels only (seconds)
    .venv-irt/bin/python bench/bench_2pl_kernel.py --fit new:4:500:500:0.9 --fit plain:4:1000:1000:0.95

The machine is shared: the load average (``uptime``) is printed next to every number, and CPU seconds are the
figure to compare when it was loaded (idle wall ≈ CPU s / min(chains, cores)).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import resource
import runpy
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))
cpu_name, versions = _machine["cpu_name"], _machine["versions"]

from benchmeasure.base.kernel_cache import numba  # noqa: E402  (after the checkout is on the path)
from benchmeasure.irt.compiled import (  # noqa: E402
    _OK,
    _buffer,
    _finish,
    _mat,
    _rotate_gradient,
    _unrotate,
    _vec,
    register_pair,
)
from benchmeasure.irt.routes.twopl.density import _twopl_expand_call  # noqa: E402

# ---------------------------------------------------------------------------------------------
# the baseline: the route's kernel before the change (commit f0cd675), verbatim but for its name


@numba.njit(cache=True)
def _plain_unpack(z, buf, theta, b):
    head = _vec(buf, 0)
    m, n = int(head[0]), int(head[1])
    if head[4] > 0.5:
        _unrotate(z, m, n, head[5], head[6], _vec(buf, 4), _vec(buf, 5), theta, b)
    else:
        theta[:] = z[:m]
        b[:] = z[m:m + n]


@numba.njit(cache=True)
def _plain_call(z, buf, out, logp):
    head = _vec(buf, 0)
    m, n, slopes, sd = int(head[0]), int(head[1]), head[2] > 0.5, head[3]
    y, k, g = _mat(buf, 1), _mat(buf, 2), _vec(buf, 3)
    theta, b = np.empty(m), np.empty(n)
    _plain_unpack(z, buf, theta, b)
    grad = np.zeros(z.shape[0])
    grad_theta = np.zeros(m)
    grad_b = np.empty(n)
    value = 0.0
    for i in range(n):
        a = math.exp(sd * z[m + n + i]) if slopes else 1.0
        gi = g[i]
        bi = b[i]
        yi, ki = y[i], k[i]
        d_eta_a = 0.0
        d_eta_sum = 0.0
        if gi == 0.0:
            for j in range(m):
                diff = theta[j] - bi
                eta = a * diff
                e = math.exp(-abs(eta))
                s = 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)
                value += yi[j] * eta - ki[j] * (max(eta, 0.0) + math.log1p(e))
                de = yi[j] - ki[j] * s
                grad_theta[j] += de * a
                d_eta_sum += de
                d_eta_a += de * diff
        else:
            log_q0 = math.log1p(-gi)
            for j in range(m):
                diff = theta[j] - bi
                eta = a * diff
                e = math.exp(-abs(eta))
                s = 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)
                p = gi + (1.0 - gi) * s
                value += yi[j] * math.log(p) + (ki[j] - yi[j]) * (log_q0 - max(eta, 0.0) - math.log1p(e))
                de = yi[j] * (1.0 - gi) * s * (1.0 - s) / p - (ki[j] - yi[j]) * s
                grad_theta[j] += de * a
                d_eta_sum += de
                d_eta_a += de * diff
        grad_b[i] = -a * d_eta_sum
        if slopes:
            grad[m + n + i] = sd * a * d_eta_a
    if head[4] > 0.5:
        _rotate_gradient(grad_theta, grad_b, head[5], head[6], _vec(buf, 4), _vec(buf, 5), grad)
    else:
        grad[:m] = grad_theta
        grad[m:m + n] = grad_b
    return _finish(value, grad, z, out, logp)


def _plain_logp(dim, x, grad, logp, data):
    return _plain_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


def _plain_expand(dim, n_expanded, x, out, data):   # the route's own expand (unchanged)
    _twopl_expand_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(out, (n_expanded,)))
    return _OK


# ---------------------------------------------------------------------------------------------


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def simulated(seed=51, models=51, items=800):
    """bench_2pl.py --timing-only's matrix: θ, b ~ N(0, 1), log a ~ N(0, 0.5), K = 1."""
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(0, 1, models), rng.normal(0, 1, items), np.exp(rng.normal(0, 0.5, items))
    return rng.binomial(1, 1 / (1 + np.exp(-a * (theta[:, None] - b)))), a


def variants():
    """(name, counts, trials, guessing) of the kernel comparison."""
    y, _ = simulated()
    rng = np.random.default_rng(7)
    m, n = y.shape
    theta, b, a = rng.normal(0, 1, m), rng.normal(0, 1, n), np.exp(rng.normal(0, 0.5, n))
    p = 0.25 + 0.75 / (1 + np.exp(-a * (theta[:, None] - b)))
    y_g = rng.binomial(1, p)
    k3 = np.full((m, n), 3.0)
    k3[rng.random((m, n)) < 0.05] = 0.0
    y3 = rng.binomial(k3.astype(int), 1 / (1 + np.exp(-a * (theta[:, None] - b))))
    y3g = rng.binomial(k3.astype(int), p)
    return [("51 x 800, g = 0, K = 1", y, np.ones((m, n)), 0.0),
            ("51 x 800, g = 0.25, K = 1", y_g, np.ones((m, n)), 0.25),
            ("51 x 800, g = 0, K = 3, 5 % absent", y3, k3, 0.0),
            ("51 x 800, g = 0.25, K = 3, 5 % absent", y3g, k3, 0.25)]


def _looped(kernel):
    @numba.njit
    def loop(z, buf, reps):
        out = np.empty(z.shape[0])
        logp = np.empty(1)
        total = 0.0
        for _ in range(reps):
            kernel(z, buf, out, logp)
            total += logp[0]
        return total
    return loop


def kernels(reps: int, rounds: int) -> list[dict]:
    from benchmeasure.irt.routes.twopl.density import VECTOR_EXP, _twopl_call, _twopl_call_vector, twopl_density

    kernels = {"plain": _plain_call, "scalar": _twopl_call}   # "new": the route's own (libmvec's exp where it runs)
    if VECTOR_EXP:
        kernels["vector"] = _twopl_call_vector
    loops = {which: _looped(kernel) for which, kernel in kernels.items()}
    rows = []
    for name, y, k, g in variants():
        density = twopl_density(y, k, g, models=range(y.shape[0]), items=range(y.shape[1]))
        z = np.random.default_rng(3).normal(size=density.n_dim) * 0.5
        row = {"matrix": name, "load": load()}
        results = {}
        best = {which: math.inf for which in kernels}
        for which in best:
            loops[which](z, density.buffer, 1)      # compiled (or loaded) before timing
        for _ in range(rounds):   # the two kernels in turn, so a change of load falls on both
            for which in best:
                start = time.perf_counter()
                loops[which](z, density.buffer, reps)
                best[which] = min(best[which], (time.perf_counter() - start) / reps)
        for which, kernel in kernels.items():
            row[f"{which}_ns_per_cell"] = best[which] / y.size * 1e9
            out, logp = np.empty(density.n_dim), np.empty(1)
            kernel(z, density.buffer, out, logp)
            results[which] = (logp[0], out)
        v0, g0 = results["plain"]
        for which in kernels:
            v1, g1 = results[which]
            row[f"{which}_value_rel_diff"] = abs(v1 - v0) / abs(v0)
            row[f"{which}_grad_rel_diff"] = float(np.max(np.abs(g1 - g0)) / np.max(np.abs(g0)))
        rows.append(row)
    return rows


def fit(kernel: str, chains: int, tune: int, draws: int, target_accept: float, seed: int = 1) -> dict:
    from benchmeasure.irt.diagnostics import per_parameter, summarize_diagnostics
    from benchmeasure.irt.plan import FitSettings
    from benchmeasure.irt.routes.nuts import NutsRun, run_nuts
    from benchmeasure.irt.routes.twopl.density import twopl_density

    y, a_true = simulated()
    density = twopl_density(y, np.ones(y.shape), 0.0, models=[f"m{j}" for j in range(y.shape[0])],
                            items=[f"i{i}" for i in range(y.shape[1])])
    if kernel in ("plain", "scalar"):   # new: the route's own pair
        density = dataclasses.replace(density, route=f"2pl-{kernel}")
    settings = FitSettings(chains=chains, tune=tune, draws=draws, target_accept=target_accept, seed=seed,
                           model="2pl")
    before = load()
    cpu, wall = cpu_seconds(), time.perf_counter()
    draws_, _, sampling = run_nuts(density, ["theta", "b", "a"], NutsRun(settings, seed, min(chains, 2), None))
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    stats = {name: per_parameter(draws_, name) for name in ("theta", "b", "a")}
    d = summarize_diagnostics(draws_, ["theta", "b", "a"], stats=stats)
    return {"kernel": kernel, "chains": chains, "tune": tune, "draws": draws, "target_accept": target_accept,
            "wall_s": wall, "cpu_s": cpu, "sampling_s": sampling, "load_before": before, "load_after": load(),
            "steps_per_draw": d.get("leapfrog_steps_per_draw"), "max_r_hat": d["max_r_hat"],
            "min_ess_bulk": d["min_ess_bulk"], "worst_ess": d.get("worst_ess_bulk"),
            "divergences": d.get("divergences"),
            "corr_a_truth": float(np.corrcoef(a_true, stats["a"]["mean"])[0, 1])}


def main() -> None:
    from benchmeasure.irt.plan import PAPER_DEFAULTS
    from benchmeasure.irt.routes import ROUTES

    new = dict(PAPER_DEFAULTS, chains=4, **ROUTES["2pl"].defaults)   # what fit --model 2pl runs by default
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100, help="kernel calls per timing round (default 100)")
    parser.add_argument("--rounds", type=int, default=9,
                        help="timing rounds, the kernels in turn; the fastest round of each counts (default 9)")
    parser.add_argument("--no-fits", action="store_true", help="time the kernels only")
    parser.add_argument("--fit", action="append", metavar="KERNEL:CHAINS:TUNE:DRAWS:TARGET",
                        help="a whole fit to run (KERNEL plain, scalar or new: the route's); default: "
                             "plain:4:1000:1000:0.95 and new at "
                             "the route's defaults (new:{chains}:{tune}:{draws}:{target_accept})".format(**new))
    args = parser.parse_args()
    register_pair("2pl-plain", _plain_logp, _plain_expand)
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs; {versions(['numba', 'nutpie', 'numpy'])}; {load()}",
          flush=True)
    print("\n| matrix | plain ns/cell | new, scalar exp | new, libmvec exp | speed-up (plain / best new) | "
          "value rel. diff (scalar; libmvec) | gradient rel. diff (scalar; libmvec) | load |")
    print("|---|---|---|---|---|---|---|---|")
    for r in kernels(args.reps, args.rounds):
        vector = "vector_ns_per_cell" in r
        best = r["vector_ns_per_cell"] if vector else r["scalar_ns_per_cell"]
        print(f"| {r['matrix']} | {r['plain_ns_per_cell']:.2f} | {r['scalar_ns_per_cell']:.2f} | "
              + (f"{r['vector_ns_per_cell']:.2f}" if vector else "— (no libmvec here)")
              + f" | {r['plain_ns_per_cell'] / best:.2f}x | {r['scalar_value_rel_diff']:.1e}"
              + (f"; {r['vector_value_rel_diff']:.1e}" if vector else "")
              + f" | {r['scalar_grad_rel_diff']:.1e}" + (f"; {r['vector_grad_rel_diff']:.1e}" if vector else "")
              + f" | {r['load']} |", flush=True)
    if args.no_fits:
        return
    specs = args.fit or ["plain:4:1000:1000:0.95",
                         f"new:{new['chains']}:{new['tune']}:{new['draws']}:{new['target_accept']}"]
    print("\nsimulated 51 x 800 (K = 1, g = 0), seed 1, nutpie on min(chains, 2) threads:\n")
    print("| kernel | chains x (tune + draws), target accept | wall s | CPU s | steps/draw | max R-hat | "
          "min bulk ESS | divergences | bulk ESS per CPU s | corr(a, truth) | load before → after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in specs:
        kernel, chains, tune, draws, accept = spec.split(":")
        r = fit(kernel, int(chains), int(tune), int(draws), float(accept))
        print(f"| {r['kernel']} | {r['chains']} x ({r['tune']} + {r['draws']}), {r['target_accept']} | "
              f"{r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['steps_per_draw']:.1f} | {r['max_r_hat']:.3f} | "
              f"{r['min_ess_bulk']:.0f} ({r['worst_ess']}) | {r['divergences']} | "
              f"{r['min_ess_bulk'] / r['cpu_s']:.1f} | {r['corr_a_truth']:.2f} | "
              f"{r['load_before']} → {r['load_after']} |", flush=True)


if __name__ == "__main__":
    main()
