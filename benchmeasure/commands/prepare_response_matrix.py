"""Turn graded responses (one row per model, item and trial) into a model × item count matrix.

The rows come from a ``model,item_id,trial,correct`` CSV, or (``--from``) straight from
evaluation-harness sample logs (``benchmeasure/core/harness/``, ``docs/harness_logs.md``).
Beside the matrix, ``<output>.json`` records how it was made: the inputs and their SHA-256,
the settings, the command and the package versions.
"""

from __future__ import annotations

import csv
import os
import sys
import time
from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from benchmeasure.base.csv_table import table_kind
from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.extras import missing_package
from benchmeasure.base.files import all_or_nothing, atomic_write, plan_outputs, provenance, sha256_file, write_json
from benchmeasure.base.options import N_TRIALS, add_allow_missing, add_quiet, number
from benchmeasure.core.harness import FORMATS, HARNESSES, PARTIAL_CHOICES  # names only: no reader, no NumPy
from benchmeasure.core.response_counts import count_responses, write_count_table
from benchmeasure.grading import KINDS

# the harness formats, the wide tables and the fast reader of very large files need NumPy; a bare Python (the paper's
# first call, before any venv) reads a plain CSV only
NEEDS = None if find_spec("numpy") else "numpy"

if TYPE_CHECKING:
    from benchmeasure.core.matrix import ResponseMatrix

#: Plain CSVs above this size go to the PyArrow reader when NumPy, pandas and PyArrow are installed
#: (bench/bench_prepare_matrix.py); below it, and on a bare Python, the standard library reads them.
FAST_BYTES = 64 << 20

EXAMPLES = """\\
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
  benchmeasure prepare responses.csv --n-trials 2 \\
      --output my_benchmark/response_matrix.csv

from evaluation-harness logs (item_id = the log's item ID: doc_id, sample id, instance id...; trial = repeat):
  benchmeasure prepare --from lm-eval out/model-a out/model-b \\
      --metric exact_match --filter first --n-trials 1 --output matrix.csv
  benchmeasure prepare --from lmms-eval out/model-a out/model-b \\
      --grade math --n-trials 3 --output matrix.csv --responses-out responses.csv
  benchmeasure prepare --from lighteval out/details/openai/model-a \\
      out/details/openai/model-b --grade math --n-trials 3 --output matrix.csv
  (a log with K responses per document but one metric value needs --grade KIND: each
  response is graded against the logged target with the project's graders)
  benchmeasure prepare --from inspect logs/model-a.eval logs/model-b.eval \\
      --n-trials 4 --output matrix.csv        (epochs = trials; --scorer, --partial as needed)
  benchmeasure prepare --from evalscope outputs/reviews/model-a \\
      outputs/reviews/model-b --n-trials 4 --output matrix.csv        (--repeats = trials)
  benchmeasure prepare --from opencompass outputs/DATE/results/model-a \\
      outputs/DATE/results/model-b --n-trials 4 --output matrix.csv   (replicas n = trials)
  benchmeasure prepare --from helm "runs/SUITE/RUN_A" "runs/SUITE/RUN_B" \\
      --metric exact_match --n-trials 3 --output matrix.csv          (train trials = trials)
  (formats and the exact fields read: docs/harness_logs.md)

from a wide table of counts or 0/1 values (1.0 accepted; IDs from the header and the first column):
  benchmeasure prepare --from wide data/chembench/binary_matrix.csv \\
      --items-as-rows --n-trials 1 --output chembench/response_matrix.csv
  (without --items-as-rows the table has one row per model, as the output does)

Models and items keep their first-seen order and their exact IDs. Every (model, item)
pair needs exactly --n-trials rows with distinct trial IDs, and every model must answer
every item; anything else is rejected with the line that breaks the rule.
"""


