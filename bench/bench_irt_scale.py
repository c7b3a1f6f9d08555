#!/usr/bin/env python3
"""The 1PL fit at the size of real evaluation suites, through the real command line, side by side.

Simulated binary matrices (K = 1; θ and b drawn from Normal(0, s²), g = 0):

  12x40000   12 models × 40,000 items, s = 1.1: the shape of a 12-LLM × 41,871-item OpenCompass
             matrix; with 12 binary answers per item the columns repeat heavily (about 2,000
             distinct columns, as the real matrix has 2,099; the table prints the count)
  200x10000  200 models × 10,000 items, s = 1

Each size is fitted by ``scripts/fit_irt.py`` at the paper's settings (4 chains × (1,000
warm-up + 1,000 draws), target_accept 0.95), each run a fresh process pinned to the same
cores (default 2), one after another, with the default route (collapsed) and, with
``--joint``, the joint NUTS route beside it. Reported per run: wall time of the whole
command (imports, compilation, sampling, b draws, summaries, writing), its phases from
diagnostics.json, min bulk ESS, max R-hat, divergences, leapfrog steps per draw, the peak
resident memory of the process (getrusage) and, with ``--save-posterior``, the size of
posterior.zarr. Targets: 12 × 40,000 ≤ 300 s, 200 × 10,000 ≤ 900 s; ESS ≥ 400, R-hat ≤ 1.01,
no divergences, peak memory ≤ 3 GB.

``--verify`` adds the check that the collapsed route samples the same posterior as the
joint one: small matrices fitted both ways; the largest |Δ posterior mean| in Monte Carlo
standard errors and |Δ sd| in standard errors of an sd, over every θ and b.

    nice -n 10 .venv-irt/bin/python bench/bench_irt_scale.py                    # both sizes, default route
    nice -n 10 .venv-irt/bin/python bench/bench_irt_scale.py --verify --save-posterior
    .venv-irt/bin/python bench/bench_irt_scale.py --sizes 12x4000 --joint       # a smaller side by side

The table is printed and written as Markdown (default bench/results/bench_irt_scale.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))  # CPU name and versions, shared by the benches
cpu_name, versions = _machine["cpu_name"], _machine["versions"]

SIZES = {"12x40000": (12, 40000, 1.1), "200x10000": (200, 10000, 1.0)}
TARGET_S = {"12x40000": 300.0, "200x10000": 900.0}
VERIFY = [(6, 30, 8, 1.0), (12, 675, 8, 1.0), (30, 200, 1, 1.0)]   # models, items, K, scale of θ and b
PEAK_GB_TARGET = 3.0


def simulate_file(models: int, items: int, n_trials: int, scale: float, seed: int, folder: Path) -> tuple[Path, dict]:
    from benchmeasure.core.matrix import ResponseMatrix, write_matrix
    from benchmeasure.irt.simulate import simulate_counts

    rng = np.random.default_rng(seed)
    theta = rng.normal(size=models) * scale
    b = rng.normal(size=items) * scale
    counts = simulate_counts(theta, b, n_trials, seed=seed + 1)
    path = folder / f"matrix_{models}x{items}_k{n_trials}.csv"
    write_matrix(ResponseMatrix([f"m{j}" for j in range(models)], [f"i{i}" for i in range(items)], counts, n_trials),
                 path)
    info = {"distinct_columns": len(np.unique(counts.T, axis=0)), "file_mb": path.stat().st_size / 1e6}
    return path, info


def run_fit(matrix: Path, n_trials: int, out: Path, args, *extra) -> dict:
    """scripts/fit_irt.py in a fresh process; wall time, peak RSS and diagnostics.json."""
    command = [sys.executable, str(ROOT / "scripts" / "fit_irt.py"), str(matrix), "--n-trials", str(n_trials),
               "--output-dir", str(out), "--seed", str(args.seed), "--chains", str(args.chains),
               "--tune", str(args.tune), "--draws", str(args.draws), "--quiet", *extra]
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    record = {"wall_s": wall, "peak_gb": usage.ru_maxrss * 1024 / 1e9, "load_before": load_before,
              "load_after": os.getloadavg()[0], "returncode": proc.returncode}
    if proc.returncode != 0:
        record["error"] = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {proc.returncode}"
        return record
    d = json.loads((out / "diagnostics.json").read_text())
    timing = d["timing"]
    record.update({
        "route": d["settings"]["route"], "min_ess_bulk": d["min_ess_bulk"], "max_r_hat": d["max_r_hat"],
        "divergences": d["divergences"], "steps_per_draw": d["leapfrog_steps_per_draw"],
        "compile_s": timing.get("compile_time_s"), "sampling_s": timing.get("sampling_time_s"),
        "draw_b_s": timing.get("difficulty_draw_time_s"), "summary_s": timing.get("summary_time_s"),
        "quadrature": d.get("quadrature"), "warnings": d.get("warnings"),
    })
    zarr = out / "posterior.zarr"
    if zarr.exists():
        record["posterior_mb"] = sum(p.stat().st_size for p in zarr.rglob("*") if p.is_file()) / 1e6
    return record


def read_draws(out: Path) -> dict:
    """θ and b draws (chains, draws, P) as float64 from a fit's posterior.zarr."""
    import xarray as xr

    tree = xr.open_datatree(out / "posterior.zarr", engine="zarr")
    posterior = tree["posterior"]
    return {name: np.asarray(posterior[name].transpose("chain", "draw", dim).values, dtype=float)
            for name, dim in (("theta", "model"), ("b", "item"))}


