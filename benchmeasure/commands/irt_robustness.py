"""IRT robustness analyses of a response matrix (paper Tables 6-10): diagnostics, leave-one-out, BIC, MIRT."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import all_or_nothing, atomic_write, plan_outputs, provenance, sha256_file, write_json
from benchmeasure.base.options import CHAINS, DRAWS, GUESSING, N_TRIALS, OPEN_PROBABILITY, SEED, TUNE, integer
from benchmeasure.core.fixed_scale_inputs import absent_counts
from benchmeasure.core.guessing import read_guessing_csv
from benchmeasure.core.matrix import read_matrix

EXAMPLES = """\
examples:
  benchmeasure robustness AIME24/response_matrix.csv --n-trials 32 --output-dir results/robustness/AIME24
  benchmeasure robustness m.csv --n-trials 8 --output-dir out --loo --bic --mirt 2 3
  benchmeasure robustness m.csv --n-trials 8 --output-dir out --loo --workers 2 --draws 500 --tune 500
  benchmeasure fit m.csv --n-trials 8 --output-dir fit --save-posterior
  benchmeasure robustness m.csv --n-trials 8 --output-dir out --fit-dir fit --loo --bic
  benchmeasure robustness holes.csv --n-trials 8 --output-dir out --allow-missing --loo   # blank cells = absent

