"""Print each of the paper's tables beside what the local data reproduces, with the differences."""

from __future__ import annotations

import functools
from pathlib import Path

from benchmeasure.analyses.reproduce import TABLES, compare_all, markdown, write_csv
from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import plan_outputs, provenance, write_report
from benchmeasure.base.resources import project_path

EXAMPLES = """\
examples:
  benchmeasure reproduce
  benchmeasure reproduce --tables table1 readme_example --output-dir results/reproduction
  benchmeasure reproduce --robustness-dir results/robustness --n-trials HumanEval=10
  benchmeasure reproduce --tables table2 --benchfill-run AIME24=propose/results/aime24/run1
  benchmeasure reproduce --tables table12 --detection AIME25:Phi-4:benchfill=phi4_benchfill.json

local data looked for:
  Table 1, README example   <data-dir>/<benchmark>/difficulty.csv
  Table 5                   <matrix-dir>/<benchmark>_response_matrix.csv (K from Table 3 or --n-trials)
  Tables 6-10               <robustness-dir>/<benchmark>/robustness.json (benchmeasure robustness)
  Table 2                   --benchfill-run BENCH=DIR: summary.json of a finished BenchFill run
                            (run_experiment.sh); BENCH as in Table 2 (AIME24, ...), repeatable
  Table 12                  --detection BENCH:MODEL:VARIANT=FILE: benchmeasure detect
                            --json output; BENCH MODEL as in Table 12 (AIME25:Phi-4), VARIANT
                            original, benchfill or baseline; repeatable
Missing data is listed as absent, with the path looked for; it is never filled in.
"""


def parse_args(argv):
    parser = command_parser("reproduce_tables.py",
                            "Compare the paper's reported numbers (data/paper_reported) with local recomputations.",
                            EXAMPLES)
    parser.add_argument("--data-dir", default=str(project_path("data/benchmarks")), help="benchmark folders")
    parser.add_argument("--matrix-dir", default=str(project_path("data/matrix")), help="response matrices")
    parser.add_argument("--robustness-dir", help="benchmeasure robustness outputs, one folder per benchmark")
    parser.add_argument("--n-trials", action="append", default=[], metavar="NAME=K",
                        help="rollouts per item of a benchmark missing from Table 3 (repeatable)")
    parser.add_argument("--benchfill-run", action="append", default=[], metavar="BENCH=DIR",
                        help="Table 2: a finished BenchFill run folder (summary.json) of BENCH (repeatable)")
    parser.add_argument("--detection", action="append", default=[], metavar="BENCH:MODEL:VARIANT=FILE",
                        help="Table 12: benchmeasure detect --json output for that row; VARIANT original, "
                             "benchfill or baseline (repeatable)")
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), help="only these tables (default: all)")
    parser.add_argument("--output-dir", metavar="DIR", help="also write reproduction.csv/.md/.json here")
    return parser.parse_args(argv)


def parse_trials(pairs: list) -> dict:
    result = {}
    for text in pairs:
        name, sep, value = text.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            fail(f"--n-trials {text!r}: expected NAME=K with K a positive integer")
        result[name.strip()] = int(value)
    return result


def _pairs(option: str, texts: list, form: str) -> dict:
    """``KEY=VALUE`` texts → {KEY: VALUE}; a malformed or repeated KEY is rejected."""
    result = {}
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key.strip() or not value.strip():
            fail(f"{option} {text!r}: expected {form}")
        if key.strip() in result:
            fail(f"{option} {key.strip()!r} given twice")
        result[key.strip()] = value.strip()
    return result


def parse_detections(texts: list) -> dict:
    """``BENCH:MODEL:VARIANT=FILE`` texts → {(BENCH, MODEL, VARIANT): Path}."""
    result = {}
    for key, value in _pairs("--detection", texts, "BENCH:MODEL:VARIANT=FILE").items():
        parts = key.split(":")
        if len(parts) < 3 or not all(p.strip() for p in parts):
            fail(f"--detection {key!r}: expected BENCH:MODEL:VARIANT=FILE, e.g. AIME25:Phi-4:benchfill=det.json")
        result[(parts[0].strip(), ":".join(parts[1:-1]).strip(), parts[-1].strip().lower())] = Path(value)
    return result


def main(argv=None) -> int:
    args = parse_args(argv)
    plan_outputs(folders=[(args.output_dir, ("reproduction.csv", "reproduction.md", "reproduction.json"))])
    n_trials = parse_trials(args.n_trials)
    benchfill_runs = {k: Path(v) for k, v in _pairs("--benchfill-run", args.benchfill_run, "BENCH=DIR").items()}
    detections = parse_detections(args.detection)
    robustness = Path(args.robustness_dir) if args.robustness_dir else None
    if robustness is not None and not robustness.is_dir():
        fail(f"--robustness-dir {robustness}: no such folder")
    rows = compare_all(Path(args.data_dir), Path(args.matrix_dir), robustness, n_trials,
                       benchfill_runs=benchfill_runs, detections=detections)
    if args.tables:
        rows = [r for r in rows if r.table in args.tables]
    text = markdown(rows)
    if args.output_dir:
        out = Path(args.output_dir)
        record = {"rows": [{"table": r.table, "row": r.key, "quantity": r.quantity, "reported": r.reported,
                            "local": r.local, "difference": r.difference, "source": r.note} for r in rows],
                  **provenance(["numpy"])}
        write_report({out / "reproduction.csv": functools.partial(write_csv, rows), out / "reproduction.md": text},
                     out / "reproduction.json", record)
    print(text, end="")
    return 0

