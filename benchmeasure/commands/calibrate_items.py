"""Calibrate new items against fixed model abilities: each item's difficulty b on the existing scale.

With every ability θ held fixed the posterior of one item's b is one-dimensional and is computed exactly
by quadrature — BenchFill's online calibration (paper Section 4), the same function
(:func:`benchmeasure.irt.anchored.difficulty_posterior`), with the paper's 1PL and N(0, 1) prior; with
``--prior hierarchical``, b ~ Normal(μ_b, σ_b) with μ_b and σ_b from the hierarchical fit that gave the abilities
(:mod:`benchmeasure.irt.fixed_prior`). Against a 2PL fit's abilities (``fit --model 2pl``) each item's b and slope a
have a two-dimensional posterior, computed on a grid (:func:`benchmeasure.irt.anchored_slopes.calibrate_item`), and
the output gains ``a_mean, a_sd``: a 2PL difficulty file (:mod:`benchmeasure.irt.item_models`).
"""

from __future__ import annotations

import csv
import math
import sys
import time

import numpy as np

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import all_or_nothing, atomic_write, plan_outputs, provenance, write_json
from benchmeasure.base.options import N_TRIALS, add_allow_missing, add_hdi_prob, add_quiet
from benchmeasure.core.fixed_scale_inputs import absent_counts, input_records, read_counts
from benchmeasure.core.guessing import add_guessing_options, guessing_from_options
from benchmeasure.irt.item_models import AUTO
from benchmeasure.irt.item_models import choices as model_choices
from benchmeasure.irt.priors import add_option as add_prior_option

EXAMPLES = """\
examples:
  benchmeasure calibrate new_items_matrix.csv --abilities my_benchmark/ability.csv --n-trials 4 \\
      --output new_difficulty.csv
  benchmeasure calibrate new.csv --abilities ability.csv --n-trials 4 --guessing 0.25 \\
      --reference-difficulty my_benchmark/difficulty.csv --output new_difficulty.csv
  benchmeasure calibrate holes.csv --abilities ability.csv --n-trials 4 --allow-missing --output new_difficulty.csv
  benchmeasure calibrate new.csv --abilities fit2pl/ability.csv --n-trials 1 --output new_difficulty.csv
      # abilities of a 2PL fit (its diagnostics.json says so): each item's b and slope a; adds a_mean, a_sd
  benchmeasure calibrate new.csv --abilities hier_fit/ability.csv --n-trials 4 --prior hierarchical \\
      --output new_difficulty.csv      # b ~ Normal(mu_b, sigma_b) of hier_fit/diagnostics.json

input: a count matrix (model,<item>,…) or graded responses (model,item_id,trial,correct) of the new
items; every model in it needs an ability in --abilities (models there but not here are unused).

output columns: item, b_mean, b_sd, b_hdi_low, b_hdi_high (HDI of --hdi-prob), z (and a_mean, a_sd under the 2PL)
  z = (b_mean - min b) / (max b - min b) on --reference-difficulty's scale (empty without it);
  the file is a difficulty file: benchmeasure score, benchmeasure diagnose read it
"""