writes OUTPUT_DIR/robustness.json (all figures, settings, input sha256, package versions),
OUTPUT_DIR/robustness.md (the tables in the paper's layout) and, with --loo, loo.csv.
Table 6: without --fit-dir the 1PL is fitted here; with --fit-dir DIR (fit_irt.py's output
folder for this MATRIX, same --n-trials and guessing, checked) its diagnostics.json is
used, its difficulty.csv is the full fit of Table 7 and its posterior.zarr (--save-posterior)
gives the 1PL draws of Table 8; the 1PL is refitted only for --bic when no posterior was saved.
--loo: Table 7 (M refits in parallel processes).
--bic: Tables 8 and 9 (2PL fit; BIC from the binomial log-likelihood with log C(K, Y),
maximum over posterior draws, n = M*N cells). --mirt D ...: Table 10.
--guessing-csv: per-item guessing (item_id,guessing), read and checked as benchmeasure fit does.
benchmeasure reproduce reads results/robustness/<benchmark>/robustness.json.
"""


def parse_args(argv):
    parser = command_parser("irt_robustness.py",
                            "Check how robust the 1PL difficulty estimates are (paper Appendix Tables 6-10).", EXAMPLES)
    parser.add_argument("matrix", metavar="MATRIX", help="count matrix CSV (model,<item>,…)")
    parser.add_argument("--n-trials", type=N_TRIALS, required=True, metavar="K")
    parser.add_argument("--output-dir", required=True, metavar="DIR")
    parser.add_argument("--loo", action="store_true", help="leave-one-model-out refits (Table 7)")
    parser.add_argument("--bic", action="store_true", help="2PL fit and BIC comparison (Tables 8, 9)")
    parser.add_argument("--mirt", type=integer(2, 20), nargs="+", default=[], metavar="D",
                        help="MIRT dimensions (Table 10)")
    parser.add_argument("--guessing", type=GUESSING, default=None, help="lower asymptote g for every item (default 0)")
    parser.add_argument("--guessing-csv", metavar="CSV",
                        help="per-item guessing: columns item_id,guessing, one row per matrix item "
                             "(as benchmeasure fit)")
    parser.add_argument("--fit-dir", metavar="DIR",
                        help="benchmeasure fit's output folder of this matrix: Table 6 from its diagnostics.json, "
                             "no refit")
    parser.add_argument("--chains", type=CHAINS, default=4)
    parser.add_argument("--tune", type=TUNE, default=1000)
    parser.add_argument("--draws", type=DRAWS, default=1000)
    parser.add_argument("--target-accept", type=OPEN_PROBABILITY, default=0.95)
    parser.add_argument("--seed", type=SEED, default=0)
    parser.add_argument("--workers", type=integer(1, 256), default=None,
                        help="processes for the leave-one-out refits (default: one per CPU)")
    parser.add_argument("--name", help="benchmark name in the tables (default: the matrix's folder)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="accept absent cells (blank) and K per cell (MATRIX.trials.csv): every fit uses the "
                             "masked likelihood, the BIC counts present cells (docs/suites.md)")
    return parser.parse_args(argv)


OUTPUTS = ("robustness.json", "robustness.md", "loo.csv")


def main(argv=None) -> int:
    args = parse_args(argv)
    plan_outputs(inputs=[args.matrix, args.guessing_csv], folders=[(args.output_dir, OUTPUTS)])
    if any(d < 2 for d in args.mirt):
        fail(f"--mirt dimensions must be at least 2, got {args.mirt}")
    if args.workers is not None and args.workers < 1:
        fail(f"--workers must be at least 1, got {args.workers}")
    if args.guessing is not None and args.guessing_csv is not None:
        fail("give --guessing or --guessing-csv, not both")
    if args.guessing is not None and not 0 <= args.guessing < 1:
        fail(f"--guessing must be in [0, 1), got {args.guessing}")
    for name in ("chains", "draws"):
        if getattr(args, name) < 1:
            fail(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.tune < 0:
        fail(f"--tune must be at least 0, got {args.tune}")
    if not 0 < args.target_accept < 1:
        fail(f"--target-accept must lie in (0, 1), got {args.target_accept}")
    if args.allow_missing:
        from benchmeasure.core.matrix import read_matrix_allowing_holes

        matrix = read_matrix_allowing_holes(args.matrix, args.n_trials)
    else:
        matrix = read_matrix(args.matrix, args.n_trials)
    if args.loo and len(matrix.models) < 3:
        fail(f"{args.matrix}: leave-one-model-out needs at least 3 models, found {len(matrix.models)}")
    if args.guessing_csv is not None:
        guessing = read_guessing_csv(args.guessing_csv, matrix.items)
    else:
        guessing = 0.0 if args.guessing is None else args.guessing
    from benchmeasure.analyses.checks_holes import warn_if_failing
    from benchmeasure.analyses.robustness import markdown, read_fit_dir, run_robustness

    saved = None
    if args.fit_dir is not None:
        saved = read_fit_dir(args.fit_dir, args.matrix, matrix, guessing, args.guessing_csv)
    warn_if_failing(matrix)
    record = run_robustness(matrix, guessing=guessing, chains=args.chains, tune=args.tune, draws=args.draws,
                            target_accept=args.target_accept, seed=args.seed, loo=args.loo, with_bic=args.bic,
                            mirt_dims=tuple(args.mirt), workers=args.workers, saved=saved,
                            log=lambda message: print(f"[robustness] {message}", file=sys.stderr))
    name = args.name or Path(args.matrix).resolve().parent.name
    record.update({"benchmark": name, "input": args.matrix, "input_sha256": sha256_file(args.matrix),
                   "n_trials": args.n_trials, "models": len(matrix.models), "items": len(matrix.items),
                   "absent_cells": absent_counts(matrix),
                   **provenance(["numpy", "scipy", "pymc", "pytensor", "nutpie", "arviz"])})
    out = Path(args.output_dir)
    text = markdown(record, name)
    with all_or_nothing():
        write_json(out / "robustness.json", record, default=float)
        with atomic_write(out / "robustness.md") as handle:
            handle.write(text)
        if "leave_one_model_out" in record:
            loo = record["leave_one_model_out"]
            with atomic_write(out / "loo.csv") as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(["dropped_model", "pearson", "spearman"])
                writer.writerows(zip(loo["dropped_models"], map(repr, loo["pearson"]), map(repr, loo["spearman"])))
    print(text)
    return 0

