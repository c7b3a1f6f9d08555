#!/usr/bin/env python3
"""Check a response matrix before fitting IRT (paper Table 5): information and inversion rates."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmeasure.checks import THRESHOLDS, check_matrix
from benchmeasure.errors import ArgumentParser, run_cli
from benchmeasure.matrix import read_matrix

EXAMPLES = """\
examples:
  python scripts/check_response_matrix.py my_benchmark/response_matrix.csv --n-trials 32
  python scripts/check_response_matrix.py my_benchmark/response_matrix.csv --n-trials 32 --json

thresholds (paper Table 5): model/item information >= 0.3, model/item inversion rate <= 0.3.
definitions: see benchmeasure/checks.py or docs/analyses.md.
"""

LABELS = {
    "model_information": "Model Information ↑",
    "item_information": "Item Information ↑",
    "model_inversion_rate": "Model Inversion Rate ↓",
    "item_inversion_rate": "Item Inversion Rate ↓",
}


def parse_args(argv):
    parser = ArgumentParser(
        prog="check_response_matrix.py",
        description="Compute model/item information and inversion rates of a count matrix and compare "
                    "them with the paper's pass thresholds.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("matrix", metavar="MATRIX", help="count matrix CSV (model,<item>,…)")
    parser.add_argument("--n-trials", type=int, required=True, metavar="K", help="trials per model-item pair")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser.parse_args(argv)


def _fmt(value) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def main(argv=None) -> int:
    args = parse_args(argv)
    matrix = read_matrix(args.matrix, args.n_trials)
    result = check_matrix(matrix)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
        return 0
    models, items = matrix.shape
    print(f"Matrix: {args.matrix} ({models} models × {items} items, K = {matrix.n_trials})")
    print("| " + " | ".join(LABELS.values()) + " | Passed |")
    print("|" + "---|" * (len(LABELS) + 1))
    cells = [_fmt(getattr(result, name)) for name in LABELS]
    print("| " + " | ".join(cells) + f" | {'yes' if result.passed else 'no'} |")
    thresholds = ", ".join(f"{name} {op} {limit}" for name, (op, limit) in THRESHOLDS.items())
    print(f"Thresholds: {thresholds}")
    for reason in result.failures():
        print(f"FAILS: {reason}")
    return 0


if __name__ == "__main__":
    run_cli(main)
