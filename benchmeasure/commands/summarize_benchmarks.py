"""Summarize benchmarks in the layout of paper Table 1: DDM, Max Gap, Top-5 Sum, size, with marks."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from benchmeasure.analyses.summary import (
    DEFAULT_DOMAINS,
    THRESHOLDS,
    markdown_table,
    marked_counts,
    read_domains,
    summarize,
    write_csv,
)
from benchmeasure.base.errors import command_parser
from benchmeasure.base.files import plan_outputs, provenance, result_json, sha256_file, write_report
from benchmeasure.core.benchmarks import find_benchmarks, skipped_warning

EXAMPLES = """\
examples:
  benchmeasure summarize data/benchmarks
  benchmeasure summarize data/benchmarks/AIME24 data/benchmarks/AMC23 --json
  benchmeasure summarize data/benchmarks --output-dir results/table1

marks: DDM >= 0.10, Max Gap >= 0.10, Top-5 Sum >= 0.30 (paper Table 1); difficulties are
min-max normalized per benchmark. Each benchmark is a folder holding difficulty.csv
(item_id,b_mean, IDs 0 ... N-1) and, optionally, test.jsonl whose item IDs must match;
subfolders without difficulty.csv are skipped with a warning.
"""


def parse_args(argv):
    parser = command_parser("summarize_benchmarks.py",
                            "Table 1 of the paper for your benchmark folders: DDM, Max Gap, Top-5 Gap Sum and item "
                            "count.", EXAMPLES)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a folder of benchmark folders, benchmark folders, or their difficulty.csv files")
    parser.add_argument("--domains", default=str(DEFAULT_DOMAINS), metavar="CSV",
                        help="benchmark,domain CSV (default: the paper's Table 3 rows)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--output-dir", metavar="DIR", help="also write table1.csv, table1.md and table1.json here")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    plan_outputs(inputs=[args.domains, *args.paths],
                 folders=[(args.output_dir, ("table1.csv", "table1.md", "table1.json"))])
    domains = read_domains(args.domains)
    skipped = []
    benchmarks = find_benchmarks(args.paths, skipped)
    rows = summarize(benchmarks, domains)
    record = {
        "benchmarks": [r.as_dict() for r in rows],
        "thresholds": THRESHOLDS,
        "marked_counts": {m: {"marked": c, "total": n} for m, (c, n) in marked_counts(rows).items()},
        "inputs": {b.name: sha256_file(Path(b.folder) / "difficulty.csv") for b in benchmarks},
        "skipped_folders": [str(folder) for folder in skipped],
        **provenance([]),
    }
    table = markdown_table(rows)
    if args.output_dir:
        out = Path(args.output_dir)
        write_report({out / "table1.csv": functools.partial(write_csv, rows), out / "table1.md": table},
                     out / "table1.json", record)
    for folder in skipped:  # after everything that could fail, so a rejected run prints one error line only
        print(skipped_warning(folder), file=sys.stderr)
    print(result_json(record) if args.json else table, end="\n" if args.json else "")
    return 0

