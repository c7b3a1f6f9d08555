#!/usr/bin/env python3
"""Regression bench (issue 53): the same fixed commands on two revisions, every output file diffed.

    python3 bench/bench_regression.py --before 28e5f6e                  # against the checkout as it is on disk
    python3 bench/bench_regression.py --before 28e5f6e --after h5 --out /tmp/reg
    python3 bench/bench_regression.py --before main --only fit_joint,scope --allow posterior_metrics

Each side is a ``git worktree add --detach`` of its revision in a temporary folder (the after side defaults to
this checkout as it is on disk, uncommitted edits included). In each, the fixed cases below run through the
real wrappers, ``scripts/*.py`` (and ``propose/benchfill.py``, ``run_experiment.sh``) run from the side's
checkout with one interpreter for both sides (this checkout's ``.venv-irt/bin/python``, or ``--python``), as a
user would, on inputs made once and shared by both sides. Then every output file is compared (docs/regression.md):

* CSV, text and a command's stdout: byte for byte, after the side's own folders are written as ``<OUT>``,
  ``<CHECKOUT>`` and ``<IN>`` and the volatile text patterns of ``TEXT_MASKS`` are blanked;
* JSON (and each line of JSONL): parsed, with the volatile keys of ``VOLATILE_KEYS`` dropped, then exactly;
* the files of ``UNORDERED`` (journals written as concurrent calls finish): as multisets of masked lines;
* zarr stores: metadata as JSON, chunks byte for byte, and where the bytes differ the decoded arrays;
* stderr (progress lines with elapsed times) and the files of ``SKIPPED`` are not compared (reasons there).

The volatile sets were found by running one revision twice (``--before HEAD`` against the unchanged checkout,
then ``--compare-only --raw``): whatever differed between the two runs of one revision is masked, nothing
else. One line per case, ``same`` or ``differs: FILE (first difference)``; exit 0 when every case is the same
(or differs only where ``--allow`` permits it, the diff printed), 1 otherwise. Each step's exit status is an
output too (``exit_codes.txt``).

The diff logic (``compare_trees``) needs only the standard library; the zarr array comparison runs
the bench's Python interpreter (``--python``) when chunk bytes differ.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------------------------
# what legitimately differs between two runs of one revision (found by running one revision twice)

# JSON keys dropped wherever they occur (any depth). Found by two runs of one revision: the first four differed
# between them; the last two are the software that ran (the same interpreter runs both sides, but a refactor may
# change which packages a record lists, or a pin; the numbers must agree regardless).
VOLATILE_KEYS = {
    "wall_time_s",      # every command's record: its own wall time
    "timing",           # fit diagnostics.json: compile/sampling/summary seconds and min ESS per second
    "created",          # BenchFill config.json: when the run folder was made
    "time",             # BenchFill events.jsonl: when each event happened
    "package_versions", "versions",
}

# Regular expressions blanked in text files and stdout (each replaced by the replacement given).
TEXT_MASKS = [
    (re.compile(r"sim-seed(\d+)-\d{8}-\d{6}"), r"sim-seed\1-<TIME>"),  # run_experiment.sh sim names its run by time
    (re.compile(r"(?<=done in )\d+(?:\.\d+)? s\b"), "<DURATION>"),  # BenchFill's last line: "done in 19.1 s; …"
    (re.compile(r"http://127\.0\.0\.1:\d+"), "http://127.0.0.1:<PORT>"),
]

# Files whose line order is volatile: compared as multisets of (masked) lines. Concurrent model calls finish in
# arrival order, so their journals, and BenchFill's per-round progress lines, interleave differently per run.
UNORDERED = [
    (re.compile(r"(^|/)events\.jsonl$"), "BenchFill's event journal, written as concurrent calls finish"),
    (re.compile(r"(^|/)journal\.jsonl$"), "scope's pull journal, written as concurrent calls finish"),
]
# (and a case's own ``unordered`` files: benchfill_sim's run output, whose gaps' progress lines interleave)

# Files left out of the comparison, with the reason (matched against the path relative to the side's out folder).
SKIPPED = [
    (re.compile(r"(^|/)stderr\.\d+\.txt$"), "stderr: progress lines with elapsed times and ETA"),
    (re.compile(r"(^|/)server\.(pid|log)$"), "the simulation server's process id and its request log"),
    (re.compile(r"(^|/)run\.lock$"), "the run lock holds the process id"),
]

# Cases whose numbers issue 53 may change: the posterior-metrics human table is rewritten, and the plug-in
# (the metrics of the posterior means) comes from the pooled, tied draws everywhere.
ISSUE53 = ["posterior_metrics"]


# ---------------------------------------------------------------------------------------------------------------
# the fixed cases

@dataclass
class Case:
    name: str
    steps: list                     # argv lists with {py} {in} {out} {case:NAME} placeholders
    needs: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    server: list | None = None      # a background server started first; its 'listening on URL' line gives {url}
    unordered: list = field(default_factory=list)   # regexes of this case's files compared as multisets of lines
    note: str = ""


STEP_TIMEOUT_S = 900  # one command; a hang is exit status 124

FIT = ["--n-trials", "8", "--chains", "2", "--tune", "100", "--draws", "100", "--seed", "1", "--no-calibrate",
       "--quiet"]
MATRIX = "{case:prepare}/response_matrix.csv"

CASES = [
    Case("make_example", [["{py}", "scripts/make_example.py", "--output-dir", "{out}", "--models", "8", "--items",
                           "30", "--n-trials", "4", "--seed", "1"]]),
    Case("prepare", [["{py}", "scripts/prepare_response_matrix.py", "data/example_simulated/responses.csv",
                      "--n-trials", "8", "--output", "{out}/response_matrix.csv"],
                     ["{py}", "scripts/check_response_matrix.py", "{out}/response_matrix.csv", "--n-trials", "8"]]),
    Case("fit_collapsed", [["{py}", "scripts/fit_irt.py", MATRIX, "--route", "collapsed", "--save-posterior",
                            *FIT, "--output-dir", "{out}"]], needs=["prepare"]),
    Case("fit_joint", [["{py}", "scripts/fit_irt.py", MATRIX, "--route", "joint", *FIT, "--output-dir", "{out}"]],
         needs=["prepare"]),
    Case("fit_gibbs", [["{py}", "scripts/fit_irt.py", MATRIX, "--route", "gibbs", *FIT, "--output-dir", "{out}"]],
         needs=["prepare"]),
    Case("fit_map", [["{py}", "scripts/fit_irt.py", MATRIX, "--method", "map", "--n-trials", "8", "--seed", "1",
                      "--quiet", "--no-calibrate", "--output-dir", "{out}"]], needs=["prepare"]),
    Case("fit_guessing", [["{py}", "scripts/fit_irt.py", MATRIX, "--guessing", "0.25", *FIT, "--output-dir",
                           "{out}"]], needs=["prepare"]),
    Case("fit_holes", [["{py}", "scripts/prepare_response_matrix.py", "{in}/holes_responses.csv", "--n-trials", "8",
                        "--allow-missing", "--output", "{out}/matrix.csv"],
                       ["{py}", "scripts/fit_irt.py", "{out}/matrix.csv", "--allow-missing", *FIT,
                        "--output-dir", "{out}/fit"]],
         note="absent cells and K per cell (prepare --allow-missing, fit --allow-missing)"),
    Case("fit_k1", [["{py}", "scripts/prepare_response_matrix.py", "{in}/k1_responses.csv", "--n-trials", "1",
                     "--output", "{out}/matrix.csv"],
                    ["{py}", "scripts/fit_irt.py", "{out}/matrix.csv", *FIT[2:], "--n-trials", "1",
                     "--output-dir", "{out}/fit"]],
         note="one trial per cell beside the K = 8 of the other fits"),
    Case("diagnose", [["{py}", "scripts/diagnose_benchmark.py", "{case:fit_collapsed}/difficulty.csv"],
                      ["{py}", "scripts/diagnose_benchmark.py", "{case:fit_collapsed}/difficulty.csv", "--json",
                       "--top-k", "3"],
                      ["{py}", "scripts/compare_difficulty.py", "{case:fit_collapsed}/difficulty.csv",
                       "data/example_simulated/true_difficulty.csv", "--reference-column", "b_true"]],
         needs=["fit_collapsed"]),
    Case("summarize", [["{py}", "scripts/summarize_benchmarks.py", "{in}/table1", "--output-dir", "{out}"]],
         note="Table 1 of two released-style benchmark folders"),
    Case("posterior_metrics", [["{py}", "scripts/posterior_metrics.py", "{case:fit_collapsed}/posterior.zarr",
                                "--replicates", "20", "--output", "{out}/metric_intervals.json"],
                               ["{py}", "scripts/posterior_metrics.py", "{case:fit_collapsed}/posterior.zarr",
                                "--replicates", "20", "--calibrate", "1", "--calibrate-worlds", "band",
                                "--calibrate-draws", "50", "--json"]],
         needs=["fit_collapsed"], note="issue 53 rewrites its human table and its plug-in"),
    Case("calibrate_items", [["{py}", "scripts/calibrate_items.py", MATRIX, "--abilities",
                              "{case:fit_collapsed}/ability.csv", "--n-trials", "8", "--reference-difficulty",
                              "{case:fit_collapsed}/difficulty.csv", "--quiet", "--output",
                              "{out}/new_difficulty.csv"]], needs=["prepare", "fit_collapsed"]),
    Case("score_models", [["{py}", "scripts/score_models.py", "data/example_simulated/responses.csv",
                           "--difficulty", "{case:fit_collapsed}/difficulty.csv", "--n-trials", "8", "--quiet",
                           "--output", "{out}/scores.csv"],
                          ["{py}", "scripts/score_models.py", "data/example_simulated/responses.csv",
                           "--difficulty", "{case:fit_collapsed}/difficulty.csv", "--difficulty-draws",
                           "{case:fit_collapsed}/posterior.zarr", "--max-draws", "50", "--n-trials", "8", "--quiet",
                           "--output", "{out}/scores_draws.csv"]], needs=["fit_collapsed"]),
    Case("fit_suite", [["{py}", "scripts/fit_suite.py", "{in}/suite/bench0.csv", "{in}/suite/bench1.csv",
                        "--seed", "1", "--quiet", "--output-dir", "{out}/one"],
                       ["{py}", "scripts/fit_suite.py", "{in}/suite/bench0.csv", "{in}/suite/bench1.csv",
                        "--abilities", "correlated-eb", "--seed", "1", "--quiet", "--output-dir", "{out}/eb"]]),
    Case("chain", [["{py}", "scripts/chain.py", "{in}/suite/bench0.csv", "{in}/suite/bench1.csv", "--order",
                    "bench0,bench1", "--anchors", "5,15", "--splits", "2", "--seed", "4", "--quiet",
                    "--output-dir", "{out}"]]),
    Case("benchfill_sim", [["{py}", "propose/benchfill.py", "sim-data", "--folder",
                            "{out}/results/math_sim/data-seed1", "--seed", "1", "--truth"],
                           ["bash", "run_experiment.sh", "sim", "1"]],
         env={"BENCHFILL_RESULTS": "{out}/results", "BENCHFILL_PYTHON": "{py}", "BENCHMEASURE_IRT_PYTHON": "{py}"},
         unordered=[r"^stdout\.1\.txt$"],
         note="run_experiment.sh sim 1 on a data set calibrated from its ground truth (sim-data --truth), which "
              "skips the slow first-use NUTS ability fit"),
    Case("scope", [["{py}", "scripts/scope.py", "--space", "{in}/hard_space.yaml", "--generator",
                    "benchmeasure.scope.arithmetic:arithmetic", "--endpoint", "{url}", "--model", "sim-solver",
                    "--budget", "300", "--utility", "error", "--threshold", "0.8", "--delta", "0.05",
                    "--strategy", "shared", "--seed", "0", "--output-dir", "{out}", "--concurrency", "4"]],
         server=["{py}", "-m", "benchmeasure.serving.sim.server", "--scope", "--port", "0", "--seed", "0"],
         note="the simulated solver behind the real HTTP server, as tests/test_scope.py drives it"),
]
CASE_NAMES = [c.name for c in CASES]

HARD_SPACE = """\
terms: {type: int, low: 10, high: 11}
digits: {type: int, low: 9, high: 10}
ops: {type: categorical, choices: [mul]}
distractors: {type: int, low: 23, high: 24}
"""


def make_inputs(folder: Path) -> None:
    """The shared inputs (standard library only, fixed seeds): the same bytes on every machine."""
    folder.mkdir(parents=True, exist_ok=True)
    source = (ROOT / "data" / "example_simulated" / "responses.csv").read_text(encoding="utf-8").splitlines()
    header, rows = source[0], [line.split(",") for line in source[1:]]
    models = sorted({r[0] for r in rows})
    items = sorted({r[1] for r in rows})
    # holes: every 11th (model, item) pair absent, every 13th answered only 3 of its 8 trials
    kept = [header]
    for model, item, trial, correct in rows:
        pair = models.index(model) * 7 + items.index(item) * 3
        if pair % 11 == 0 or (pair % 13 == 0 and int(trial) >= 3):
            continue
        kept.append(",".join((model, item, trial, correct)))
    (folder / "holes_responses.csv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    # one trial per cell: trial 0 of the example
    k1 = [header] + [",".join(r) for r in rows if r[2] == "0"]
    (folder / "k1_responses.csv").write_text("\n".join(k1) + "\n", encoding="utf-8")
    # a two-benchmark suite answered by the same 30 models, 1 trial, a few holes
    rng = random.Random(4)
    theta = [(rng.gauss(0.3, 1.2), rng.gauss(-0.2, 1.2)) for _ in range(30)]
    (folder / "suite").mkdir(exist_ok=True)
    for d in range(2):
        b = [rng.gauss(0, 1.5) for _ in range(40)]
        lines = ["model,item_id,trial,correct"]
        for j in range(30):
            for i in range(40):
                if rng.random() < 0.02:
                    continue
                p = 1 / (1 + pow(2.718281828459045, b[i] - theta[j][d]))
                lines.append(f"m{j},b{d}-q{i},0,{int(rng.random() < p)}")
        (folder / "suite" / f"bench{d}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # two released-style benchmark folders for summarize (item IDs 0 … N-1, test.jsonl beside)
    for name, n in (("AIME24", 30), ("Other", 17)):
        bench = folder / "table1" / name
        bench.mkdir(parents=True, exist_ok=True)
        b = sorted(rng.gauss(0, 1) for _ in range(n))
        (bench / "difficulty.csv").write_text("item_id,b_mean\n" + "".join(f"{i},{v:.6f}\n" for i, v in enumerate(b)))
        (bench / "test.jsonl").write_text("".join(json.dumps({"item_id": i, "question": "?"}) + "\n"
                                                  for i in range(n)))
    (folder / "hard_space.yaml").write_text(HARD_SPACE, encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------
# running one side

def fill(text: str, values: dict) -> str:
    return re.sub(r"\{(case:[A-Za-z0-9_]+|py|in|out|url)\}", lambda m: values[m.group(1)], text)


def start_server(argv, cwd, log: Path):
    handle = open(log, "w", encoding="utf-8")
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=handle, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if "listening on " in line:
            return process, line.split("listening on ", 1)[1].strip()
    process.kill()
    process.wait()
    raise RuntimeError(f"the server {' '.join(argv)} did not start (log: {log})")


def run_side(label: str, checkout: Path, out: Path, inputs: Path, python: str, cases: list) -> dict:
    """Run ``cases`` in ``checkout``, outputs under ``out/<case>``; returns {case: seconds}."""
    seconds = {}
    for case in cases:
        folder = out / case.name
        folder.mkdir(parents=True, exist_ok=True)
        values = {"py": python, "in": str(inputs), "out": str(folder),
                  **{f"case:{c}": str(out / c) for c in CASE_NAMES}}
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("BENCHFILL_", "BENCHMEASURE_")) and k not in ("BENCHMARK", "PANEL_CONFIG")}
        env.update({k: fill(v, values) for k, v in case.env.items()})
        start = time.perf_counter()
        server = None
        codes = []
        try:
            if case.server:
                server, values["url"] = start_server([fill(a, values) for a in case.server], checkout,
                                                     folder / "server.log")
            for i, step in enumerate(case.steps):
                argv = [fill(a, values) for a in step]
                with open(folder / f"stdout.{i}.txt", "w") as so, open(folder / f"stderr.{i}.txt", "w") as se:
                    try:
                        code = subprocess.run(argv, cwd=checkout, stdout=so, stderr=se, env=env,
                                              timeout=STEP_TIMEOUT_S).returncode
                    except subprocess.TimeoutExpired:
                        code = 124
                        se.write(f"\nbench_regression: killed after {STEP_TIMEOUT_S} s\n")
                codes.append(code)
                if code != 0:
                    tail = (folder / f"stderr.{i}.txt").read_text(errors="replace").strip().splitlines()[-3:]
                    print(f"  [{label}] {case.name} step {i} exited {code}: {' | '.join(tail)}", flush=True)
                    break
        finally:
            if server is not None:
                server.terminate()
                try:
                    server.wait(10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
        (folder / "exit_codes.txt").write_text("".join(f"{c}\n" for c in codes))
        seconds[case.name] = time.perf_counter() - start
        print(f"  [{label}] {case.name}: {seconds[case.name]:.1f} s", flush=True)
    return seconds


# ---------------------------------------------------------------------------------------------------------------
# comparing two output folders

def skipped(relative: str):
    for pattern, why in SKIPPED:
        if pattern.search(relative):
            return why
    return None


def unordered(relative: str, extra=()):
    return any(pattern.search(relative) for pattern, _ in UNORDERED) or any(re.search(x, relative) for x in extra)


def canonical_line(relative: str, line: str, roots: dict) -> str:
    if relative.endswith(".jsonl"):
        try:
            return json.dumps(mask_json(json.loads(line), roots), sort_keys=True)
        except json.JSONDecodeError:
            pass
    return normalize_text(line, roots)


def normalize_text(text: str, roots: dict, raw: bool = False) -> str:
    """The side's folders as placeholders (longest first), then (unless ``raw``) the volatile patterns blanked."""
    for path, token in sorted(roots.items(), key=lambda kv: -len(kv[0])):
        if path:
            text = text.replace(path, token)
    for pattern, replacement in TEXT_MASKS[:1] if raw else TEXT_MASKS:
        text = pattern.sub(replacement, text)
    return text


