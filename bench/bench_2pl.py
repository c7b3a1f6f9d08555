"""The 2PL (``fit --model 2pl --compare 1pl``) on the shared real matrices, and its time on a simulated 51 × 800.

For each real matrix (ChemBench 22 × 2,854 from its wide table; ZeroEval GSM8K 44 × 1,319 and MATH level 5 43 × 721,
and MMLU-Pro 29 × 12,032, long files with holes): the 2PL's convergence (max R-hat, min bulk ESS over θ, b and a;
goal ≤ 1.01, ≥ 400), PSIS-LOO of the 2PL vs the 1PL over the cells (elpd difference ± its paired standard error, the
cells with Pareto k > 0.7), the correlation of the 2PL's b with the default 1PL fit's b, the slopes (how many items
with a < 0.5 or > 2), and DDM / Max Gap (``diagnose``) under both. Every step runs the real command line.

    .venv-irt/bin/python bench/bench_2pl.py                        # the fit's default settings, every matrix
    .venv-irt/bin/python bench/bench_2pl.py --only gsm8k --chains 2 --tune 300 --draws 300
    .venv-irt/bin/python bench/bench_2pl.py --timing-only          # the simulated 51 x 800, default settings

Settings not given are the fit's own defaults (``fit --model 2pl``: the 2pl route's, docs/irt.md). Each fit's
CPU seconds (the child process's, every sampler thread) are printed next to its wall time, with the load average:
the machine is shared, and idle wall ≈ CPU s / min(chains, cores).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import runpy
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))  # CPU name and versions, shared by the benches
cpu_name, versions = _machine["cpu_name"], _machine["versions"]

DATA = Path("/work/shared/data")
MATRICES = {
    "chembench": ("wide", DATA / "chembench" / "binary_matrix.csv"),
    "gsm8k": ("long", DATA / "zeroeval" / "gsm8k" / "responses_long.csv"),
    "math_l5": ("long", DATA / "zeroeval" / "math_l5" / "responses_long.csv"),
    "mmlu_pro": ("long", DATA / "mmlu_pro" / "responses_long.csv"),
}


def bm(*args) -> subprocess.CompletedProcess:
    return _machine["benchmeasure_command"](ROOT, *args)


def prepare(name: str, work: Path) -> Path:
    kind, source = MATRICES[name]
    out = work / name / "matrix.csv"
    if kind == "wide":
        bm("prepare", "--from", "wide", source, "--items-as-rows", "--n-trials", 1, "--output", out, "--quiet")
    else:   # model,item_id,correct -> add trial 0
        responses = work / name / "responses.csv"
        responses.parent.mkdir(parents=True, exist_ok=True)
        with open(source, newline="") as src, open(responses, "w", newline="") as dst:
            reader, writer = csv.DictReader(src), csv.writer(dst)
            writer.writerow(["model", "item_id", "trial", "correct"])
            for row in reader:
                writer.writerow([row["model"], row["item_id"], 0, row["correct"]])
        bm("prepare", responses, "--n-trials", 1, "--allow-missing", "--output", out, "--quiet")
    return out


def b_column(folder: Path, column="b_mean") -> np.ndarray:
    with open(folder / "difficulty.csv", newline="") as handle:
        return np.array([float(r[column]) for r in csv.DictReader(handle)])


def metrics(folder: Path) -> dict:
    return json.loads(bm("diagnose", folder / "difficulty.csv", "--json").stdout)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def nuts_flags(chains, tune, draws) -> list:
    """--chains/--tune/--draws for those given (None: the fit's own default)."""
    return [x for flag, value in (("--chains", chains), ("--tune", tune), ("--draws", draws)) if value is not None
            for x in (flag, value)]


def one(name: str, work: Path, chains, tune, draws) -> dict:
    matrix = prepare(name, work)
    common = ["--n-trials", 1, *nuts_flags(chains, tune, draws), "--seed", 1, "--quiet", "--allow-missing"]
    load_before, cpu = load(), child_cpu()
    start = time.perf_counter()
    bm("fit", matrix, *common, "--model", "2pl", "--compare", "1pl", "--output-dir", work / name / "2pl")
    wall_2pl = time.perf_counter() - start
    cpu_2pl = child_cpu() - cpu
    bm("fit", matrix, *common, "--no-calibrate", "--output-dir", work / name / "1pl")
    record = json.loads((work / name / "2pl" / "diagnostics.json").read_text())
    b2, b1 = b_column(work / name / "2pl"), b_column(work / name / "1pl")
    a = b_column(work / name / "2pl", "a_mean")
    m2, m1 = metrics(work / name / "2pl"), metrics(work / name / "1pl")
    loo = record["loo"]
    return {"matrix": name, "models": record["input"]["models"], "items": record["input"]["items"],
            "max_r_hat": record["max_r_hat"], "min_ess_bulk": record["min_ess_bulk"],
            "divergences": record["divergences"], "elpd_diff": loo["elpd_diff"], "se_diff": loo["se_diff"],
            "pareto_k_bad": loo["2pl"]["pareto_k_above_0_7"] + loo["1pl"]["pareto_k_above_0_7"],
            "cells": loo["2pl"]["cells"], "corr_b": float(np.corrcoef(b1, b2)[0, 1]),
            "spearman_b": float(np.corrcoef(np.argsort(np.argsort(b1)), np.argsort(np.argsort(b2)))[0, 1]),
            "a_median": float(np.median(a)), "a_below_0_5": int(np.sum(a < 0.5)), "a_above_2": int(np.sum(a > 2)),
            "ddm_1pl": _metric(m1, "ddm"), "ddm_2pl": _metric(m2, "ddm"),
            "max_gap_1pl": _metric(m1, "max_gap"), "max_gap_2pl": _metric(m2, "max_gap"),
            "wall_2pl_and_1pl_compare_s": wall_2pl, "cpu_2pl_and_1pl_compare_s": cpu_2pl,
            "load": f"{load_before} → {load()}", "sampling_2pl_s": record["timing"]["sampling_time_s"],
            "steps_per_draw": record["leapfrog_steps_per_draw"],
            "settings": {key: record["settings"][key] for key in ("chains", "tune", "draws", "target_accept")}}


def _metric(report, key):
    found = report[0] if isinstance(report, list) else report
    for k in (key, key.upper(), key.replace("_", " ")):
        if k in found:
            return found[k]
    for value in found.values():
        if isinstance(value, dict) and key in value:
            return value[key]
    return None


def timing(work: Path, chains, tune, draws) -> dict:
    rng = np.random.default_rng(51)
    theta, b, a = rng.normal(0, 1, 51), rng.normal(0, 1, 800), np.exp(rng.normal(0, 0.5, 800))
    y = rng.binomial(1, 1 / (1 + np.exp(-a * (theta[:, None] - b))))
    path = work / "sim51x800.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", *(f"i{i}" for i in range(800))])
        writer.writerows([f"m{j}", *row] for j, row in enumerate(y))
    load_before, cpu = load(), child_cpu()
    start = time.perf_counter()
    bm("fit", path, "--n-trials", 1, "--model", "2pl", *nuts_flags(chains, tune, draws), "--seed", 1, "--quiet",
       "--output-dir", work / "sim")
    wall = time.perf_counter() - start
    cpu = child_cpu() - cpu
    record = json.loads((work / "sim" / "diagnostics.json").read_text())
    fitted = b_column(work / "sim", "a_mean")
    s = record["settings"]
    return {"wall_s": wall, "cpu_s": cpu, "load": f"{load_before} → {load()}", "chains": s["chains"],
            "tune": s["tune"], "draws": s["draws"], "target_accept": s["target_accept"],
            "steps_per_draw": record["leapfrog_steps_per_draw"], "divergences": record["divergences"],
            "sampling_s": record["timing"]["sampling_time_s"], "compile_s": record["timing"]["compile_time_s"],
            "max_r_hat": record["max_r_hat"], "min_ess_bulk": record["min_ess_bulk"],
            "corr_a_truth": float(np.corrcoef(a, fitted)[0, 1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=list(MATRICES), action="append")
    parser.add_argument("--chains", type=int, default=None, help="default: the fit's")
    parser.add_argument("--tune", type=int, default=None, help="default: the fit's")
    parser.add_argument("--draws", type=int, default=None, help="default: the fit's")
    parser.add_argument("--timing-only", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--timing-settings", type=int, nargs=3, default=(None, None, None),
                        metavar=("CHAINS", "TUNE", "DRAWS"),
                        help="the simulated 51 x 800 fit's settings (default: the fit's own)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs; {versions(['pymc', 'nutpie', 'numba', 'arviz'])}; "
          f"load average {load()}", flush=True)
    rows, out = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if not args.skip_timing:
            out["timing_51x800"] = t = timing(work, *args.timing_settings)
            print(f"simulated 51 x 800 (K = 1), fit --model 2pl, {t['chains']} chains x ({t['tune']} + {t['draws']}), "
                  f"target accept {t['target_accept']}: wall {t['wall_s']:.1f} s, CPU {t['cpu_s']:.1f} s "
                  f"(compile/load {t['compile_s']:.1f} s, sampling {t['sampling_s']:.1f} s; load average "
                  f"{t['load']}); {t['steps_per_draw']:.1f} leapfrog steps per draw; max R-hat "
                  f"{t['max_r_hat']:.3f}, min bulk ESS {t['min_ess_bulk']:.0f}, {t['divergences']} divergences; "
                  f"corr(a, truth) {t['corr_a_truth']:.2f}", flush=True)
        if not args.timing_only:
            for name in args.only or MATRICES:
                rows.append(one(name, work, args.chains, args.tune, args.draws))
                print(json.dumps(rows[-1]), flush=True)
    out["matrices"] = rows
    if rows:
        s = rows[0]["settings"]
        print(f"\n2PL vs 1PL, {s['chains']} chains x ({s['tune']} + {s['draws']}), target accept "
              f"{s['target_accept']}, seed 1\n")
        print("| matrix | M x N | 2PL max R-hat | min bulk ESS | div | elpd 2PL − 1PL (se) | Pareto k > 0.7 | "
              "corr b (Spearman) | a median | a < 0.5 | a > 2 | DDM 1PL / 2PL | Max Gap 1PL / 2PL | steps/draw | "
              "wall s / CPU s (both fits, LOO) | load |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['matrix']} | {r['models']} x {r['items']} | {r['max_r_hat']:.3f} | "
                  f"{r['min_ess_bulk']:.0f} | {r['divergences']} | {r['elpd_diff']:+.1f} ({r['se_diff']:.1f}) | "
                  f"{r['pareto_k_bad']}/{r['cells']} | "
                  f"{r['corr_b']:.3f} ({r['spearman_b']:.3f}) | {r['a_median']:.2f} | {r['a_below_0_5']} | "
                  f"{r['a_above_2']} | {_fmt(r['ddm_1pl'])} / {_fmt(r['ddm_2pl'])} | "
                  f"{_fmt(r['max_gap_1pl'])} / {_fmt(r['max_gap_2pl'])} | {r['steps_per_draw']:.1f} | "
                  f"{r['wall_2pl_and_1pl_compare_s']:.0f} / {r['cpu_2pl_and_1pl_compare_s']:.0f} | {r['load']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


def _fmt(value) -> str:
    return "—" if value is None else f"{float(value):.4f}"


if __name__ == "__main__":
    main()
