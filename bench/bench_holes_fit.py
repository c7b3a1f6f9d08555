#!/usr/bin/env python3
"""The NUTS fit of a real matrix with holes, collapsed route against joint route, side by side.

MMLU-Pro as bundled (``data/mmlu_pro/responses.csv.gz``: 29 LLMs × 12,032 questions, one graded answer per cell,
1,713 absent cells) is made into a matrix with ``benchmeasure prepare --allow-missing`` and fitted by
``benchmeasure fit --allow-missing`` at the paper's settings (4 chains × (1,000 warm-up + 1,000 draws),
target_accept 0.95), each fit a fresh process pinned to the same cores (default 2):

* ``collapsed`` (the default route with holes): NUTS on the 29 abilities' marginal posterior, every b integrated out
  with the masked likelihood, then b drawn exactly given each θ draw (``benchmeasure/irt/routes/collapsed/holes.py``);
* ``joint`` (``--route joint``): NUTS on (θ, b) together with the PyTensor kernel and the trials matrix. It runs
  until ``--joint-seconds`` (default 120) and is then stopped; the table gives how far its warm-up got and the time
  that rate projects for the whole run.

Reported per run: wall time of the whole command, its CPU time (user + system, from wait4: what the command costs
whatever else runs on the machine), its phases from diagnostics.json, min bulk ESS, max R-hat, divergences and
the peak resident memory of the process (VmHWM). Target (issue 19): collapsed ≤ 90 s wall on 2
cores with max R-hat ≤ 1.01 and min bulk ESS ≥ 400.

    nice -n 10 .venv-irt/bin/python bench/bench_holes_fit.py
    .venv-irt/bin/python bench/bench_holes_fit.py --joint-seconds 0          # the collapsed route only
    .venv-irt/bin/python bench/bench_holes_fit.py --matrix m.csv --n-trials 4  # another matrix with holes
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))
cpu_name, versions = _machine["cpu_name"], _machine["versions"]
TARGET_S = 90.0
WARMUP = re.compile(r"NUTS warm-up, (\d+)/(\d+)")


def mmlu_matrix(folder: Path) -> Path:
    """data/mmlu_pro's long responses (model,item_id,correct,benchmark) → a matrix with holes via prepare."""
    long = folder / "mmlu_pro.csv"
    with gzip.open(ROOT / "data" / "mmlu_pro" / "responses.csv.gz", "rt", encoding="utf-8") as src, \
            open(long, "w", encoding="utf-8") as dst:
        header = next(src).strip().split(",")
        m, i, c = header.index("model"), header.index("item_id"), header.index("correct")
        dst.write("model,item_id,trial,correct\n")
        for line in src:
            cells = line.rstrip("\n").split(",")
            dst.write(f"{cells[m]},{cells[i]},0,{cells[c]}\n")
    matrix = folder / "mmlu" / "response_matrix.csv"
    subprocess.run([sys.executable, "-m", "benchmeasure", "prepare", str(long), "--n-trials", "1",
                    "--allow-missing", "--quiet", "--output", str(matrix)], check=True, cwd=ROOT)
    return matrix


def _peak_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def run_fit(matrix: Path, n_trials: int, out: Path, seed: int, budget: float | None, *extra) -> dict:
    """benchmeasure fit --allow-missing in a fresh process; stopped after ``budget`` seconds when given."""
    command = [sys.executable, "-m", "benchmeasure", "fit", str(matrix), "--n-trials", str(n_trials),
               "--allow-missing", "--seed", str(seed), "--output-dir", str(out), *extra]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    log = open(out.parent / f"{out.name}.stderr", "w+", encoding="utf-8")
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, cwd=ROOT)
    peak, stopped = 0.0, False
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)  # the child's own CPU time, whatever the load
        if pid:
            break
        peak = max(peak, _peak_mb(child.pid))
        if budget is not None and time.perf_counter() - start > budget and not stopped:
            child.terminate()
            stopped = True
        time.sleep(0.5)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    log.seek(0)
    text = log.read()
    log.close()
    record = {"wall": wall, "cpu": cpu, "peak_mb": peak, "stopped": stopped, "load": (load, os.getloadavg()[0])}
    if stopped:
        steps = [(int(a), int(b)) for a, b in WARMUP.findall(text)]
        record["progress"] = steps[-1] if steps else (0, 0)
        return record
    if child.returncode != 0:
        sys.exit(f"fit failed ({child.returncode}): {text[-2000:]}")
    record["diagnostics"] = json.loads((out / "diagnostics.json").read_text(encoding="utf-8"))
    return record


