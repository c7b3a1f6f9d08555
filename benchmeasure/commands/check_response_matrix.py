"""Check a response matrix before fitting IRT (paper Table 5): information and inversion rates."""

from __future__ import annotations

from pathlib import Path

from benchmeasure.analyses.checks import THRESHOLDS, check_matrix
from benchmeasure.base.errors import command_parser
from benchmeasure.base.files import plan_outputs, provenance, result_json, sha256_file, write_report
from benchmeasure.base.options import N_TRIALS, add_allow_missing
from benchmeasure.core.matrix import read_matrix

EXAMPLES = """\
examples:
  benchmeasure check my_benchmark/response_matrix.csv --n-trials 32
  benchmeasure check my_benchmark/response_matrix.csv --n-trials 32 --json
  benchmeasure check my_benchmark/response_matrix.csv --n-trials 32 --output-dir results/checks

thresholds (paper Table 5): model/item information >= 0.3, model/item inversion rate <= 0.3.
definitions: see benchmeasure/analyses/checks.py or docs/analyses.md.
"""

LABELS = {
    "model_information": "Model Information ↑",
    "item_information": "Item Information ↑",
    "model_inversion_rate": "Model Inversion Rate ↓",
    "item_inversion_rate": "Item Inversion Rate ↓",
}


def parse_args(argv):
    parser = command_parser("check_response_matrix.py",
                            "Compute model/item information and inversion rates of a count matrix and compare "
                            "them with the paper's pass thresholds.", EXAMPLES)
    parser.add_argument("matrix", metavar="MATRIX", help="count matrix CSV (model,<item>,…)")
    parser.add_argument("--n-trials", type=N_TRIALS, required=True, metavar="K", help="trials per model-item pair")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_allow_missing(parser,
                      "accept absent cells (blank) and K per cell (MATRIX.trials.csv): the figures are computed "
                      "on present cells with rates (docs/suites.md, benchmeasure/analyses/checks_holes.py)")
    parser.add_argument("--output-dir", metavar="DIR",
                        help="also write checks.json (figures, settings, input SHA-256, versions) and checks.md here")
    return parser.parse_args(argv)


def _fmt(value) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _table(result) -> list[str]:
    cells = [_fmt(getattr(result, name)) for name in LABELS]
    return ["| " + " | ".join(LABELS.values()) + " | Passed |",
            "|" + "---|" * (len(LABELS) + 1),
            "| " + " | ".join(cells) + f" | {'yes' if result.passed else 'no'} |"]


def _thresholds() -> str:
    return "Thresholds: " + ", ".join(f"{name} {op} {limit}" for name, (op, limit) in THRESHOLDS.items())


def report(path, matrix, result) -> str:
    """What stdout shows: a header line, the Table 5 row in Markdown, the thresholds, any failures."""
    models, items = matrix.shape
    lines = [f"Matrix: {path} ({models} models × {items} items, K = {matrix.n_trials})",
             *_table(result), _thresholds()]
    lines.extend(f"FAILS: {reason}" for reason in result.failures())
    return "\n".join(lines) + "\n"


def markdown(path, matrix, result) -> str:
    """checks.md: the same content as a Markdown document (blank lines around the table, failures as a list)."""
    models, items = matrix.shape
    lines = [f"Matrix: `{path}` ({models} models × {items} items, K = {matrix.n_trials})", "",
             *_table(result), "", _thresholds()]
    if result.failures():
        lines += ["", *(f"- FAILS: {reason}" for reason in result.failures())]
    return "\n".join(lines) + "\n"


OUTPUTS = ("checks.md", "checks.json")


def main(argv=None) -> int:
    args = parse_args(argv)
    plan_outputs(inputs=[args.matrix], folders=[(args.output_dir, OUTPUTS)])
    absent = None
    if args.allow_missing:
        import numpy as np

        from benchmeasure.analyses.checks_holes import check_matrix_with_holes
        from benchmeasure.core.matrix import ResponseMatrix
        from benchmeasure.core.matrix_holes import read_counts_and_trials

        models, items, counts, trials = read_counts_and_trials(args.matrix, args.n_trials)
        matrix = ResponseMatrix(models, items, np.asarray(counts, dtype=np.int64), args.n_trials,
                                np.asarray(trials, dtype=np.int64))
        result = check_matrix_with_holes(matrix.counts, matrix.trials)
        absent = int((matrix.trials == 0).sum())
    else:
        matrix = read_matrix(args.matrix, args.n_trials)
        result = check_matrix(matrix)
    if args.output_dir:
        models, items = matrix.shape
        record = {
            **result.as_dict(),
            "failures": result.failures(),
            "thresholds": {name: {"op": op, "limit": limit} for name, (op, limit) in THRESHOLDS.items()},
            "settings": {"n_trials": matrix.n_trials, **({"allow_missing": True} if args.allow_missing else {})},
            **({} if absent is None else {"absent_cells": absent}),
            "input": {"path": args.matrix, "sha256": sha256_file(args.matrix),
                      "models": models, "items": items},
            **provenance(["numpy"]),
        }
        out = Path(args.output_dir)
        write_report({out / "checks.md": markdown(args.matrix, matrix, result)}, out / "checks.json", record)
    if args.json:
        print(result_json(result.as_dict() if absent is None else {**result.as_dict(), "absent_cells": absent}))
    else:
        print(report(args.matrix, matrix, result), end="")
        if absent is not None:
            print(f"Absent cells: {absent} of {matrix.counts.size} (figures on present cells, with rates)")
    return 0