def parse_args(argv):
    parser = command_parser("calibrate_items.py", __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("responses", metavar="MATRIX",
                        help="count matrix CSV (model,<item>,…) or graded responses CSV (model,item_id,trial,correct)")
    parser.add_argument("--abilities", required=True, metavar="ABILITY_CSV",
                        help="fixed abilities: columns model and theta_mean (the output of benchmeasure fit or "
                             "benchmeasure score)")
    parser.add_argument("--n-trials", type=N_TRIALS, required=True, metavar="K",
                        help="responses per model-item pair (every count is in [0, K])")
    parser.add_argument("--output", required=True, metavar="CSV", help="where to write the difficulties (and CSV.json)")
    add_guessing_options(parser, "the matrix")
    parser.add_argument("--reference-difficulty", default=None, metavar="DIFFICULTY_CSV",
                        help="a benchmark's difficulty file: z is on its min-max scale (paper Section 4)")
    add_hdi_prob(parser, "mass of b's highest-density interval (default 0.94)")
    add_prior_option(parser, "b ~ Normal(mu_b, sigma_b), their posterior means read from the diagnostics.json of the "
                     "fit folder that holds --abilities (a fit under --prior hierarchical)")
    parser.add_argument("--model", default=AUTO, choices=model_choices(),
                        help="the item-response model of the fit that gave the abilities: auto (default) reads it "
                             "from --abilities' record (ABILITY_CSV.json of benchmeasure score, else the "
                             "diagnostics.json beside it); 1pl or 2pl must agree with a record (docs/anchored.md)")
    add_allow_missing(parser, "accept absent cells (an item calibrated on the models that answered it) and K per "
                      "cell (blank cells and MATRIX.trials.csv, or long responses; docs/suites.md)")
    add_quiet(parser)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    inputs = [args.responses, args.abilities, args.guessing_csv, args.reference_difficulty]
    plan_outputs(files=[args.output, f"{args.output}.json"], inputs=inputs)
    from benchmeasure.core.ability_file import read_ability_table
    from benchmeasure.irt.fixed_prior import describe, free_side_prior
    from benchmeasure.irt.item_models import ability_model

    prior = free_side_prior(args.prior, "item", args.abilities, "--abilities")
    abilities = read_ability_table(args.abilities)
    item_model = ability_model(args.model, args.abilities)
    reference = None
    if args.reference_difficulty is not None:
        from benchmeasure.core.difficulty_file import read_difficulty_column

        values = read_difficulty_column(args.reference_difficulty, "b_mean").values
        reference = (min(values), max(values))
        if reference[1] <= reference[0]:
            fail(f"{args.reference_difficulty}: every b_mean is {reference[0]}; a min-max scale needs a spread")
    matrix = read_counts(args.responses, args.n_trials, args.allow_missing)
    if matrix.trials is not None:
        empty = [item for item, t in zip(matrix.items, matrix.trials.sum(axis=0)) if t == 0]
        if empty:
            fail(f"{args.responses}: item {empty[0]!r} has no answers (every cell blank); nothing calibrates it "
                 "(remove it from the matrix)")
    missing = [model for model in matrix.models if model not in abilities]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        fail(f"{args.responses}: model {missing[0]!r}{more} has no ability in {args.abilities}")
    guessing = np.asarray(guessing_from_options(args, matrix.items, "matrix"), dtype=float)

    from benchmeasure.irt.anchored import CALIBRATION_COLUMNS

    theta = np.asarray([abilities[model] for model in matrix.models], dtype=float)
    say = (lambda message: None) if args.quiet else (lambda message: print(message, file=sys.stderr))
    say(f"calibrating {len(matrix.items)} item(s) against the fixed abilities of {len(matrix.models)} model(s)"
        + ("" if not item_model.columns else f" under the {item_model.name}")
        + ("" if prior is None else f", {describe(prior, 'item')}"))
    normal = None if prior is None else (prior["mean"], prior["sd"])
    trials = matrix.trials
    rows = [item_model.calibrate(matrix.counts[:, i], theta, args.n_trials, float(guessing[i]), reference,
                                 args.hdi_prob, item, trials=None if trials is None else trials[:, i], prior=normal)
            for i, item in enumerate(matrix.items)]
    columns = [*CALIBRATION_COLUMNS, *item_model.columns]
    record = {
        "output": args.output, "columns": columns, "items": len(rows), "models": len(matrix.models),
        "unused_abilities": [model for model in abilities if model not in set(matrix.models)],
        "absent_cells": absent_counts(matrix),
        "settings": {"n_trials": args.n_trials, "guessing": args.guessing if args.guessing_csv is None else None,
                     "hdi_prob": args.hdi_prob, "reference_min_max": list(reference) if reference else None,
                     **({"model": f"1PL, {describe(prior, 'item')}, abilities fixed at theta_mean"}
                        if not item_model.columns else
                        {"model": f"{item_model.name.upper()}, {describe(prior, 'item')}, log a ~ Normal(0, 0.5), "
                                  "abilities fixed at theta_mean", "item_model": item_model.name}),
                     "prior": args.prior, **({} if prior is None else {"prior_hyperparameters": prior})},
        "inputs": input_records(inputs), **provenance(["numpy", "numba"]), "wall_time_s": time.perf_counter() - start,
    }
    with all_or_nothing():
        with atomic_write(args.output) as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(columns)
            for row, extra in rows:
                writer.writerow([row.item, *("" if not math.isfinite(v) else f"{v:.6g}" for v in
                                             [*row.row()[1:], *extra])])
        write_json(f"{args.output}.json", record)
    say(f"wrote {args.output} and {args.output}.json ({time.perf_counter() - start:.1f} s)")
    return 0