def agreement(a: np.ndarray, b: np.ndarray) -> dict:
    """Posterior means and sds of two samples (chains, draws, P) compared in Monte Carlo units.

    The standard error of a mean uses the bulk ESS of the draws, that of an sd the bulk ESS
    of the squared deviations (NUTS draws can be antithetic for the mean but not for the
    variance), sd·√(1/(2·ESS)) per sample. Also the average relative sd difference over the
    P parameters with its standard error: a systematic difference would show there.
    """
    from benchmeasure.irt.diagnostics import ess_bulk

    def stats(x):
        mean, sd = x.mean(axis=(0, 1)), x.std(axis=(0, 1), ddof=1)
        return mean, sd, ess_bulk(x), ess_bulk((x - mean) ** 2)

    ma, sa, ea, qa = stats(a)
    mb, sb, eb, qb = stats(b)
    z_mean = (ma - mb) / np.sqrt(sa ** 2 / ea + sb ** 2 / eb)
    z_sd = (sa - sb) / np.sqrt(sa ** 2 / (2 * qa) + sb ** 2 / (2 * qb))
    rel = (sa - sb) / sb
    return {"mean_z": float(np.max(np.abs(z_mean))), "sd_z": float(np.max(np.abs(z_sd))),
            "sd_rel": float(rel.mean()), "sd_rel_se": float(rel.std(ddof=1) / np.sqrt(rel.size))}


def verify(args, folder: Path) -> list[dict]:
    """Small matrices fitted by both routes: agreement in Monte Carlo units, and the time of each."""
    out = []
    for models, items, n_trials, scale in VERIFY:
        matrix, _ = simulate_file(models, items, n_trials, scale, args.seed, folder)
        runs = {}
        for route in ("collapsed", "joint"):
            target = folder / f"verify_{models}x{items}_{route}"
            print(f"[bench] verify {models} x {items} (K = {n_trials}): {route} ...", file=sys.stderr, flush=True)
            runs[route] = run_fit(matrix, n_trials, target, args, "--route", route, "--save-posterior")
            runs[route]["draws"] = read_draws(target)
        c, j = runs["collapsed"], runs["joint"]
        record = {"size": f"{models}x{items}", "n_trials": n_trials,
                  "wall_collapsed": c["wall_s"], "wall_joint": j["wall_s"],
                  "ess_collapsed": c["min_ess_bulk"], "ess_joint": j["min_ess_bulk"],
                  "rhat_collapsed": c["max_r_hat"], "rhat_joint": j["max_r_hat"]}
        for name in ("theta", "b"):
            for key, value in agreement(c["draws"][name], j["draws"][name]).items():
                record[f"{name}_{key}"] = value
        out.append(record)
    return out


def fmt(value, spec: str) -> str:
    if value is None:
        return "–"
    return format(value, spec)


