#!/usr/bin/env python3
"""Where a default fit's wall time goes, this checkout beside an earlier revision, phase by phase, in one run.

Each size is fitted with the command users run (``python -m benchmeasure fit MATRIX --n-trials K --output-dir D
--seed 1``, the paper's 4 chains × (1,000 + 1,000)), in a fresh process, by two checkouts:

* **after**  — this checkout (the compiled log densities of ``irt/compiled.py`` from the kernel cache, the one-pass
  summaries of ``irt/draw_summary.py``);
* **before** — the revision given by ``--before`` (default ``7f9d0a2``, the last commit before issue 28), checked
  out by ``git worktree`` into a temporary folder and run with the same interpreter.

Each command runs once untimed first, so both find their on-disk caches warm (Numba's kernel cache; the earlier
revision recompiles its PyTensor graph in every process whatever it finds), then ``--repeats`` timed runs; the
table shows the median run's phases from its ``diagnostics.json`` (``timing``) and the process wall time:

  compile    building / loading the sampler's log density      sampling   NUTS
  b draws    the exact draws of b given each θ draw            summaries  R-hat and ESS per parameter (+ tail ESS)
  other      the rest of the fit                               outside    start-up, reading, writing the folder
  calibration  the calibrated intervals' simulation (issue 29; 0 for a revision without it), not in ``outside``

Sizes (``--sizes``): ``chembench`` (the bundled 22 × 2,854 real matrix, K = 1), and simulated ``MxN[xK]``
matrices (θ, b ~ N(0, 1); default K = 8 below 10,000 items, else 1): 12x675x8 and 12x41871x1 (OpenCompass-size).

    PYTHONPATH=. .venv-irt/bin/python bench/bench_fit_phases.py                          # every size, before and after
    PYTHONPATH=. .venv-irt/bin/python bench/bench_fit_phases.py --sizes chembench --repeats 3
    PYTHONPATH=. .venv-irt/bin/python bench/bench_fit_phases.py --no-before --sizes 12x675x8

Writes the table as Markdown too (default bench/results/bench_fit_phases.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_machine = __import__("runpy").run_path(str(Path(__file__).with_name("machine.py")))  # CPU name and versions
cpu_name, versions = _machine["cpu_name"], _machine["versions"]

PHASES = [("compile", "compile_time_s"), ("sampling", "sampling_time_s"), ("b draws", "difficulty_draw_time_s"),
          ("summaries", "summary_time_s")]


def make_matrix(size: str, folder: Path) -> tuple[Path, int]:
    """The matrix file of ``size`` and its K."""
    import numpy as np

    if size == "chembench":
        out = folder / "chembench.csv"
        subprocess.run([sys.executable, "-m", "benchmeasure", "prepare", "--from", "wide",
                        str(ROOT / "data" / "chembench" / "binary_matrix.csv"), "--items-as-rows", "--n-trials", "1",
                        "--output", str(out)], check=True, capture_output=True, cwd=ROOT)
        return out, 1
    parts = [int(p) for p in size.lower().split("x")]
    m, n = parts[0], parts[1]
    k = parts[2] if len(parts) > 2 else (8 if n < 10_000 else 1)
    rng = np.random.default_rng(m * 1_000_003 + n)
    theta, b = rng.normal(size=m), rng.normal(size=n)
    counts = rng.binomial(k, 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :]))))
    out = folder / f"sim_{m}x{n}x{k}.csv"
    with open(out, "w") as handle:
        handle.write("model," + ",".join(f"q{i}" for i in range(n)) + "\n")
        for j in range(m):
            handle.write(f"m{j}," + ",".join(map(str, counts[j])) + "\n")
    return out, k


def run_fit(checkout: Path, matrix: Path, k: int, out: Path) -> dict:
    """One fit in a fresh process from ``checkout``: process wall time and the fit's timing."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchmeasure", "fit", str(matrix), "--n-trials", str(k),
                           "--output-dir", str(out), "--seed", "1", "--quiet"], env=env, capture_output=True,
                          text=True, cwd=checkout)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"fit failed in {checkout}:\n{done.stderr[-2000:]}")
    record = json.loads((out / "diagnostics.json").read_text())
    timing = record.get("timing") or {}
    row = {"wall": wall, "fit": record["wall_time_s"], "min_ess": record.get("min_ess_bulk"),
           "max_r_hat": record.get("max_r_hat")}
    for label, key in PHASES:
        row[label] = timing.get(key) or 0.0
    row["other"] = row["fit"] - sum(row[label] for label, _ in PHASES)
    row["calibration"] = ((record.get("calibrated_intervals") or {}).get("settings") or {}).get("seconds") or 0.0
    row["outside"] = wall - row["fit"] - row["calibration"]
    return row


def median_run(checkout: Path, matrix: Path, k: int, out: Path, repeats: int) -> dict:
    run_fit(checkout, matrix, k, out)                      # untimed: fills the on-disk caches
    runs = [run_fit(checkout, matrix, k, out) for _ in range(repeats)]
    runs.sort(key=lambda r: r["wall"])
    return runs[len(runs) // 2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="chembench,12x675x8,12x41871x1")
    parser.add_argument("--before", default="7f9d0a2", help="the earlier revision to compare with (default 7f9d0a2)")
    parser.add_argument("--no-before", action="store_true", help="time this checkout only")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per command (the median is shown)")
    parser.add_argument("--markdown", default=str(ROOT / "bench" / "results" / "bench_fit_phases.md"))
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench_fit_phases_"))
    checkouts = {"after": ROOT}
    try:
        if not args.no_before:
            before = work / "before"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before), args.before],
                           check=True, capture_output=True)
            checkouts = {f"before ({args.before})": before, "after": ROOT}
        lines = [f"CPU: {cpu_name()} ({os.cpu_count()} cores); {versions(['numpy', 'numba', 'nutpie', 'pymc'])}",
                 "", "| size | code | wall s | fit s | compile | sampling | b draws | summaries | other | outside "
                 "| calibration | min ESS | max R-hat |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        print("\n".join(lines), flush=True)
        for size in args.sizes.split(","):
            matrix, k = make_matrix(size, work)
            for name, checkout in checkouts.items():
                row = median_run(checkout, matrix, k, work / "out", args.repeats)
                line = (f"| {size} | {name} | {row['wall']:.1f} | {row['fit']:.1f} | "
                        + " | ".join(f"{row[label]:.2f}" for label, _ in PHASES)
                        + f" | {row['other']:.2f} | {row['outside']:.2f} | {row['calibration']:.2f} | "
                        f"{row['min_ess']:.0f} | "
                        f"{row['max_r_hat']:.4f} |")
                lines.append(line)
                print(line, flush=True)
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text("\n".join(lines) + "\n")
    finally:
        if not args.no_before:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(work / "before")],
                           capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
