#!/usr/bin/env python3
"""Side-by-side speed of the 1PL NUTS fit: nutpie (default path) against PyMC's own NUTS.

Simulated data: 12 models, 8 trials per cell, θ and b drawn from Normal(0, 1), g = 0, for
12 × 30, 12 × 675 (OlympiadBench's size) and 12 × 4,241 (ScienceQA's test set); the
paper's settings (4 chains × (1,000 warm-up + 1,000 draws), target_accept 0.95). Every
configuration runs in a fresh interpreter pinned to the same cores (default 2), one after
another, after an untimed warm-up fit per configuration that fills the on-disk compilation
caches (as any second use on a machine finds them), and reports

  wall s      process start to finish: imports, compilation, sampling, summaries
  fit s       inside fit_1pl: compilation + sampling + summaries
  sampling s  the sampler alone
  min ESS     minimum bulk ESS over every θ and b;  ESS/s = min ESS / wall s
  max R-hat, divergences, leapfrog steps per draw (mean)

Configurations (``--configs``):

  nutpie          joint route (``--route joint``): nutpie, fused Numba kernel, rotated coordinates, diagonal
                  mass matrix
  collapsed       the default route: nutpie on the abilities' marginal, b integrated out and drawn exactly
                  (bench/bench_irt_scale.py measures it at the size of real suites)
  pymc            PyMC's own NUTS on the joint model (``--sampler pymc --route joint``)
  pymc-literal    PyMC's own NUTS on the model as written: pm.Binomial(p=sigmoid(θ − b)), θ and b sampled
                  directly (the baseline the issue measured)
  nutpie-direct   nutpie + fused kernel without the rotation (θ and b sampled directly)
  nutpie-lowrank  nutpie + fused kernel + rotation + nutpie's low-rank mass-matrix adaptation
  nutpie-plain    nutpie on the rotated model with the likelihood as PyTensor elementwise operations
  numpyro         numpyro's NUTS (JAX, CPU here) on the joint rotated model, likelihood as PyTensor operations
                  compiled to JAX (``--sampler numpyro``; needs ``pip install -r requirements_numpyro.txt``)

``--gradient`` also times one log-density + gradient evaluation (fused Op vs the same
expression as PyTensor elementwise operations, both compiled by Numba).

    .venv-irt/bin/python bench/bench_irt.py                 # the full table (tens of minutes: PyMC is slow)
    .venv-irt/bin/python bench/bench_irt.py --quick         # 12 × 30 and 12 × 300, 500 + 500 draws
    .venv-irt/bin/python bench/bench_irt.py --sizes 675 --configs nutpie,nutpie-lowrank --markdown out.md

The table is printed and written as Markdown (default bench/results/bench_irt.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import runpy
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))  # CPU name and versions, shared by the benches
cpu_name, versions = _machine["cpu_name"], _machine["versions"]

CONFIGS = {
    "nutpie": dict(sampler="nutpie", parametrization="rotated", adaptation="diag", kernel="fused"),
    "collapsed": dict(sampler="nutpie", parametrization="rotated", adaptation="diag", kernel="fused",
                      route="collapsed"),
    "pymc": dict(sampler="pymc", parametrization="rotated", adaptation=None, kernel="fused"),
    "pymc-literal": dict(sampler="pymc", parametrization="direct", adaptation=None, kernel="binomial"),
    "nutpie-direct": dict(sampler="nutpie", parametrization="direct", adaptation="diag", kernel="fused"),
    "nutpie-lowrank": dict(sampler="nutpie", parametrization="rotated", adaptation="low_rank", kernel="fused"),
    "nutpie-plain": dict(sampler="nutpie", parametrization="rotated", adaptation="diag", kernel="pytensor"),
    # numpyro's NUTS (JAX) on the joint model, likelihood as PyTensor operations compiled to JAX (the fused
    # kernel has no JAX version); needs requirements_numpyro.txt (fit_1pl picks that kernel itself)
    "numpyro": dict(sampler="numpyro", parametrization="rotated", adaptation=None, kernel="fused"),
}
DEFAULT_CONFIGS = ["nutpie", "pymc", "pymc-literal"]
N_MODELS, N_TRIALS = 12, 8


def simulate(n_items: int, seed: int):
    import numpy as np

    from benchmeasure.core.matrix import ResponseMatrix
    from benchmeasure.irt.simulate import simulate_counts

    rng = np.random.default_rng(seed)
    theta = rng.normal(size=N_MODELS)
    b = rng.normal(size=n_items)
    counts = simulate_counts(theta, b, N_TRIALS, seed=seed + 1)
    return ResponseMatrix([f"m{j}" for j in range(N_MODELS)], [f"i{i}" for i in range(n_items)], counts, N_TRIALS)


# ------------------------------------------------------------------------------------------
# worker: one configuration in this (fresh) interpreter


def worker(args) -> dict:
    process_start = float(args.process_start)
    import numpy as np

    spec = CONFIGS[args.config]
    matrix = simulate(args.items, args.seed)
    fit_start = time.perf_counter()
    if spec["kernel"] == "fused":
        from benchmeasure.irt.fit import fit_1pl

        result = fit_1pl(matrix, sampler=spec["sampler"], parametrization=spec["parametrization"],
                         adaptation=spec["adaptation"] or "diag", chains=args.chains, tune=args.tune,
                         draws=args.draws, target_accept=args.target_accept, seed=args.seed, cores=args.cores,
                         route=spec.get("route", "joint"))
        d = result.diagnostics
        b_mean = result.b_mean
    else:
        d, b_mean = _fit_other(spec, matrix, args)
    fit_s = time.perf_counter() - fit_start
    truth = simulate_truth(args.items, args.seed)
    return {
        "config": args.config, "items": args.items, "wall_s": time.time() - process_start, "fit_s": fit_s,
        "sampling_s": d["sampling_time_s"], "compile_s": d.get("compile_time_s"),
        "min_ess_bulk": d["min_ess_bulk"], "max_r_hat": d["max_r_hat"], "divergences": d["divergences"],
        "steps_per_draw": d["leapfrog_steps_per_draw"], "corr_b_true": float(np.corrcoef(b_mean, truth)[0, 1]),
    }


def simulate_truth(n_items, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    rng.normal(size=N_MODELS)
    return rng.normal(size=n_items)


def _fit_other(spec, matrix, args):
    """The configurations that do not go through fit_1pl's fused model."""
    import pymc as pm

    from benchmeasure.irt.diagnostics import per_parameter, summarize_diagnostics
    from benchmeasure.irt.model import build_model

    if spec["kernel"] == "binomial":
        with pm.Model() as model:
            theta = pm.Normal("theta", 0.0, 1.0, shape=N_MODELS)
            b = pm.Normal("b", 0.0, 1.0, shape=len(matrix.items))
            pm.Binomial("y", n=matrix.n_trials, p=pm.math.sigmoid(theta[:, None] - b[None, :]),
                        observed=matrix.counts)
    else:
        model = build_model(matrix.counts, matrix.n_trials, 0.0, parametrization=spec["parametrization"],
                            kernel="pytensor")
    if spec["sampler"] == "pymc":
        start = time.perf_counter()
        idata = pm.sample(draws=args.draws, tune=args.tune, chains=args.chains, cores=args.cores,
                          random_seed=args.seed, target_accept=args.target_accept, nuts_sampler="pymc", model=model,
                          progressbar=False, compute_convergence_checks=False, var_names=["theta", "b"])
        total = time.perf_counter() - start
        sampling = float(idata["posterior"].attrs.get("sampling_time") or total)
        compile_s = total - sampling
    else:
        import nutpie
        import pytensor

        start = time.perf_counter()
        with pytensor.config.change_flags(numba__fastmath=False):
            compiled = nutpie.compile_pymc_model(model, var_names=["theta", "b"])
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        idata = nutpie.sample(compiled, chains=args.chains, tune=args.tune, draws=args.draws, seed=args.seed,
                              cores=args.cores, target_accept=args.target_accept, adaptation=spec["adaptation"],
                              progress_bar=False, save_warmup=False)
        sampling = time.perf_counter() - start
    d = summarize_diagnostics(idata, ["theta", "b"], sampling_time_s=sampling)
    d["compile_time_s"] = compile_s
    return d, per_parameter(idata, "b")["mean"]


