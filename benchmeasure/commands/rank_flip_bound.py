"""Theorem 2.1: bound the distortion of a model comparison by L·W1 and say if a rank flip is possible."""

from __future__ import annotations

import itertools
from pathlib import Path

from benchmeasure.analyses.rank_flip import rank_flip_bound
from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import plan_outputs, provenance, result_json, sha256_file, write_report
from benchmeasure.base.options import N_TRIALS, number
from benchmeasure.core.difficulty_file import read_difficulty_column
from benchmeasure.core.matrix import read_matrix
from benchmeasure.core.metrics import check_unit_interval, normalize_min_max

EXAMPLES = """\
examples:
  benchmeasure rank-flip bench/response_matrix.csv bench/difficulty.csv --n-trials 8 --lipschitz 1
  benchmeasure rank-flip bench/response_matrix.csv bench/difficulty.csv --n-trials 8 \\
      --lipschitz 2 --models model-a model-b --json
  benchmeasure rank-flip bench/response_matrix.csv bench/difficulty.csv --n-trials 8 \\
      --lipschitz 1 --output-dir results/rank_flip

Theorem 2.1: if the accuracy difference of two models is L-Lipschitz in normalized
difficulty, the benchmark gap D_B and the gap D_mu under the uniform target satisfy
|D_B - D_mu| <= L * W1(benchmark, uniform). A flip is ruled out when |D_B| > L * W1.
D_B = mean over items of (accuracy of A - accuracy of B). Items are matched by ID.
"""


def parse_args(argv):
    parser = command_parser("rank_flip_bound.py", "Apply the paper's Theorem 2.1 to pairs of models on one benchmark.",
                            EXAMPLES)
    parser.add_argument("matrix", metavar="MATRIX", help="count matrix CSV (model,<item>,…)")
    parser.add_argument("difficulty", metavar="DIFFICULTY_CSV", help="difficulty file with item or item_id IDs")
    parser.add_argument("--n-trials", type=N_TRIALS, required=True, metavar="K")
    parser.add_argument("--lipschitz", type=number(0.0, 1e6, open_low=True), required=True, metavar="L",
                        help="assumed Lipschitz constant of the accuracy difference on the [0, 1] axis")
    parser.add_argument("--models", nargs=2, metavar=("A", "B"), help="one pair (default: every pair)")
    parser.add_argument("--column", default="b_mean")
    parser.add_argument("--normalized", action="store_true", help="difficulties are already on [0, 1]")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--output-dir", metavar="DIR",
                        help="also write rank_flip.json (results, settings, input SHA-256s, versions) and rank_flip.md")
    return parser.parse_args(argv)


def _table(results, lipschitz) -> list[str]:
    first = results[0]
    lines = [f"W1(benchmark, uniform) = {first.w1_uniform:.4f} (DDM {first.ddm:.4f}); "
             f"L = {lipschitz:g}; bound L·W1 = {first.bound:.4f}",
             "| Model A | Model B | D_B (A − B) | D_μ interval | Rank flip possible |",
             "|---|---|---|---|---|"]
    for r in results:
        low, high = r.benchmark_gap - r.bound, r.benchmark_gap + r.bound
        lines.append(f"| {r.model_a} | {r.model_b} | {r.benchmark_gap:+.4f} | [{low:+.4f}, {high:+.4f}] | "
                     f"{'yes' if r.flip_possible else 'no'} |")
    return lines


def _write_outputs(args, matrix, results) -> None:
    out = Path(args.output_dir)
    records = [r.as_dict() for r in results]
    record = {
        "pairs": records,
        "settings": {"n_trials": matrix.n_trials, "lipschitz": args.lipschitz, "column": args.column,
                     "normalized": args.normalized, "models": args.models},
        "inputs": {"matrix": {"path": args.matrix, "sha256": sha256_file(args.matrix)},
                   "difficulty": {"path": args.difficulty, "sha256": sha256_file(args.difficulty)}},
        "items": len(matrix.items),
        **provenance(["numpy"]),
    }
    lines = _table(results, args.lipschitz)
    text = "\n".join([f"Matrix `{args.matrix}`, difficulties `{args.difficulty}` ({len(matrix.items)} items)", "",
                      lines[0], "", *lines[1:]]) + "\n"
    write_report({out / "rank_flip.md": text}, out / "rank_flip.json", record)


def main(argv=None) -> int:
    args = parse_args(argv)
    plan_outputs(inputs=[args.matrix, args.difficulty], folders=[(args.output_dir, ("rank_flip.md", "rank_flip.json"))])
    matrix = read_matrix(args.matrix, args.n_trials)
    column = read_difficulty_column(args.difficulty, args.column)
    if column.id_column is None:
        fail(f"{args.difficulty}: no item or item_id column; the bound matches difficulties to matrix items by ID")
    if (k := column.first_repeated_id()) is not None:
        fail(f"{args.difficulty}: line {column.lines[k]}: item {column.item_ids[k]!r} is listed twice "
             "(each item needs exactly one difficulty)")
    by_id = dict(zip(column.item_ids, column.values))
    missing = [i for i in matrix.items if i not in by_id]
    if missing or len(by_id) != len(matrix.items):
        extra = [i for i in by_id if i not in set(matrix.items)]
        which = f"item {missing[0]!r} of the matrix is not in" if missing else f"item {extra[0]!r} is only in"
        fail(f"{args.difficulty}: {which} the difficulty file (the two must list the same items)")
    values = [by_id[i] for i in matrix.items]
    if args.normalized:
        check_unit_interval(values, args.difficulty)
        z = values
    else:
        z = normalize_min_max(values, args.difficulty)
    accuracy = matrix.accuracy()
    index = {m: j for j, m in enumerate(matrix.models)}
    if args.models:
        for name in args.models:
            if name not in index:
                fail(f"{args.matrix}: no model {name!r} (models: {', '.join(matrix.models)})")
        if args.models[0] == args.models[1]:
            fail(f"--models: give two different models, got {args.models[0]!r} twice")
        pairs = [tuple(args.models)]
    else:
        pairs = list(itertools.combinations(matrix.models, 2))
    results = [rank_flip_bound(accuracy[index[a]], accuracy[index[b]], z, args.lipschitz, a, b) for a, b in pairs]
    if args.output_dir:
        _write_outputs(args, matrix, results)
    if args.json:
        records = [r.as_dict() for r in results]
        print(result_json(records[0] if len(records) == 1 else records))
        return 0
    print("\n".join(_table(results, args.lipschitz)))
    return 0

