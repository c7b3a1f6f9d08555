"""Plot benchmark difficulty ECDFs with the largest gaps shaded (paper Figures 3, 5 and 6)."""

from __future__ import annotations

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import plan_outputs
from benchmeasure.base.options import TOP_K, integer
from benchmeasure.core.difficulty_file import benchmark_name, read_difficulty_column
from benchmeasure.core.metrics import check_unit_interval, normalize_min_max

EXAMPLES = """\
examples:
  benchmeasure plot data/benchmarks/AIME24/difficulty.csv --output fig3.png --output fig3.pdf
  benchmeasure plot data/benchmarks/*/difficulty.csv --output fig6.png --columns 4
  benchmeasure plot aime24/difficulty.csv --after aime24_filled/difficulty.csv --output fig5.png

The figure is written to each --output, in the format its name says (.png, .pdf or .svg); give
--output twice for the paper's PNG and PDF. Difficulties are min-max
normalized per file unless --normalized. The panel title is the folder holding the file.
"""


def parse_args(argv):
    parser = command_parser("plot_difficulty.py",
                            "ECDF of normalized difficulties against the uniform reference, widest gaps shaded.",
                            EXAMPLES)
    parser.add_argument("files", nargs="+", metavar="DIFFICULTY_CSV")
    parser.add_argument("--output", required=True, metavar="FIG", action="append",
                        help="figure file, .png, .pdf or .svg; repeat it for several formats of one figure")
    parser.add_argument("--after", metavar="CSV",
                        help="difficulties after gap filling: draw before/after (Figure 5); one input file only")
    parser.add_argument("--column", default="b_mean", help="difficulty column (default: b_mean)")
    parser.add_argument("--normalized", action="store_true", help="values are already on [0, 1]")
    parser.add_argument("--top-k", type=TOP_K, default=None,
                        help="gaps to shade (default: 5 for ECDF panels, 3 for --after)")
    parser.add_argument("--columns", type=integer(1, 50), default=None, help="panels per row (default: up to 3)")
    return parser.parse_args(argv)


def load(path: str, column: str, normalized: bool) -> list:
    values = read_difficulty_column(path, column).values
    if normalized:
        check_unit_interval(values, path)
        return values
    return normalize_min_max(values, path)


def name_of(path: str) -> str:
    return benchmark_name(path)


def main(argv=None) -> int:
    args = parse_args(argv)
    from benchmeasure.analyses.plots import figure_paths, plot_before_after, plot_benchmarks  # matplotlib: slow

    plan_outputs(files=figure_paths(args.output), inputs=[*args.files, args.after])
    if args.after:
        if len(args.files) != 1:
            fail(f"--after compares one benchmark, but {len(args.files)} input files were given")
        before = load(args.files[0], args.column, args.normalized)
        after = load(args.after, args.column, args.normalized)
        paths = plot_before_after(name_of(args.files[0]), before, after, args.output, args.top_k or 3)
    else:
        panels = [(name_of(p), load(p, args.column, args.normalized)) for p in args.files]
        paths = plot_benchmarks(panels, args.output, args.top_k or 5, args.columns)
    for path in paths:
        print(path)
    return 0

