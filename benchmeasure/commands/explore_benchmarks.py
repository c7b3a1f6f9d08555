"""Write the benchmark explorer: one self-contained HTML page of benchmarks' difficulty measures."""

from __future__ import annotations

import datetime
import logging
import sys
from pathlib import Path

from benchmeasure import __version__
from benchmeasure.analyses.summary import DEFAULT_DOMAINS, read_domains
from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import atomic_write, check_output_path, command_line, package_versions, sha256_file
from benchmeasure.base.options import add_alias, add_hdi_prob, add_quiet, integer, number
from benchmeasure.core.benchmarks import skipped_warning
from benchmeasure.explorer.collect import (
    QUESTION_FIELDS,
    attach_filled,
    attach_posteriors,
    check_names,
    has_questions,
    load_entries,
    page_data,
    recut_questions,
)
from benchmeasure.explorer.fit_views import attach_drift, attach_model_fit
from benchmeasure.explorer.page import render_within

log = logging.getLogger("benchmeasure.explorer")
MAX_MB = 5.0  # default page budget: bench/bench_explorer.py shows 25 benchmarks x 10,000 items fit in it
LEAST_CHARS = 20  # shorter question text says too little to be worth its bytes: then none is kept

EXAMPLES = f"""\
examples:
  benchmeasure explore data/benchmarks --output explorer.html
  benchmeasure explore my_benchmark/difficulty.csv other/difficulty.csv --output explorer.html
  benchmeasure explore my_benchmark --posterior my_benchmark/posterior.zarr \\
      --output explorer.html
  benchmeasure explore data/benchmarks --filled propose/results/aime24/run-1 --output explorer.html

inputs:
  DIFFICULTY_CSV_OR_BENCHMARK_DIR  a difficulty file (b_mean column; fit_irt.py's difficulty.csv or the
        released item_id,b_mean layout), a benchmark folder holding difficulty.csv (and optionally
        test.jsonl, whose question text the page shows on hover), or a folder of such folders. A
        benchmark is named after the folder holding its file, or after the file's stem when several
        given files share a folder.
  --filled RUN_DIR  a finished BenchFill run folder (summary.json, new_item_records.csv) or mass-fill
        output (mass_fill_summary.json, mass_fill_records.csv): before/after ECDFs with the new items,
        their targets and parents. It joins the benchmark whose difficulty file is the run's
        calibration table (same SHA-256), or adds that table as a benchmark of its own.
  --posterior [NAME=]PATH  posterior.zarr, .nc, .npz or a CSV of draws (or a benchmeasure fit --save-posterior
        folder) of a benchmark's fit: 94% intervals of the metrics in the table and a band of ECDF
        draws. Without NAME= it belongs to the benchmark whose difficulty file is in the same folder.
        Needs NumPy (and xarray for zarr/NetCDF): run with .venv-irt/bin/python.
  --drift [NAME=]DIR  a benchmeasure drift output folder (drift.json, figures/): a "Drift" section with
        each model's step τ, δ [95% interval], p, q and flag, and the flagged models' figures (a
        categorical covariate: how each model differs by it). Without NAME= it joins the benchmark
        whose fit (diagnostics.json beside its difficulty file) saw the matrix drift analysed.

a "Model fit" section shows a benchmark's model-fit check when its fit folder has one (check_fit/,
which benchmeasure fit writes unless --no-check-fit): the summary line, the flagged items with
reason and p-values, the flagged models (docs/model_fit.md).

the page: numbers are those of benchmeasure diagnose (paper Table 1, three decimals); highlighted
cells reach DDM >= 0.10, Max Gap >= 0.10, Top-5 Gap Sum >= 0.30. The page needs no server and no
network: open it from disk. Question text is cut to --question-chars characters (a 10,000-item
benchmark adds about that many kilobytes per character kept); when the page would pass --max-mb
(default {MAX_MB:g} MB), every question is cut shorter, to the longest length that fits (left out
when not even {LEAST_CHARS} characters fit), and a note says so (--max-mb 0 keeps --question-chars
whatever the size). Question fields tried in order:
{", ".join(QUESTION_FIELDS)}.
"""


def parse_args(argv):
    parser = command_parser("explore_benchmarks.py",
                            "Write one self-contained HTML page to explore benchmarks' difficulty measures: a sortable "
                            "table of DDM, Max Gap and Top-5 Gap Sum, and per benchmark its ECDF against the uniform "
                            "reference with the widest gaps, posterior bands and gap-filling results.", EXAMPLES)
    parser.add_argument("paths", nargs="*", metavar="DIFFICULTY_CSV_OR_BENCHMARK_DIR",
                        help="difficulty files, benchmark folders, or folders of benchmark folders")
    parser.add_argument("--filled", nargs="+", action="extend", default=[], metavar="RUN_DIR",
                        help="finished BenchFill run folders or mass-fill outputs")
    parser.add_argument("--posterior", nargs="+", action="extend", default=[], metavar="[NAME=]PATH",
                        help="saved posteriors of the benchmarks' fits")
    parser.add_argument("--drift", nargs="+", action="extend", default=[], metavar="[NAME=]DIR",
                        help="benchmeasure drift output folders: a Drift section for their benchmark")
    parser.add_argument("--use-cases", nargs="+", action="extend", default=[], metavar="REPORT_JSON",
                        help="add a 'use cases' section from benchmeasure browse report files")
    parser.add_argument("--output", required=True, metavar="HTML", help="the page to write (e.g. explorer.html)")
    parser.add_argument("--column", default="b_mean", help="difficulty column of the files (default: b_mean)")
    parser.add_argument("--domains", metavar="CSV",
                        help="benchmark,domain CSV (default: the paper's Table 3 rows)")
    parser.add_argument("--question-field", metavar="FIELD",
                        help="test.jsonl field holding the question (default: the first of "
                             f"{', '.join(QUESTION_FIELDS)} present)")
    parser.add_argument("--question-chars", type=integer(0, 1_000_000), default=120, metavar="N",
                        help="characters of question text kept per item (default: 120; 0 leaves text out)")
    parser.add_argument("--max-mb", type=number(0.0, 1e6), default=MAX_MB, metavar="MB",
                        help=f"page size budget: question text is cut shorter to stay under it (default {MAX_MB:g}; "
                             "0 = no budget)")
    mass = add_hdi_prob(parser, "mass of the posterior intervals and band (default: 0.94, as posterior-metrics)", None)
    add_alias(parser, "--probability", mass)  # the old name, for a release
    parser.add_argument("--title", default="Benchmark explorer", help="the page's title")
    add_quiet(parser, "print only the final line")
    return parser.parse_args(argv)