def mask_json(value, roots: dict, raw: bool = False):
    if isinstance(value, dict):
        return {k: mask_json(v, roots, raw) for k, v in value.items() if raw or k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [mask_json(v, roots, raw) for v in value]
    if isinstance(value, str):
        return normalize_text(value, roots, raw)
    return value


def first_json_difference(a, b, where="$"):
    if type(a) is not type(b):
        return f"{where}: {json.dumps(a)[:80]} != {json.dumps(b)[:80]}"
    if isinstance(a, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                return f"{where}.{key}: only in {'after' if key not in a else 'before'}"
            found = first_json_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        if list(a) != list(b):
            return f"{where}: key order {list(a)[:6]} != {list(b)[:6]}"
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_json_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return f"{where}: length {len(a)} != {len(b)}" if len(a) != len(b) else None
    return None if a == b else f"{where}: {json.dumps(a)[:80]} != {json.dumps(b)[:80]}"


def first_line_difference(name: str, a: str, b: str):
    la, lb = a.splitlines(), b.splitlines()
    for n, (x, y) in enumerate(zip(la, lb), 1):
        if x != y:
            if name.endswith(".csv"):
                header = la[0].split(",") if la else []
                for col, (u, v) in enumerate(zip(x.split(","), y.split(","))):
                    if u != v:
                        column = header[col] if col < len(header) else f"#{col + 1}"
                        return f"line {n}, column {column}: {u!r} != {v!r}"
            k = next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), min(len(x), len(y)))
            start = max(0, k - 40)
            return f"line {n}, char {k + 1}: {x[start:k + 50]!r} != {y[start:k + 50]!r}"
    if len(la) != len(lb):
        return f"{min(len(la), len(lb)) + 1}: {len(la)} lines != {len(lb)} lines"
    return "line endings or trailing bytes differ"


