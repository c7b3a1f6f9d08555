#!/usr/bin/env python3
"""Turn graded responses (one row per model, item and trial) into a model × item count matrix."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmeasure.errors import run_cli
from benchmeasure.matrix import write_matrix
from benchmeasure.responses import read_responses_csv

EXAMPLES = """\
input (one graded response per row; other columns are ignored):
  model,item_id,trial,correct
  model-a,q0,0,1
  model-a,q0,1,0
  ...

output (models as rows, items as columns, number correct as values):
  model,q0,q1
  model-a,1,2
  model-b,0,1

example:
  python3 scripts/prepare_response_matrix.py responses.csv --n-trials 2 \\
      --output my_benchmark/response_matrix.csv

Models and items keep their first-seen order and their exact IDs. Every (model, item)
pair needs exactly --n-trials rows with distinct trial IDs, and every model must answer
every item; anything else is rejected with the line that breaks the rule.
"""


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="prepare_response_matrix.py",
        description="Count correct responses per model and item (the input of fit_irt.py).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("responses", metavar="RESPONSES_CSV", help="CSV with columns model,item_id,trial,correct")
    parser.add_argument("--n-trials", type=int, required=True, metavar="K",
                        help="responses collected per model-item pair")
    parser.add_argument("--output", required=True, metavar="MATRIX_CSV",
                        help="where to write the matrix (parent folders are created)")
    parser.add_argument("--quiet", action="store_true", help="do not print the summary line on stderr")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    matrix = read_responses_csv(args.responses, args.n_trials)
    write_matrix(matrix, args.output)
    if not args.quiet:
        n_models, n_items = matrix.shape
        print(f"wrote {args.output}: {n_models} models x {n_items} items, {args.n_trials} trials each "
              f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_cli(main)