def parse_args(argv):
    parser = command_parser("prepare_response_matrix.py",
                            "Count correct responses per model and item (the input of fit_irt.py).", EXAMPLES)
    parser.add_argument("responses", metavar="RESPONSES_CSV | LOG_PATH | WIDE_CSV", nargs="+",
                        help="CSV with columns model,item_id,trial,correct; with --from, harness log folders or "
                             "files, or (--from wide) one wide table")
    parser.add_argument("--n-trials", type=N_TRIALS, required=True, metavar="K",
                        help="responses collected per model-item pair")
    parser.add_argument("--output", required=True, metavar="MATRIX_CSV",
                        help="where to write the matrix (parent folders are created)")
    add_quiet(parser, "do not print the summary line on stderr")
    add_allow_missing(parser, "keep absent cells (no response) and cells with fewer than K trials: the matrix has "
                      "blank cells and a companion MATRIX.trials.csv (docs/suites.md)")
    wide = parser.add_argument_group("wide tables (--from wide)")
    wide.add_argument("--items-as-rows", action="store_true",
                      help="with --from wide: the table has one row per item and one column per model")
    logs = parser.add_argument_group("harness sample logs (--from)")
    logs.add_argument("--from", dest="harness", choices=(*HARNESSES, "wide") if HARNESSES else None,
                      help="read evaluation-harness sample logs, or 'wide': a models × items table of counts")
    logs.add_argument("--metric", help="per-sample metric key of the log (e.g. exact_match, acc)")
    logs.add_argument("--threshold", type=number(), default=0.5,
                      help="metric values other than 0/1 count as correct when >= this (default: 0.5)")
    logs.add_argument("--filter", dest="filter_name", metavar="NAME",
                      help="lm-eval: which filter's lines to use (default: the first in the log)")
    logs.add_argument("--scorer", metavar="NAME", help="inspect: which scorer's scores to use (needed when the "
                      "log has several)")
    logs.add_argument("--partial", choices=PARTIAL_CHOICES,
                      help="inspect: how to count a score that is neither correct nor incorrect (P, N, 0.5...): "
                           "as-wrong (0), as-right (1) or reject (refuse the log; the default)")
    logs.add_argument("--perturbation", metavar="NAME", help="helm: read the entries of this perturbation (e.g. "
                      "lowercase) instead of the unperturbed instances (left out by default)")
    logs.add_argument("--grade", choices=KINDS, help="grade every logged response against its target instead")
    logs.add_argument("--model", help="model name for a single log (default: from the log)")
    logs.add_argument("--responses-out", metavar="CSV", help="also write the long model,item_id,trial,correct rows")
    args = parser.parse_args(argv)
    if args.harness == "wide":  # the standard library parses it; NumPy holds the matrix (no pandas needed)
        try:
            import numpy  # noqa: F401
        except ModuleNotFoundError:
            fail(missing_package("--from wide", "numpy"))
    elif args.harness is not None and NEEDS is not None:
        fail(missing_package(f"--from {args.harness}", NEEDS) + " (a plain model,item_id,trial,correct CSV "
             "needs nothing beyond Python)")
    if args.items_as_rows and args.harness != "wide":
        fail("--items-as-rows needs --from wide (it describes a wide table's orientation)")
    # options that describe harness logs only: the log group's flags without a default, in their order
    used = [action.option_strings[0] for action in logs._group_actions
            if action.dest != "harness" and action.default is None and getattr(args, action.dest) is not None]
    if args.harness == "wide":
        if used:
            fail(f"{used[0]} applies to harness logs only, not to --from wide")
        if len(args.responses) != 1:
            fail(f"--from wide reads one table; {len(args.responses)} paths were given")
    elif args.harness is None:
        if used:
            fail(f"{used[0]} needs --from (it applies to harness logs only)")
        if len(args.responses) != 1:
            fail("give one RESPONSES_CSV (several paths are harness logs: add --from)")
    return args