ZARR_ARRAYS = """
import sys, numpy as np, zarr
a, b = zarr.open_array(sys.argv[1], mode="r")[...], zarr.open_array(sys.argv[2], mode="r")[...]
if a.shape != b.shape or a.dtype != b.dtype:
    print(f"shape/dtype {a.shape} {a.dtype} != {b.shape} {b.dtype}")
elif not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
    bad = np.argwhere(~((a == b) | ((a != a) & (b != b))))[0] if a.dtype.kind in "fc" else np.argwhere(a != b)[0]
    at = tuple(int(i) for i in bad)
    print(f"{int((a != b).sum())} values differ, first at {at}: {a[at]!r} != {b[at]!r}")
"""


def compare_zarr_array(before: Path, after: Path, python: str | None):
    """The decoded arrays of two zarr arrays (their chunk bytes differ): None when equal, else the difference."""
    if python is None:
        return "chunk bytes differ (no --python to decode the arrays)"
    done = subprocess.run([python, "-c", ZARR_ARRAYS, str(before), str(after)], capture_output=True, text=True)
    if done.returncode != 0:
        return f"chunk bytes differ; decoding failed: {done.stderr.strip().splitlines()[-1:]}"
    return done.stdout.strip() or None


def compare_file(relative: str, a: Path, b: Path, roots_a: dict, roots_b: dict, raw: bool = False,
                 unordered_files=()):
    """None when the two files agree after masking; else a short description of the first difference."""
    data_a, data_b = a.read_bytes(), b.read_bytes()
    if data_a == data_b:
        return None
    if "/c/" in f"/{relative}" and ".zarr/" in f"/{relative}":
        return "chunk bytes differ"  # the caller decodes the array
    try:
        text_a, text_b = data_a.decode("utf-8"), data_b.decode("utf-8")
    except UnicodeDecodeError:
        return f"binary content differs ({len(data_a)} vs {len(data_b)} bytes)"
    if relative.endswith(".json"):
        try:
            ja, jb = json.loads(text_a), json.loads(text_b)
        except json.JSONDecodeError:
            pass
        else:
            return first_json_difference(mask_json(ja, roots_a, raw), mask_json(jb, roots_b, raw))
    if not raw and unordered(relative, unordered_files):
        la, lb = (sorted(canonical_line(relative, line, roots) for line in text.splitlines())
                  for text, roots in ((text_a, roots_a), (text_b, roots_b)))
        if la == lb:
            return None
        only_a = next((x for x in la if x not in set(lb)), None)
        only_b = next((x for x in lb if x not in set(la)), None)
        return (f"unordered lines: {len(la)} != {len(lb)}; only before: {(only_a or '')[:90]!r}; "
                f"only after: {(only_b or '')[:90]!r}")
    if relative.endswith(".jsonl"):
        la, lb = text_a.splitlines(), text_b.splitlines()
        for n, (x, y) in enumerate(zip(la, lb), 1):
            try:
                found = first_json_difference(mask_json(json.loads(x), roots_a, raw),
                                              mask_json(json.loads(y), roots_b, raw))
            except json.JSONDecodeError:
                found = None if x == y else f"{x[:80]!r} != {y[:80]!r}"
            if found:
                return f"line {n}, {found}"
        return None if len(la) == len(lb) else f"{len(la)} lines != {len(lb)} lines"
    text_a, text_b = normalize_text(text_a, roots_a, raw), normalize_text(text_b, roots_b, raw)
    return None if text_a == text_b else first_line_difference(relative, text_a, text_b)