def row(route: str, record: dict) -> str:
    load = f"{record['load'][0]:.1f}→{record['load'][1]:.1f}"
    if record["stopped"]:
        done, total = record["progress"]
        projected = f"~{record['wall'] / done * total / 3600:.1f} h projected" if done else "no step done"
        return (f"| {route} | stopped at {record['wall']:.0f} s: warm-up {done}/{total} ({projected}) | "
                f"{record['cpu']:.0f} | – | – | – | – | – | – | – | {record['peak_mb']:.0f} | missed | {load} |")
    d = record["diagnostics"]
    timing = d.get("timing", {})

    def s(key):
        value = timing.get(key)
        return f"{value:.1f}" if isinstance(value, (int, float)) else "–"

    met = (record["wall"] <= TARGET_S and d["max_r_hat"] <= 1.01 and d["min_ess_bulk"] >= 400
           and d["divergences"] == 0)
    return (f"| {route} | {record['wall']:.1f} | {record['cpu']:.1f} | {s('compile_time_s')} | "
            f"{s('sampling_time_s')} | "
            f"{s('difficulty_draw_time_s')} | {s('summary_time_s')} | {d['min_ess_bulk']:.0f} | {d['max_r_hat']:.4f} | "
            f"{d['divergences']} | {record['peak_mb']:.0f} | {'met' if met else 'missed'} | {load} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", type=Path, help="a matrix with holes (default: MMLU-Pro, bundled)")
    parser.add_argument("--n-trials", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--joint-seconds", type=float, default=120.0,
                        help="stop the joint route after this many seconds (0: do not run it)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cpus[: args.cores])  # children inherit the same cores
        args.cores = min(args.cores, len(cpus))
    with tempfile.TemporaryDirectory(prefix="bench_holes_fit.") as tmp:
        folder = Path(tmp)
        matrix = args.matrix or mmlu_matrix(folder)
        record_path = Path(f"{matrix}.json")
        absent = json.loads(record_path.read_text())["absent_cells"] if record_path.exists() else None
        runs = [("collapsed (default)", run_fit(matrix, args.n_trials, folder / "collapsed", args.seed, None))]
        if args.joint_seconds > 0:
            runs.append(("joint (--route joint)", run_fit(matrix, args.n_trials, folder / "joint", args.seed,
                                                           args.joint_seconds, "--route", "joint")))
    size = "MMLU-Pro" if args.matrix is None else str(args.matrix)
    total = absent.get("total") if isinstance(absent, dict) else absent
    print(f"{size}: fit --allow-missing, 4 chains × (1000 warm-up + 1000 draws), target_accept 0.95, "
          f"seed {args.seed}, {args.cores} cores" + (f"; absent cells: {total}" if total is not None else ""))
    print()
    print("| route | wall s | CPU s | compile s | NUTS s | b draws s | summaries s | min bulk ESS | max R-hat | "
          "divergences | peak MB | target (≤ 90 s, R-hat ≤ 1.01, ESS ≥ 400) | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for route, record in runs:
        print(row(route, record))
    print(f"\nMachine: {cpu_name()}, {args.cores} cores used of {os.cpu_count()}; Python {sys.version.split()[0]}; "
          f"{versions(['pymc', 'nutpie', 'numba'])}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
          "Load average: 1-minute load before → after each run (the machine is shared with other work).")


if __name__ == "__main__":
    main()