def gradient_cost(n_items: int, seed: int, repeats: int = 2000) -> dict:
    """Seconds per log-density + gradient evaluation: fused Op vs PyTensor elementwise, both via Numba."""
    import numpy as np
    import pytensor
    import pytensor.tensor as pt

    from benchmeasure.irt.routes.joint.op import loglik_op, pytensor_loglik

    matrix = simulate(n_items, seed)
    theta = pt.dvector("theta")
    b = pt.dvector("b")
    rng = np.random.default_rng(seed)
    t0, b0 = rng.normal(size=N_MODELS), rng.normal(size=n_items)
    out = {}
    for name, expr in (("fused", loglik_op(matrix.counts, N_TRIALS, 0.0)(theta, b)),
                       ("pytensor", pytensor_loglik(matrix.counts, N_TRIALS, 0.0, theta, b).sum())):
        f = pytensor.function([theta, b], [expr, *pt.grad(expr, [theta, b])], mode="NUMBA")
        f(t0, b0)
        start = time.process_time()
        for _ in range(repeats):
            f(t0, b0)
        out[name] = (time.process_time() - start) / repeats
    out["cells"] = N_MODELS * n_items
    return out


# ------------------------------------------------------------------------------------------
# driver


def run_config(config, items, args) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--config", config, "--items", str(items),
           "--chains", str(args.chains), "--tune", str(args.tune), "--draws", str(args.draws),
           "--target-accept", str(args.target_accept), "--seed", str(args.seed), "--cores", str(args.cores),
           "--process-start", "0"]
    env = dict(os.environ)
    load_before = os.getloadavg()[0]
    start = time.time()
    cmd[-1] = repr(start)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        return {"config": config, "items": items, "error": tail}
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
    record = json.loads(line)
    record["load_before"] = load_before
    record["load_after"] = os.getloadavg()[0]
    return record