def matrix_from_logs(args) -> tuple[ResponseMatrix, list, object]:
    """The --from path: read every log, apply --model, convert and validate.

    Returns the matrix, the logs' provenance (file, SHA-256, model, task) and the long rows (for --responses-out).
    """
    if args.model is not None and len(args.responses) != 1:
        fail(f"--model renames a single log; {len(args.responses)} logs were given")
    from benchmeasure.core.harness import ReadOptions, logs_to_matrix, read_log

    options = ReadOptions(filter_name=args.filter_name, metric=args.metric, scorer=args.scorer, partial=args.partial,
                          perturbation=args.perturbation)
    logs = [read_log(args.harness, Path(path), options) for path in args.responses]
    if args.model is not None:
        logs = [replace(logs[0], model=args.model)]
    matrix, rows = logs_to_matrix(logs, args.metric, args.n_trials, args.threshold, args.grade, args.allow_missing)
    inputs = [{"path": str(log.path), "sha256": sha256_file(log.path), "model": log.model, "task": log.task}
              for log in logs]
    return matrix, inputs, rows


def write_responses(rows, path: str) -> None:
    """``--responses-out``: the long ``model,item_id,trial,correct`` rows the matrix was counted from."""
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", "item_id", "trial", "correct"])
        writer.writerows(zip(rows.model, rows.item, rows.trial, rows.correct))


def input_files(paths: list) -> list:
    """The files a run reads: each path, and for a log folder every log-like file inside it (so that no output
    can land on one of them)."""
    found = []
    for path in paths:
        found.append(path)
        if os.path.isdir(path):
            for folder, _, names in os.walk(path):
                found.extend(os.path.join(folder, name) for name in names
                             if name.endswith((".json", ".jsonl", ".parquet", ".csv")))
    return found


def not_long_format(path: str) -> None:
    """Fail naming the next step when ``path``'s header is not ``model,item_id,trial,correct`` but a wide table's
    (a blank first cell, or a row of IDs) or a count matrix's (``model,<item>,…``)."""
    from benchmeasure.base.compressed import open_input, read_errors
    from benchmeasure.base.errors import InputError

    try:  # plain or compressed, by the one opener
        with read_errors(path), open_input(path) as handle:
            header = next(csv.reader(handle), [])
    except (InputError, OSError, csv.Error):
        return  # the reader below reports it
    names = [cell.strip() for cell in header]
    if not names or {"item_id", "trial", "correct"} & set(names):
        return  # the long format, perhaps with a column missing: the reader names it
    kind = table_kind(names)
    if kind and not kind.startswith("a count matrix"):  # a difficulty or ability file: an output, not an input
        fail(f"{path}: not graded responses (model,item_id,trial,correct); this is {kind}")
    if names[0] == "model" and len(names) > 1:
        fail(f"{path}: a count matrix already (header 'model,{names[1]},…'), not graded responses; give it to "
             "benchmeasure fit directly, or read it as a table of counts with --from wide")
    if len(names) > 2:
        fail(f"{path}: header {','.join(names[:3])},… is not model,item_id,trial,correct; a table with one row per "
             "model and one column per item is read with --from wide (add --items-as-rows when the rows are items)")


def read_plain(path: str, n_trials: int, allow_missing: bool = False):
    """A plain responses CSV: the standard library, or PyArrow for a very large file when it is installed."""
    not_long_format(path)
    if os.path.isfile(path) and os.path.getsize(path) > FAST_BYTES:
        try:
            import numpy  # noqa: F401
            import pandas  # noqa: F401
            import pyarrow  # noqa: F401
        except ModuleNotFoundError:
            print(f"note: {path} is large; installing numpy, pandas and pyarrow (pip install "
                  "'benchmeasure[irt]') reads it many times faster", file=sys.stderr)
        else:
            from benchmeasure.core.responses import read_responses_csv

            return read_responses_csv(path, n_trials, allow_missing)
    return count_responses(path, n_trials, allow_missing)