def listing(folder: Path) -> dict:
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            relative = normalize_text(path.relative_to(folder).as_posix(), {}, raw=True)  # the run's time stamp
            files[relative] = path
    return files


def compare_trees(before: Path, after: Path, roots_a: dict | None = None, roots_b: dict | None = None,
                  python: str | None = None, raw: bool = False, unordered_files=()) -> list:
    """Every difference between two output folders, as (relative file, description); [] when the same."""
    roots_a = {str(before): "<OUT>", **(roots_a or {})}
    roots_b = {str(after): "<OUT>", **(roots_b or {})}
    files_a, files_b = listing(before), listing(after)
    differences = []
    zarr_arrays = set()
    for relative in sorted(set(files_a) | set(files_b)):
        if skipped(relative):
            continue
        if relative not in files_b or relative not in files_a:
            differences.append((relative, f"only in {'before' if relative in files_a else 'after'}"))
            continue
        found = compare_file(relative, files_a[relative], files_b[relative], roots_a, roots_b, raw, unordered_files)
        if found == "chunk bytes differ":
            array = relative.split("/c/")[0]
            if array not in zarr_arrays:
                zarr_arrays.add(array)
                path_a, path_b = (str(f[relative]).rsplit("/c/", 1)[0] for f in (files_a, files_b))
                decoded = compare_zarr_array(Path(path_a), Path(path_b), python)
                if decoded:
                    differences.append((array, decoded))
            continue
        if found:
            differences.append((relative, found))
    return differences


