"""Choose k anchor items from a calibrated benchmark, to evaluate future models cheaply.

A new model answers only the anchors; ``score_models.py`` then places it on the benchmark's scale and
predicts its accuracy on every item. Strategies (:mod:`benchmeasure.analyses.anchors`): ``stratified`` (one item
drawn from each of k equal-size difficulty strata), ``information`` (greedy, maximizing the expected log
posterior precision of θ), ``random``. Every strategy is seeded.
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

output: anchors.csv with columns item,b_mean (a difficulty file of the k anchors, easiest first);
  anchors.csv.json records the strategy, seed, inputs and their SHA-256.
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
    add_quiet(parser, "no summary line")
    add_entry_options(parser, "strategy")
    args = parser.parse_args(argv)
    args.strategy_options = entry_options(args.option, STRATEGIES[args.strategy].options,
                                          f"the {args.strategy} anchor strategy")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    inputs = [args.difficulty, args.abilities, args.guessing_csv]
    plan_outputs(files=[args.output, f"{args.output}.json"], inputs=inputs)
    items, b = benchmark_difficulties(args.difficulty)
    abilities = None
    if args.abilities is not None:
        from benchmeasure.core.ability_file import read_ability_table

        abilities = np.asarray(list(read_ability_table(args.abilities).values()), dtype=float)
    guessing = np.asarray(guessing_from_options(args, items, "difficulty file"), dtype=float)

    from benchmeasure.analyses.anchors import select_anchors

    chosen = select_anchors(b, args.k, args.strategy, args.seed, guessing=guessing, abilities=abilities,
                            n_trials=args.n_trials, options=args.strategy_options)
    record = {
        "output": args.output, "k": args.k, "items_in_benchmark": len(items),
        "settings": {"strategy": args.strategy, "seed": args.seed, "n_trials": args.n_trials,
                     "guessing": args.guessing if args.guessing_csv is None else None,
                     "design_abilities": None if abilities is None else len(abilities),
                     **({"options": args.strategy_options} if args.strategy_options else {})},
        "anchor_b_range": [float(b[chosen].min()), float(b[chosen].max())],
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
    return 0