def output_record(args, matrix: ResponseMatrix, inputs: list) -> dict:
    """The record written to ``<output>.json``."""
    settings = {"n_trials": args.n_trials}
    if args.allow_missing:
        settings["allow_missing"] = True
    if args.harness == "wide":
        settings.update({"from": "wide", "items_as_rows": args.items_as_rows})
    elif args.harness is not None:
        settings.update({"from": args.harness, "metric": args.metric, "threshold": args.threshold,
                         "filter": args.filter_name, "scorer": args.scorer, "partial": args.partial,
                         "perturbation": args.perturbation,
                         "grade": args.grade, "model": args.model,
                         "responses_out": args.responses_out})
    package = FORMATS[args.harness].package if args.harness in FORMATS else None
    record = {"output": args.output, "models": matrix.shape[0], "items": matrix.shape[1], "settings": settings}
    if getattr(matrix, "trials", None) is not None:
        from benchmeasure.core.matrix_holes import trials_path

        trials = matrix.trials.tolist() if hasattr(matrix.trials, "tolist") else matrix.trials
        per_model = {m: sum(1 for t in row if t == 0) for m, row in zip(matrix.models, trials)}
        per_item = {item: sum(1 for row in trials if row[i] == 0) for i, item in enumerate(matrix.items)}
        record["trials_file"] = trials_path(args.output)
        record["absent_cells"] = {"total": sum(per_model.values()),
                                  "per_model": {m: c for m, c in per_model.items() if c},
                                  "per_item": {i: c for i, c in per_item.items() if c}}
        record["cells_with_fewer_trials"] = sum(1 for row in trials for t in row if 0 < t < args.n_trials)
    return {**record, "inputs": inputs, **provenance(["numpy", "pandas", *([package] if package else [])])}


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    if args.harness == "wide" and args.responses_out:
        fail("--responses-out applies to harness logs; a wide table has no per-trial rows")
    # every output checked before what may be gigabytes of input is read; none may be an input
    companion = None
    if args.allow_missing:
        from benchmeasure.core.matrix_holes import trials_path

        companion = trials_path(args.output)
    plan_outputs(files=[args.output, f"{args.output}.json", args.responses_out, companion],
                 inputs=input_files(args.responses))
    rows = None
    if args.harness == "wide":
        from benchmeasure.core.wide import read_wide_matrix

        matrix = read_wide_matrix(args.responses[0], args.n_trials, args.items_as_rows, args.allow_missing)
        inputs = [{"path": args.responses[0], "sha256": sha256_file(args.responses[0])}]
    elif args.harness is not None:
        matrix, inputs, rows = matrix_from_logs(args)
    else:
        matrix = read_plain(args.responses[0], args.n_trials, args.allow_missing)
        inputs = [{"path": args.responses[0], "sha256": sha256_file(args.responses[0])}]
    with all_or_nothing():  # the matrix, its record and --responses-out: all or none
        if args.responses_out:
            write_responses(rows, args.responses_out)
        write_count_table(matrix, args.output)
        write_json(f"{args.output}.json", output_record(args, matrix, inputs))
    if not args.quiet:
        n_models, n_items = matrix.shape
        trials = getattr(matrix, "trials", None)
        if trials is None:
            print(f"wrote {args.output}: {n_models} models x {n_items} items, {args.n_trials} "
                  f"trial{'s' if args.n_trials != 1 else ''} each "
                  f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)
        else:
            flat = [t for row in (trials.tolist() if hasattr(trials, "tolist") else trials) for t in row]
            print(f"wrote {args.output} and {companion}: {n_models} models x {n_items} items, "
                  f"{flat.count(0)} absent cells ({flat.count(0) / len(flat):.2%})"
                  + (f", {sum(1 for t in flat if 0 < t < args.n_trials)} with fewer than {args.n_trials} trials"
                     if args.n_trials > 1 else "") + f"; "
                  f"per model and item in {args.output}.json ({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return 0

