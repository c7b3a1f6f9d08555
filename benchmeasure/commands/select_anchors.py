"""Choose k anchor items from a calibrated benchmark, to evaluate future models cheaply.

A new model answers only the anchors; ``score_models.py`` then places it on the benchmark's scale and
predicts its accuracy on every item. Strategies (:mod:`benchmeasure.analyses.anchors`): ``stratified`` (one item
drawn from each of k equal-size difficulty strata), ``information`` (greedy, maximizing the expected log
posterior precision of θ), ``random``. Every strategy is seeded. With ``--check-fit`` the items that
``check-fit`` flags (or finds running against ability) are left out of the candidates, unless ``--keep-misfits``:
an anchor that misfits the 1PL would misplace every model scored on it.
"""

from __future__ import annotations

import csv
import sys
import time

import numpy as np

from benchmeasure.analyses.anchors import STRATEGIES
from benchmeasure.base.errors import command_parser
from benchmeasure.base.files import all_or_nothing, atomic_write, plan_outputs, provenance, write_json
from benchmeasure.base.options import N_TRIALS, SEED, add_entry_options, add_quiet, entry_options, integer
from benchmeasure.core.fixed_scale_inputs import benchmark_difficulties, input_records
from benchmeasure.core.guessing import add_guessing_options, guessing_from_options

EXAMPLES = """\
examples:
  benchmeasure select-anchors my_benchmark/difficulty.csv --k 100 --strategy stratified --seed 1 --output anchors.csv
  benchmeasure select-anchors difficulty.csv --k 50 --strategy information --abilities ability.csv --output a.csv
  benchmeasure select-anchors fit/difficulty.csv --k 100 --check-fit fit_check --output anchors.csv

output: anchors.csv with columns item,b_mean (a difficulty file of the k anchors, easiest first);
  anchors.csv.json records the strategy, seed, inputs and their SHA-256, and the items --check-fit left out.
--check-fit DIR: benchmeasure check-fit's output folder (or its items.csv) for the same fit: its flagged items
  (flagged or against_ability) are not anchor candidates; --keep-misfits keeps them.
then: have the new model answer the anchors, and
  benchmeasure score answers.csv --difficulty my_benchmark/difficulty.csv --n-trials K --output scores.csv
"""


