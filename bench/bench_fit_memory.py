#!/usr/bin/env python3
"""Peak memory per phase of ``benchmeasure fit`` (sampling, summaries, writing the fit folder), and a scaling table.

Simulated binary matrices (K = 1, θ and b ~ Normal(0, 1.1²), g = 0), each fitted by ``scripts/fit_irt.py`` in a
fresh process at the paper's settings (4 chains × (1,000 + 1,000)) with the default route. A side thread reads the
fit's progress lines (``BENCHMEASURE_PROGRESS_INTERVAL=1``, stderr to a pipe, as in a log) and the main thread
samples the process's resident memory (``/proc/PID/status`` VmRSS) every 0.2 s; each sample is charged to the
phase the last progress line named (``NUTS warm-up``, ``drawing difficulties``, ``summarizing …``,
``done`` = everything after the sampler's display closed: the fit record, the fit folder). Printed per size:
wall, the peak RSS of each phase and of the whole process (getrusage), the longest silence between two stderr
lines after ``done`` (the issue's "no progress line for ~50 s"), min bulk ESS and ESS per second of sampling.

    nice -n 10 .venv-irt/bin/python bench/bench_fit_memory.py --sizes 12x41871            # the issue's size
    nice -n 10 .venv-irt/bin/python bench/bench_fit_memory.py --sizes 12x41871 --save-posterior
    .venv-irt/bin/python bench/bench_fit_memory.py --sizes 12x2000 --tune 200 --draws 200   # a quick look

Phases: ``NUTS`` (compiling, warm-up, draws), ``b draws`` (the collapsed route's exact draws of b), ``summaries``
(R-hat and bulk ESS per item), ``finishing`` (after the sampler's display closes: tie pooling), ``tail ESS`` and
``writing`` (the fit folder's own progress display, ``fit folder: …``; code before it had none, and then
``finishing`` covers everything after ``done``).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
PEAK_GB_TARGET = 3.0


def simulate(models: int, items: int, seed: int, folder: Path, holes: float = 0.0) -> Path:
    """The matrix file; with ``holes`` > 0 that fraction of cells is blank (planned at random, seeded) and the
    fit runs with ``--allow-missing``."""
    from benchmeasure.core.matrix import ResponseMatrix, write_matrix
    from benchmeasure.core.matrix_holes import write_counts_and_trials
    from benchmeasure.irt.simulate import simulate_counts

    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=models) * 1.1, rng.normal(size=items) * 1.1
    counts = simulate_counts(theta, b, 1, seed=seed + 1)
    path = folder / f"matrix_{models}x{items}_{holes:g}.csv"
    names, ids = [f"m{j}" for j in range(models)], [f"i{i}" for i in range(items)]
    if holes > 0:
        trials = (rng.random(counts.shape) >= holes).astype(np.int64)
        trials[:, trials.sum(axis=0) == 0] = 1  # every item keeps an answer
        trials[trials.sum(axis=1) == 0, 0] = 1  # and every model
        write_counts_and_trials(names, ids, counts, trials, path)
    else:
        write_matrix(ResponseMatrix(names, ids, counts, 1), path)
    return path


def rss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def run_fit(root: Path, matrix: Path, out: Path, args, holes: float = 0.0) -> dict:
    command = [sys.executable, str(root / "scripts" / "fit_irt.py"), str(matrix), "--n-trials", "1",
               "--output-dir", str(out), "--seed", str(args.seed), "--chains", str(args.chains),
               "--tune", str(args.tune), "--draws", str(args.draws)] + (["--save-posterior"] if args.save_posterior
                                                                         else []) + (
        ["--allow-missing"] if holes > 0 else [])
    env = {**os.environ, "BENCHMEASURE_PROGRESS_INTERVAL": "1"}
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[tuple[float, str]] = []
    phase = ["starting"]

    def read():
        for line in proc.stderr:
            lines.append((time.perf_counter() - start, line.rstrip("\n")))
            for prefix in ("1PL fit: ", "fit folder: "):
                if line.startswith(prefix):
                    phase[0] = _phase_key(prefix, line[len(prefix):])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peaks: dict[str, int] = {}
    order: list[str] = []
    while proc.poll() is None:
        value = rss_bytes(proc.pid)
        if value is not None:
            name = phase[0]
            if name not in peaks:
                order.append(name)
            peaks[name] = max(peaks.get(name, 0), value)
        time.sleep(0.2)
    wall = time.perf_counter() - start
    reader.join(timeout=5)
    done_at = next((t for t, text in lines if text.startswith("1PL fit: done")), None)
    after = [t for t, _ in lines if done_at is not None and t >= done_at] + [wall]
    silence = max(np.diff(after)) if len(after) > 1 else None
    seconds: dict[str, list[float]] = {}
    for t, text in lines:
        for prefix in ("1PL fit: ", "fit folder: "):
            if text.startswith(prefix):
                span = seconds.setdefault(_phase_key(prefix, text[len(prefix):]), [t, t])
                span[1] = t
    record = {"wall_s": wall, "phases": {k: peaks[k] / 1e9 for k in order},
              "phase_span_s": {k: round(b - a, 1) for k, (a, b) in seconds.items()}, "load_before": load_before,
              "load_after": os.getloadavg()[0], "returncode": proc.returncode,
              "writing_s": None if done_at is None else wall - done_at, "longest_silence_after_done_s": silence,
              "peak_gb": max(peaks.values(), default=0) / 1e9}
    if proc.returncode != 0:
        record["error"] = lines[-1][1] if lines else f"exit {proc.returncode}"
        return record
    d = json.loads((out / "diagnostics.json").read_text())
    sampling = d["timing"].get("sampling_time_s")
    record.update({"min_ess_bulk": d["min_ess_bulk"], "max_r_hat": d["max_r_hat"], "route": d["settings"]["route"],
                   "ess_per_s": d["min_ess_bulk"] / sampling if sampling else None})
    record["writing_lines"] = [text for t, text in lines if done_at is not None and t >= done_at]
    return record


def _phase_key(prefix: str, label: str) -> str:
    if prefix.startswith("fit folder"):
        return "tail ESS" if label.startswith("tail ESS") else "writing"
    for key, name in (("NUTS", "NUTS"), ("compiling", "NUTS"), ("drawing difficulties", "b draws"),
                      ("summarizing", "summaries"), ("done", "finishing")):
        if label.startswith(key):
            return name
    return label.split(",")[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="12x41871", help="comma-separated MODELSxITEMS[xHOLES] (default 12x41871; "
                        "12x2000x0.1: 10 %% of the cells blank)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save-posterior", action="store_true")
    parser.add_argument("--label", default="this checkout", help="what to call this code in the table")
    parser.add_argument("--json", help="write the records here")
    args = parser.parse_args(argv)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for size in args.sizes.split(","):
            parts = size.lower().split("x")
            models, items = int(parts[0]), int(parts[1])
            holes = float(parts[2]) if len(parts) > 2 else 0.0
            matrix = simulate(models, items, args.seed, folder, holes)
            print(f"[bench] {size} ...", file=sys.stderr, flush=True)
            rec = run_fit(ROOT, matrix, folder / f"fit_{size}", args, holes)
            rec.update({"size": f"{models}x{items}", "holes": holes, "label": args.label})
            records.append(rec)
            print(json.dumps({k: v for k, v in rec.items() if k != "writing_lines"}), file=sys.stderr)
    print(f"{args.chains} chains × ({args.tune} + {args.draws}), K = 1, seed {args.seed}"
          f"{', --save-posterior' if args.save_posterior else ''}; RSS sampled every 0.2 s; load average shown")
    keys = ("NUTS", "b draws", "summaries", "finishing", "tail ESS", "writing")
    print("| size | holes | route | code | wall s | peak GB: " + " | ".join(keys) + " | whole | after done s "
          "| longest silence after done s | min bulk ESS | ESS/s | load |")
    print("|---" * (len(keys) + 12) + "|")
    for r in records:
        p = r["phases"]

        def num(v, spec):
            return "–" if v is None else format(v, spec)

        print(f"| {r['size']} | {100 * r['holes']:.0f}% | {r.get('route', '–')} | {r['label']} | {r['wall_s']:.1f} | "
              + " | ".join(num(p.get(k), ".2f") for k in keys)
              + f" | {r['peak_gb']:.2f} | {num(r['writing_s'], '.1f')} "
              f"| {num(r['longest_silence_after_done_s'], '.1f')} | {num(r.get('min_ess_bulk'), '.0f')} "
              f"| {num(r.get('ess_per_s'), '.1f')} | {r['load_before']:.1f}→{r['load_after']:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