def show_diff(relative: str, a: Path, b: Path, roots_a: dict, roots_b: dict, limit: int = 40) -> str:
    try:
        ta = normalize_text(a.read_text(encoding="utf-8"), roots_a).splitlines()
        tb = normalize_text(b.read_text(encoding="utf-8"), roots_b).splitlines()
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return ""
    lines = list(difflib.unified_diff(ta, tb, f"before/{relative}", f"after/{relative}", lineterm="", n=1))
    more = f"\n    ... {len(lines) - limit} more diff lines" if len(lines) > limit else ""
    return "\n".join("    " + line for line in lines[:limit]) + more


# ---------------------------------------------------------------------------------------------------------------

def with_needs(names: list) -> list:
    wanted, order = set(), {c.name: c for c in CASES}

    def add(name):
        if name not in wanted:
            wanted.add(name)
            for need in order[name].needs:
                add(need)

    for name in names:
        add(name)
    return [c for c in CASES if c.name in wanted]


def names_option(text: str, option: str) -> list:
    names = [n.strip() for n in text.split(",") if n.strip()]
    expanded = []
    for name in names:
        if name == "issue53":
            expanded += ISSUE53
        elif name in CASE_NAMES:
            expanded.append(name)
        else:
            sys.exit(f"error: {option}: unknown case '{name}'; cases: {', '.join(CASE_NAMES)} (or issue53)")
    return expanded


