"""Does the 1PL fit this benchmark? Item fit, model fit and whole-fit posterior predictive checks of a fit folder."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from benchmeasure.base.errors import command_parser
from benchmeasure.base.files import all_or_nothing, plan_outputs, result_json
from benchmeasure.base.options import N_TRIALS, integer, number

EXAMPLES = """\
examples:
  benchmeasure check-fit my_benchmark --output-dir my_benchmark/fit_check
  benchmeasure check-fit fits/mmlu_pro --output-dir checks/mmlu_pro --json
  benchmeasure check-fit fits/suite --matrix data/suite.csv --allow-missing --output-dir checks/suite --fdr 0.1

FIT_DIR is what benchmeasure fit wrote (difficulty.csv, ability.csv, diagnostics.json; posterior.zarr with
--save-posterior, used when present, else normal draws from the means and sds). The matrix is the one
diagnostics.json records, or --matrix (its SHA-256 must match). Writes DIR/items.csv, DIR/models.csv,
DIR/check_fit.json and DIR/item_fit.png; prints one summary line (or --json). Statistics: docs/model_fit.md.
benchmeasure fit already checks every fit on a few draws into FIT_DIR/check_fit/; --output-dir FIT_DIR/check_fit
replaces that check with this one (diagnose, summarize and explore read it there).
"""

OUTPUTS = ("items.csv", "models.csv", "check_fit.json", "item_fit.png")  # fit_check_outputs' CHECK_OUTPUTS + FIGURE


def parse_args(argv):
    parser = command_parser("check_fit.py",
                            "Check whether the 1PL fits a benchmark: posterior predictive item fit (response curve "
                            "by ability group, items whose success rises as ability falls, unsolvable items), model "
                            "fit (lz, slope on difficulty) and whole-fit checks, with false discovery rate control.",
                            EXAMPLES)
    parser.add_argument("fit_dir", metavar="FIT_DIR", help="a benchmeasure fit output folder")
    parser.add_argument("--output-dir", required=True, metavar="DIR", help="folder for items.csv, models.csv, "
                        "check_fit.json and item_fit.png")
    parser.add_argument("--matrix", metavar="PATH", help="the fitted count matrix (default: the path diagnostics.json "
                        "records); its SHA-256 must be the recorded one")
    parser.add_argument("--n-trials", type=N_TRIALS, metavar="K", help="trials per cell (default: the fit's)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="read absent cells and K per cell (MATRIX.trials.csv); implied when the fit used it")
    parser.add_argument("--fdr", type=number(0.0, 1.0, open_low=True, open_high=True), default=0.05, metavar="Q",
                        help="false discovery rate of the item and model flags (Benjamini–Hochberg; default 0.05)")
    parser.add_argument("--draws", type=integer(1, 100_000), default=200, metavar="N",
                        help="posterior draws the statistics average over (default 200)")
    parser.add_argument("--groups", type=integer(2, 100), default=None, metavar="G",
                        help="ability groups of the item curves (default: about 3 models a group, 2 to 6)")
    parser.add_argument("--seed", type=integer(0, 2**32 - 1), default=0, metavar="N",
                        help="seed of the normal draws and the replicated data (default 0)")
    parser.add_argument("--json", action="store_true", help="print everything as one JSON object")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    folder = args.fit_dir
    fit_files = [os.path.join(folder, name) for name in ("difficulty.csv", "ability.csv", "diagnostics.json")]
    plan_outputs(inputs=[folder, *fit_files, args.matrix], folders=[(args.output_dir, OUTPUTS)])
    from benchmeasure.base.errors import fail

    out = Path(args.output_dir)
    if os.path.realpath(out) == os.path.realpath(folder):
        fail(f"--output-dir {args.output_dir}: is the fit folder; choose another folder for the check")
    from benchmeasure.analyses.fit_inputs import read_fit_inputs
    from benchmeasure.analyses.model_fit import run_check
    from benchmeasure.irt.fit_folder import read_fit_folder

    fit = read_fit_folder(folder, f"FIT_DIR {folder}")
    inputs = read_fit_inputs(folder, fit.diagnostics, fit.posterior, matrix=args.matrix, n_trials=args.n_trials,
                             allow_missing=args.allow_missing)
    start = time.perf_counter()
    shown = [0.0]

    def on_batch(done, total):   # a progress line on stderr at most every 2 s
        now = time.perf_counter()
        if now - shown[0] >= 2.0 or done >= total:
            shown[0] = now
            print(f"check-fit: posterior draws {done:,} of {total:,}, elapsed {now - start:.1f} s", file=sys.stderr,
                  flush=True)

    check = run_check(inputs, draws=args.draws, groups=args.groups, fdr=args.fdr, seed=args.seed,
                      on_batch=None if args.json else on_batch)
    seconds = time.perf_counter() - start
    from benchmeasure.analyses.fit_check_outputs import check_record, write_check
    from benchmeasure.base.files import sha256_file

    record = check_record(check, inputs, fit_dir=folder, difficulty=os.path.join(folder, "difficulty.csv"),
                          matrix_sha256=sha256_file(inputs.matrix_path), posterior_used=fit.posterior is not None,
                          seconds=seconds)
    with all_or_nothing():
        write_check(out, check, record, inputs)
    if args.json:
        print(result_json(record))
    else:
        print(check.summary())
        print(f"draws: {check.settings['draws']} ({inputs.draws_note}); outputs in {out}", file=sys.stderr)
    return 0