def _progress(quiet: bool) -> None:
    """Progress lines on stdout (stderr is kept for the one error line), unless a handler is already set."""
    logger = logging.getLogger("benchmeasure")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)


def _check_output(output: Path, inputs: list) -> None:
    target = output.resolve()
    for path in inputs:
        source = Path(path).resolve()
        if target == source or (source.suffix == ".zarr" and source in target.parents):
            fail(f"--output {output}: would overwrite the input {path}; choose another file")


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.paths and not args.filled:
        fail("explore: give at least one benchmark (difficulty file or folder) or --filled run "
             "(see --help)")
    if args.question_chars < 0:
        fail(f"--question-chars must be 0 or more, got {args.question_chars}")
    if args.posterior or args.hdi_prob is not None:  # NumPy only where a posterior is read
        from benchmeasure.analyses.posterior_metrics import PROBABILITY

        args.hdi_prob = PROBABILITY if args.hdi_prob is None else args.hdi_prob
        if not 0 < args.hdi_prob < 1:
            fail(f"--hdi-prob must lie in (0, 1), got {args.hdi_prob}")
    output = check_output_path(args.output, [*args.paths, *args.filled, args.domains, *(args.posterior or []),
                                             *args.use_cases, *args.drift])
    _check_output(output, [*args.paths, *args.filled])
    use_cases = []
    if args.use_cases:  # read (and checked) before any work, and before they are hashed
        from benchmeasure.explorer.use_cases import read_use_cases

        use_cases = [read_use_cases(path) for path in args.use_cases]
    _progress(args.quiet)
    domains_path = Path(args.domains) if args.domains else DEFAULT_DOMAINS
    domains = read_domains(domains_path) if args.domains or DEFAULT_DOMAINS.is_file() else {}
    entries, skipped = load_entries(args.paths, args.column, args.question_field, args.question_chars)
    inputs = {e.source: e.sha256 for e in entries}
    inputs.update(attach_filled(entries, args.filled, args.question_field, args.question_chars))
    check_names(entries)
    if args.posterior:
        inputs.update(attach_posteriors(entries, args.posterior, args.hdi_prob))
    inputs.update(attach_model_fit(entries))
    if args.drift:
        inputs.update(attach_drift(entries, args.drift))
    _check_output(output, [*inputs, *(str(Path(e.source).parent / "test.jsonl") for e in entries)])
    versions = package_versions(["numpy", "xarray"] if args.posterior else [])
    provenance = {
        "command": command_line(), "written": datetime.datetime.now().isoformat(timespec="seconds"),
        "benchmeasure": __version__,
        "settings": {"column": args.column, "question_field": args.question_field,
                     "question_chars": args.question_chars, "question_chars_asked": args.question_chars,
                     "max_mb": args.max_mb, "probability": args.hdi_prob, "top_k": 5,
                     "normalization": "per-benchmark min-max to [0, 1]"},
        "inputs_sha256": inputs, "package_versions": versions,
        "skipped_folders": [str(folder) for folder in skipped],
    }
    if args.use_cases:
        inputs.update({path: sha256_file(path) for path in args.use_cases})
    data = page_data(entries, {**domains}, args.title, provenance)
    if args.use_cases:
        data["use_cases"] = use_cases
    budget = round(args.max_mb * 1e6)
    html, chars = render_within(data, budget, args.question_chars if has_questions(data) else 0, recut_questions,
                                least=min(LEAST_CHARS, args.question_chars))
    with atomic_write(output) as handle:
        handle.write(html)
    for folder in skipped:  # after everything that could fail, so a rejected run prints one error line only
        print(skipped_warning(folder), file=sys.stderr)
    size = len(html.encode("utf-8"))
    print(f"wrote {output} ({len(entries)} benchmark{'s' if len(entries) != 1 else ''}, {size / 1e6:.2f} MB); "
          f"open it in a browser, no server needed")
    if has_questions(data) and 0 < chars < args.question_chars:
        print(f"note: question text cut to {chars} characters per item (asked: {args.question_chars}) to keep the "
              f"page under {args.max_mb:g} MB; --max-mb 0 keeps all {args.question_chars}")
    elif has_questions(data) and chars == 0 and args.question_chars:
        print(f"note: question text left out: even {min(LEAST_CHARS, args.question_chars)} characters per item "
              f"would take the page over {args.max_mb:g} MB; a larger --max-mb (0 = no budget) keeps it")
    if budget and size > budget:
        print(f"note: the page is {size / 1e6:.2f} MB, over --max-mb {args.max_mb:g}"
              + (" even without question text" if has_questions(data) else "") +
              "; it still works, but loads slowly")
    return 0
