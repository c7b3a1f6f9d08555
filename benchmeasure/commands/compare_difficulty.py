"""Compare estimated difficulties with reference ones (e.g. the simulated example's truth).

Standard library only.
"""

from __future__ import annotations

from dataclasses import asdict

from benchmeasure.analyses.compare import compare
from benchmeasure.base.errors import command_parser
from benchmeasure.base.files import result_json
from benchmeasure.base.options import TOP_K
from benchmeasure.core.difficulty_file import read_difficulty_column

EXAMPLE = """\
example (the bundled simulated benchmark):
  benchmeasure compare demo_output/difficulty.csv \\
      data/example_simulated/true_difficulty.csv --reference-column b_true

Items are matched by ID (column item or item_id). Both files are min-max normalized before
the z errors are computed, so the fit's arbitrary location and scale are not counted.
"""


def main(argv=None) -> int:
    parser = command_parser("compare_difficulty.py", __doc__.splitlines()[0], EXAMPLE)
    parser.add_argument("estimate", help="difficulty CSV to check (e.g. benchmeasure fit's difficulty.csv)")
    parser.add_argument("reference", help="difficulty CSV to compare against")
    parser.add_argument("--column", default="b_mean", help="difficulty column of ESTIMATE (default: b_mean)")
    parser.add_argument("--reference-column", default="b_mean", help="difficulty column of REFERENCE")
    parser.add_argument("--top-k", type=TOP_K, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = compare(read_difficulty_column(args.estimate, args.column),
                     read_difficulty_column(args.reference, args.reference_column), args.top_k)
    if args.json:
        record = asdict(result)
        for key in ("estimate", "reference"):
            record[key] = getattr(result, key).as_dict()
        print(result_json(record))
        return 0
    k = args.top_k
    print(f"Items compared: {result.items}")
    print(f"Pearson r: {result.pearson:.4f}   Spearman rho: {result.spearman:.4f}")
    print(f"Normalized difficulty error |z_est - z_ref|: mean {result.mean_abs_z_error:.4f}, "
          f"max {result.max_abs_z_error:.4f}")
    print(f"{'metric':<16} {'estimate':>10} {'reference':>10} {'difference':>11}")
    for label, name in (("DDM", "ddm"), ("Max Gap", "max_gap"), (f"Top-{k} Gap Sum", "top_k_gap_sum")):
        est, ref = getattr(result.estimate, name), getattr(result.reference, name)
        print(f"{label:<16} {est:10.4f} {ref:10.4f} {est - ref:+11.4f}")
    return 0