def parse_args(argv):
    parser = command_parser("select_anchors.py", __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("difficulty", metavar="DIFFICULTY_CSV",
                        help="the benchmark's difficulties: columns item (or item_id) and b_mean")
    parser.add_argument("--k", type=integer(1, 10_000_000), required=True, help="number of anchor items")
    parser.add_argument("--strategy", choices=STRATEGIES, default="stratified",
                        help="how to choose (default stratified)")
    parser.add_argument("--seed", type=SEED, default=0, metavar="S",
                        help="random seed (default 0; the same seed gives the same anchors)")
    parser.add_argument("--output", required=True, metavar="CSV", help="where to write the anchors (and CSV.json)")
    parser.add_argument("--abilities", default=None, metavar="ABILITY_CSV",
                        help="information: design for these models' abilities (theta_mean) instead of N(0, 1)")
    add_guessing_options(parser, "the difficulty file (information only)")
    parser.add_argument("--n-trials", type=N_TRIALS, default=1, metavar="K",
                        help="information: trials per item the new models will run (default 1)")
    parser.add_argument("--check-fit", metavar="PATH",
                        help="a check-fit output folder (or its items.csv) of this benchmark's fit: the items it "
                             "flags are left out of the anchor candidates")
    parser.add_argument("--keep-misfits", action="store_true",
                        help="with --check-fit: keep the flagged items among the candidates (recorded)")
    add_quiet(parser, "no summary line")
    add_entry_options(parser, "strategy")
    args = parser.parse_args(argv)
    args.strategy_options = entry_options(args.option, STRATEGIES[args.strategy].options,
                                          f"the {args.strategy} anchor strategy")
    if args.keep_misfits and args.check_fit is None:
        parser.error("--keep-misfits needs --check-fit PATH (the check whose flags it keeps)")
    return args


def misfit_exclusion(args, items: list) -> tuple[list, dict | None]:
    """The items ``--check-fit`` leaves out of the candidates (none with ``--keep-misfits``) and the record of it."""
    if args.check_fit is None:
        return [], None
    from benchmeasure.analyses.fit_flags import check_matches, fit_matrix_sha256, read_check_fit

    flags = read_check_fit(args.check_fit)
    sha, record = fit_matrix_sha256(args.difficulty)
    check_matches(flags, items, f"the difficulty file {args.difficulty}", sha, record)
    misfits = flags.misfits()
    left_out = [] if args.keep_misfits else misfits
    note = {**flags.provenance(), "misfits": len(misfits), "against_ability": len(flags.against()),
            "kept_misfits": bool(args.keep_misfits), "excluded": left_out,
            "rule": "an item is left out when check-fit flagged it (q-value <= its FDR) or found its success "
                    "rising as ability falls (against_ability)"}
    return left_out, note


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    inputs = [args.difficulty, args.abilities, args.guessing_csv]
    check_files = []
    if args.check_fit is not None:   # the check's own files, so that no output may replace one of them
        from benchmeasure.analyses.fit_flags import check_paths

        check_files = [path for path in check_paths(args.check_fit) if path is not None]
    plan_outputs(files=[args.output, f"{args.output}.json"], inputs=inputs + check_files)
    items, b = benchmark_difficulties(args.difficulty)
    left_out, check = misfit_exclusion(args, items)
    abilities = None
    if args.abilities is not None:
        from benchmeasure.core.ability_file import read_ability_table

        abilities = np.asarray(list(read_ability_table(args.abilities).values()), dtype=float)
    guessing = np.asarray(guessing_from_options(args, items, "difficulty file"), dtype=float)

    from benchmeasure.analyses.anchors import select_anchors
    from benchmeasure.base.errors import fail

    excluded = set(left_out)
    candidates = np.asarray([i for i, item in enumerate(items) if item not in excluded], dtype=np.int64)
    if excluded and args.k > candidates.size:   # without a check, select_anchors names the plain range of --k
        fail(f"--k {args.k} is more than the {candidates.size} items left after leaving out the {len(excluded)} that "
             f"--check-fit {args.check_fit} flags; lower --k, or keep them with --keep-misfits")
    if guessing.ndim:
        guessing = guessing[candidates]
    chosen = candidates[select_anchors(b[candidates], args.k, args.strategy, args.seed, guessing=guessing,
                                       abilities=abilities, n_trials=args.n_trials,
                                       options=args.strategy_options)]
    record = {
        "output": args.output, "k": args.k, "items_in_benchmark": len(items),
        "settings": {"strategy": args.strategy, "seed": args.seed, "n_trials": args.n_trials,
                     "guessing": args.guessing if args.guessing_csv is None else None,
                     "design_abilities": None if abilities is None else len(abilities),
                     **({"options": args.strategy_options} if args.strategy_options else {})},
        "anchor_b_range": [float(b[chosen].min()), float(b[chosen].max())],
        **({"check_fit": check} if check is not None else {}),
        "inputs": input_records(inputs), **provenance(["numpy"]),
        "wall_time_s": time.perf_counter() - start,
    }
    with all_or_nothing():
        with atomic_write(args.output) as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["item", "b_mean"])
            writer.writerows([items[i], f"{b[i]:.8g}"] for i in chosen)
        write_json(f"{args.output}.json", record)
    if not args.quiet:
        print(f"wrote {args.output}: {args.k} of {len(items)} items ({args.strategy}, seed {args.seed}), "
              f"b from {b[chosen].min():.3f} to {b[chosen].max():.3f}", file=sys.stderr)
        if check is not None:
            print(_check_line(check, args.check_fit), file=sys.stderr)
    return 0


def _check_line(check: dict, path: str) -> str:
    fdr = "" if check["fdr"] is None else f" at FDR {check['fdr']:g}"
    what = (f"{check['misfits']} item(s) that check-fit {path} flags{fdr} ({check['against_ability']} run against "
            "ability)")
    if check["kept_misfits"]:
        return f"kept the {what} among the candidates (--keep-misfits)"
    return f"left out {what} from the anchor candidates (--keep-misfits keeps them)"