def fmt(value, spec):
    return "–" if value is None else format(value, spec)


def table(records, args, gradient) -> str:
    lines = [
        f"Simulated {N_MODELS} models × N items, {N_TRIALS} trials, g = 0; {args.chains} chains × "
        f"({args.tune} warm-up + {args.draws} draws), target_accept {args.target_accept}; {args.cores} cores; "
        f"seed {args.seed}; one run each.",
        "",
        "| items | config | wall s | fit s | sampling s | min bulk ESS | ESS/s (wall) | max R-hat | divergences "
        "| leapfrog steps / draw | corr(b, true) | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['items']} | {r['config']} | failed: {r['error'].splitlines()[-1][:80]} |"
                         + " |" * 9)
            continue
        ess_s = r["min_ess_bulk"] / r["wall_s"] if r["min_ess_bulk"] else None
        lines.append(
            f"| {r['items']} | {r['config']} | {r['wall_s']:.1f} | {r['fit_s']:.1f} | {r['sampling_s']:.1f} | "
            f"{fmt(r['min_ess_bulk'], '.0f')} | {fmt(ess_s, '.1f')} | {fmt(r['max_r_hat'], '.4f')} | "
            f"{r['divergences']} | {fmt(r['steps_per_draw'], '.1f')} | {r['corr_b_true']:.4f} | "
            f"{r['load_before']:.1f}→{r['load_after']:.1f} |")
    ratios = []
    for items in sorted({r["items"] for r in records}):
        by = {r["config"]: r for r in records if r["items"] == items and "error" not in r and r["min_ess_bulk"]}
        if "nutpie" not in by:
            continue
        fast = by["nutpie"]["min_ess_bulk"] / by["nutpie"]["wall_s"]
        fast_sampling = by["nutpie"]["min_ess_bulk"] / by["nutpie"]["sampling_s"]
        for base in ("pymc", "pymc-literal"):
            if base in by:
                slow = by[base]["min_ess_bulk"] / by[base]["wall_s"]
                slow_sampling = by[base]["min_ess_bulk"] / by[base]["sampling_s"]
                ratios.append(f"- {items} items: nutpie / {base} in min-ESS per second = {fast / slow:.1f}× "
                              f"(wall), {fast_sampling / slow_sampling:.1f}× (sampling only)")
    if ratios:
        lines += ["", "Speed-up of the default path:", *ratios]
    if gradient:
        lines += ["", "One log-density + gradient evaluation (CPU time, Numba back end):", "",
                  "| items | cells | fused Op | PyTensor elementwise | ratio |", "|---|---|---|---|---|"]
        for items, g in gradient.items():
            lines.append(f"| {items} | {g['cells']} | {g['fused'] * 1e3:.3f} ms ({g['fused'] / g['cells'] * 1e9:.1f} "
                         f"ns/cell) | {g['pytensor'] * 1e3:.3f} ms ({g['pytensor'] / g['cells'] * 1e9:.1f} ns/cell) | "
                         f"{g['pytensor'] / g['fused']:.1f}× |")
    lines += ["", f"Machine: {platform.processor() or platform.machine()}, {cpu_name()}, "
              f"{os.cpu_count()} CPUs visible, {args.cores} used; Python {platform.python_version()}; "
              f"{versions(['pymc', 'pytensor', 'nutpie', 'numba', 'numpyro', 'jax'])}; {time.strftime('%Y-%m-%d')}."]
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="12 × 30 and 12 × 300 with 500 + 500 draws")
    p.add_argument("--sizes", default=None, help="comma-separated item counts (default 30,675,4241)")
    p.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                   help=f"comma-separated, from {', '.join(CONFIGS)} (default {','.join(DEFAULT_CONFIGS)})")
    p.add_argument("--ablations", action="store_true",
                   help="add nutpie-direct, nutpie-lowrank and nutpie-plain at every size up to 675 items")
    p.add_argument("--gradient", action="store_true", help="also time one log-density + gradient evaluation")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--target-accept", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument("--cores", type=int, default=2, help="cores to pin every run to (default 2)")
    p.add_argument("--markdown", default=str(ROOT / "bench" / "results" / "bench_irt.md"),
                   help="where to write the Markdown table (default bench/results/bench_irt.md)")
    p.add_argument("--json", default=None, help="also write the raw records as JSON")
    p.add_argument("--no-warmup", action="store_true",
                   help="skip the untimed warm-up fits that fill the on-disk compilation caches")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--config", default=None, help=argparse.SUPPRESS)
    p.add_argument("--items", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--process-start", default="0", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > args.cores:
            os.sched_setaffinity(0, cpus[: args.cores])  # children inherit the same cores
        args.cores = min(args.cores, len(cpus))
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    if args.quick:
        sizes = [30, 300]
        args.tune = min(args.tune, 500)
        args.draws = min(args.draws, 500)
    else:
        sizes = [30, 675, 4241]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        print(f"error: unknown config(s) {unknown}; choose from {', '.join(CONFIGS)}", file=sys.stderr)
        return 2
    if not args.no_warmup:
        # Fill Numba's and PyTensor's on-disk caches once (what a first run after installing
        # does), so that each timed run below measures the per-model compilation only.
        print("[bench] warm-up: one tiny fit per configuration ...", file=sys.stderr, flush=True)
        tiny = argparse.Namespace(**{**vars(args), "tune": 20, "draws": 20, "chains": 2})
        for config in sorted(set(configs) | ({"nutpie-direct", "nutpie-lowrank", "nutpie-plain"}
                                             if args.ablations else set())):
            run_config(config, 12, tiny)
    records = []
    for items in sizes:
        todo = list(configs)
        if args.ablations and items <= 675:
            todo += [c for c in ("nutpie-direct", "nutpie-lowrank", "nutpie-plain") if c not in todo]
        for config in todo:
            print(f"[bench] {N_MODELS} x {items}: {config} ...", file=sys.stderr, flush=True)
            record = run_config(config, items, args)
            records.append(record)
            if "error" in record:
                print(f"[bench]   failed: {record['error']}", file=sys.stderr)
            else:
                print(f"[bench]   wall {record['wall_s']:.1f} s, sampling {record['sampling_s']:.1f} s, "
                      f"min ESS {record['min_ess_bulk']:.0f}, max R-hat {record['max_r_hat']:.4f}, "
                      f"steps/draw {record['steps_per_draw']:.1f}", file=sys.stderr, flush=True)
    gradient = {items: gradient_cost(items, args.seed) for items in sizes} if args.gradient else {}
    text = table(records, args, gradient)
    print(text)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(text, encoding="utf-8")
        print(f"[bench] wrote {args.markdown}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