def table(records, checks, args) -> str:
    lines = [f"Simulated binary matrices (K = 1, g = 0); {args.chains} chains × ({args.tune} warm-up + {args.draws} "
             f"draws), target_accept 0.95; each run is `scripts/fit_irt.py` in a fresh process pinned to "
             f"{args.cores} cores; seed {args.seed}; one run each.", "",
             "| size | distinct columns | route | wall s | compile s | NUTS s | b draws s | summaries s | min bulk ESS "
             "| max R-hat | divergences | steps / draw | peak GB | posterior.zarr MB | targets | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['size']} | {r['distinct_columns']} | {r['label']} | failed: {r['error']} "
                         "| | | | | | | | | | | | |")
            continue
        met = (r["wall_s"] <= TARGET_S.get(r["size"], float("inf")) and (r["min_ess_bulk"] or 0) >= 400
               and (r["max_r_hat"] or 9) <= 1.01 and r["divergences"] == 0 and r["peak_gb"] <= PEAK_GB_TARGET)
        lines.append(
            f"| {r['size']} | {r['distinct_columns']} | {r['label']} | {r['wall_s']:.1f} "
            f"| {fmt(r['compile_s'], '.1f')} "
            f"| {fmt(r['sampling_s'], '.1f')} | {fmt(r['draw_b_s'], '.1f')} | {fmt(r['summary_s'], '.1f')} "
            f"| {fmt(r['min_ess_bulk'], '.0f')} | {fmt(r['max_r_hat'], '.4f')} | {r['divergences']} "
            f"| {fmt(r['steps_per_draw'], '.1f')} | {r['peak_gb']:.2f} | {fmt(r.get('posterior_mb'), '.0f')} "
            f"| {'met' if met else 'missed'} | {r['load_before']:.1f}→{r['load_after']:.1f} |")
    lines += ["", "Targets: 12x40000 ≤ 300 s wall, 200x10000 ≤ 900 s; min bulk ESS ≥ 400, max R-hat ≤ 1.01, "
              "no divergences, peak memory ≤ 3 GB."]
    if checks:
        lines += ["", "Collapsed vs joint NUTS on small matrices (the same posterior?): the largest |Δ mean| over "
                  "every θ "
                  "(or b) in Monte Carlo standard errors √(sd²/ESS + sd²/ESS) (bulk ESS of the draws), the largest "
                  "|Δ sd| in standard errors of an sd (bulk ESS of the squared deviations); over hundreds of "
                  "parameters about 3.5 is the largest expected by chance. \"sd bias\": the mean relative sd "
                  "difference (collapsed − joint)/joint over the parameters ± its standard error.", "",
                  "| size | K | wall s collapsed | wall s joint | min ESS collapsed | min ESS joint "
                  "| max R-hat collapsed | max R-hat joint | θ mean z | θ sd z | θ sd bias | b mean z | b sd z "
                  "| b sd bias |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in checks:
            lines.append(f"| {c['size']} | {c['n_trials']} | {c['wall_collapsed']:.1f} | {c['wall_joint']:.1f} "
                         f"| {fmt(c['ess_collapsed'], '.0f')} | {fmt(c['ess_joint'], '.0f')} "
                         f"| {fmt(c['rhat_collapsed'], '.4f')} | {fmt(c['rhat_joint'], '.4f')} "
                         f"| {c['theta_mean_z']:.2f} | {c['theta_sd_z']:.2f} "
                         f"| {100 * c['theta_sd_rel']:+.2f}% ± {100 * c['theta_sd_rel_se']:.2f}% "
                         f"| {c['b_mean_z']:.2f} | {c['b_sd_z']:.2f} "
                         f"| {100 * c['b_sd_rel']:+.2f}% ± {100 * c['b_sd_rel_se']:.2f}% |")
    lines += ["", f"Machine: {platform.machine()}, {cpu_name()}, {os.cpu_count()} CPUs visible, {args.cores} used; "
              f"Python {platform.python_version()}; {versions(['pymc', 'nutpie', 'numba'])}; "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
              "The machine was shared with other work (load-average column: 1-minute load before → after each run)."]
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=",".join(SIZES),
                   help="comma-separated MODELSxITEMS (default 12x40000,200x10000; others use s = 1)")
    p.add_argument("--joint", action="store_true", help="also fit every size with --route joint (slow)")
    p.add_argument("--verify", action="store_true", help="add the collapsed-vs-joint agreement table")
    p.add_argument("--save-posterior", action="store_true", help="fit with --save-posterior and report its size")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument("--cores", type=int, default=2, help="cores to pin every run to (default 2)")
    p.add_argument("--markdown", default=str(ROOT / "bench" / "results" / "bench_irt_scale.md"))
    p.add_argument("--json", default=None, help="also write the raw records as JSON")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > args.cores:
            os.sched_setaffinity(0, cpus[: args.cores])  # children inherit the same cores
        args.cores = min(args.cores, len(cpus))
    records = []
    with tempfile.TemporaryDirectory(prefix="bench_irt_scale.") as tmp:
        folder = Path(tmp)
        for size in [s.strip() for s in args.sizes.split(",") if s.strip()]:  # --sizes '' with --verify: checks only
            models, items = (int(x) for x in size.split("x"))
            scale = SIZES.get(size, (models, items, 1.0))[2]
            matrix, info = simulate_file(models, items, 1, scale, args.seed, folder)
            routes = [("collapsed (default)", [])] + ([("joint", ["--route", "joint"])] if args.joint else [])
            for label, extra in routes:
                print(f"[bench] {size}: {label} ...", file=sys.stderr, flush=True)
                extra = extra + (["--save-posterior"] if args.save_posterior else [])
                record = run_fit(matrix, 1, folder / f"out_{size}_{label.split()[0]}", args, *extra)
                record.update(size=size, label=label, **info)
                records.append(record)
                print(f"[bench]   {json.dumps({k: v for k, v in record.items() if k != 'warnings'})}",
                      file=sys.stderr, flush=True)
        checks = verify(args, folder) if args.verify else []
    text = table(records, checks, args)
    print(text)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(text, encoding="utf-8")
        print(f"[bench] wrote {args.markdown}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": records, "verify": checks}, indent=2, default=str),
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