def git(*args, cwd=ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def run_both(args, cases, python):
    """Make the inputs and the worktrees, run both sides; returns (out folder, sides, wall seconds)."""
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_regression-"))
    out = out.resolve()
    if out.exists() and any(out.iterdir()):
        sys.exit(f"error: --out {out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    inputs = out / "inputs"
    make_inputs(inputs)
    trees = Path(tempfile.mkdtemp(prefix="bench_regression-trees-"))
    sides, wall = {}, {}
    try:
        for label, rev in (("before", args.before), ("after", args.after)):
            if rev is None:
                sides[label] = (ROOT, "working tree")
                continue
            commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
            tree = trees / label
            git("worktree", "add", "--detach", str(tree), commit)
            sides[label] = (tree, f"{rev} ({commit[:10]})")
        for label, (checkout, what) in sides.items():
            print(f"{label}: {what} in {checkout}", flush=True)
            start = time.perf_counter()
            run_side(label, checkout, out / label, inputs, python, cases)
            wall[label] = time.perf_counter() - start
            print(f"{label}: wall {wall[label]:.1f} s", flush=True)
    finally:
        if not args.keep_worktrees:
            for label in ("before", "after"):
                if (trees / label).exists():
                    subprocess.run(["git", "worktree", "remove", "--force", str(trees / label)], cwd=ROOT,
                                   capture_output=True)
            shutil.rmtree(trees, ignore_errors=True)
    record = {"sides": {k: {"checkout": str(v[0]), "what": v[1]} for k, v in sides.items()}, "wall": wall,
              "out": str(out)}
    (out / "sides.json").write_text(json.dumps(record, indent=1) + "\n")
    return out, sides, wall


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="cases: " + ", ".join(CASE_NAMES))
    parser.add_argument("--before", required=True, help="revision of the before side (any git revision)")
    parser.add_argument("--after", help="revision of the after side (default: this checkout as it is on disk)")
    parser.add_argument("--out", type=Path, help="folder for the inputs and both sides' outputs "
                                                 "(default: a new temporary folder, kept)")
    parser.add_argument("--only", help="comma-separated cases (their prerequisites are added)")
    parser.add_argument("--allow", action="append", default=[],
                        help="cases allowed to differ (comma-separated; repeatable; 'issue53' = "
                             f"{','.join(ISSUE53)}): their diff is printed, the exit status stays 0")
    parser.add_argument("--python", help="interpreter for the commands "
                                         "(default: .venv-irt/bin/python of this checkout)")
    parser.add_argument("--raw", action="store_true",
                        help="compare without the volatile masks, only the folders replaced (to find what is "
                             "volatile: run one revision twice)")
    parser.add_argument("--compare-only", action="store_true",
                        help="do not run: diff the outputs an earlier run left in --out again (e.g. with --raw)")
    parser.add_argument("--keep-worktrees", action="store_true", help="leave the temporary worktrees in place")
    args = parser.parse_args(argv)

    cases = with_needs(names_option(args.only, "--only")) if args.only else list(CASES)
    allowed = set()
    for text in args.allow:
        allowed.update(names_option(text, "--allow"))
    python = args.python or str(ROOT / ".venv-irt" / "bin" / "python")
    if not Path(python).exists():
        sys.exit(f"error: no interpreter {python}; set up .venv-irt (bash scripts/setup_env.sh irt) or pass --python")
    if args.compare_only:
        if args.out is None:
            sys.exit("error: --compare-only needs --out, the folder of an earlier run")
        out = args.out.resolve()
        record = json.loads((out / "sides.json").read_text())
        sides = {label: (Path(v["checkout"]), v["what"]) for label, v in record["sides"].items()}
        moved = record.get("out", str(out))  # the folder the commands wrote into, if it was moved since
        wall = record["wall"]
        inputs = out / "inputs"
        cases = [c for c in cases if (out / "before" / c.name).exists()]
    else:
        out, sides, wall = run_both(args, cases, python)
        inputs = out / "inputs"
        moved = str(out)

    status = 0
    print(f"\n{'case':<18} result   (outputs in {out})")
    for case in cases:
        a, b = out / "before" / case.name, out / "after" / case.name
        shared = {python: "<PYTHON>", os.path.realpath(python): "<PYTHON>", str(inputs): "<IN>",
                  f"{moved}/inputs": "<IN>"}
        roots_a = {str(sides["before"][0]): "<CHECKOUT>", str(out / "before"): "<SIDE>",
                   f"{moved}/before": "<SIDE>", f"{moved}/before/{case.name}": "<OUT>", **shared}
        roots_b = {str(sides["after"][0]): "<CHECKOUT>", str(out / "after"): "<SIDE>",
                   f"{moved}/after": "<SIDE>", f"{moved}/after/{case.name}": "<OUT>", **shared}
        found = compare_trees(a, b, roots_a, roots_b, python=python, raw=args.raw, unordered_files=case.unordered)
        if not found:
            print(f"{case.name:<18} same")
            continue
        relative, what = found[0]
        more = f" (+{len(found) - 1} more files)" if len(found) > 1 else ""
        if case.name in allowed:
            print(f"{case.name:<18} differs (allowed): {relative} ({what}){more}")
            for rel, _ in found:
                diff = show_diff(rel, a / rel, b / rel, {**roots_a, str(a): "<OUT>"}, {**roots_b, str(b): "<OUT>"})
                if diff:
                    print(diff)
        else:
            status = 1
            print(f"{case.name:<18} differs: {relative} ({what}){more}")
    print(f"\nwall: before {wall['before']:.1f} s, after {wall['after']:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
