"""Score new models against fixed item difficulties: each model's ability θ and predicted full-benchmark accuracy.

With every difficulty b held fixed the posterior of one model's θ is one-dimensional and is computed
exactly by quadrature (:mod:`benchmeasure.irt.anchored`, the paper's 1PL of Appendix C.3 with its N(0, 1)
prior). A model may have answered only some of the benchmark's items (anchors, e.g. from
``select_anchors.py``); the predicted accuracy on the whole benchmark adds the expected score on the rest. With
``--prior hierarchical`` θ ~ Normal(0, σ_θ), σ_θ from the hierarchical fit that gave the difficulties
(:mod:`benchmeasure.irt.fixed_prior`). Against a 2PL fit's items (a difficulty file with a slope column, ``a_mean``)
the same posterior has P(correct) = g + (1 − g)·σ(a(θ − b)) (:mod:`benchmeasure.irt.anchored_slopes`); which model
is the table's to say, and ``--model`` may only confirm it (:mod:`benchmeasure.irt.item_models`).
"""

from __future__ import annotations

import csv
import math
import sys
import time

import numpy as np

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import all_or_nothing, atomic_write, plan_outputs, provenance, write_json
from benchmeasure.base.options import N_TRIALS, add_allow_missing, add_hdi_prob, add_quiet, integer
from benchmeasure.core.fixed_scale_inputs import (
    absent_counts,
    benchmark_difficulties,
    cells_of,
    input_records,
    read_counts,
)
from benchmeasure.core.guessing import add_guessing_options, guessing_from_options
from benchmeasure.irt.item_models import AUTO
from benchmeasure.irt.item_models import choices as model_choices
from benchmeasure.irt.priors import add_option as add_prior_option

EXAMPLES = """\
examples:
  benchmeasure score new_models.csv --difficulty my_benchmark/difficulty.csv --n-trials 2 --output scores.csv
  benchmeasure score anchors_answered.csv --difficulty difficulty.csv --n-trials 1 --guessing 0.25 --output s.csv
  benchmeasure score model_a.csv model_b.csv --difficulty difficulty.csv --n-trials 1 --output s.csv  # own anchors
  benchmeasure score holes.csv --difficulty difficulty.csv --n-trials 4 --allow-missing --output s.csv  # blank = absent
  benchmeasure score responses.csv --difficulty difficulty.csv --n-trials 4 --output s.csv \\
      --difficulty-draws my_benchmark/posterior.zarr            # integrate over the difficulty posterior
  benchmeasure score anchors.csv --difficulty fit2pl/difficulty.csv --n-trials 1 --output s.csv \\
      --difficulty-draws fit2pl/posterior.zarr  # a 2PL fit's items (a_mean column): p = sigma(a(theta - b))
  benchmeasure score responses.csv --difficulty hier_fit/difficulty.csv --n-trials 4 --prior hierarchical \\
      --output s.csv                       # theta ~ Normal(0, sigma_theta) of hier_fit/diagnostics.json

input: a count matrix (model,<item>,…) or graded responses (model,item_id,trial,correct); its items must
all be in the difficulty file (model answered a subset → the rest is predicted).

output columns:
  model, theta_mean, theta_sd, theta_hdi_low, theta_hdi_high   posterior of θ (HDI of --hdi-prob)
  n_items_answered, accuracy_observed                         on the items the model answered
  accuracy_predicted_full, _low, _high                        accuracy over every item of the difficulty
      file: answered items as observed, the rest expected under θ's posterior; interval equal-tailed,
      with the trials' binomial noise on the unanswered items
"""

PACKAGES = ["numpy", "numba", "xarray", "zarr"]


def parse_args(argv):
    parser = command_parser("score_models.py", __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("responses", metavar="RESPONSES_OR_MATRIX", nargs="+",
                        help="count matrix CSV (model,<item>,…) or graded responses CSV (model,item_id,trial,correct); "
                             "several files when models answered different items (a model in one file only)")
    parser.add_argument("--difficulty", required=True, metavar="DIFFICULTY_CSV",
                        help="the benchmark's difficulties: columns item (or item_id) and b_mean, one row per item")
    parser.add_argument("--n-trials", type=N_TRIALS, required=True, metavar="K",
                        help="responses per model-item pair in the input (every count is in [0, K])")
    parser.add_argument("--output", required=True, metavar="CSV", help="where to write the scores (and CSV.json)")
    add_guessing_options(parser, "the difficulty file")
    parser.add_argument("--difficulty-draws", default=None, metavar="POSTERIOR",
                        help="posterior draws of b (the posterior.zarr of benchmeasure fit --save-posterior, .nc, .npz "
                             "or a CSV of draws): integrate over them instead of plugging in b_mean")
    parser.add_argument("--model", default=AUTO, choices=model_choices(),
                        help="the item-response model of the difficulty file: auto (default) reads it off the table "
                             "(a slope column a_mean: the 2PL of benchmeasure fit --model 2pl; none: the 1PL); 1pl or "
                             "2pl must name the table's model (a mixture is refused; docs/anchored.md)")
    parser.add_argument("--max-draws", type=integer(1, 100_000), default=200, metavar="S",
                        help="use S draws of --difficulty-draws, evenly spaced (default 200)")
    add_hdi_prob(parser, "mass of θ's HDI and of the accuracy interval (default 0.94)")
    add_prior_option(parser, "theta ~ Normal(0, sigma_theta), its posterior mean read from the diagnostics.json of the "
                     "fit folder that holds --difficulty (a fit under --prior hierarchical)")
    add_allow_missing(parser, "accept absent cells (a model scored on the items it answered) and K per cell "
                      "(blank cells and MATRIX.trials.csv, or long responses with fewer trials; docs/suites.md)")
    add_quiet(parser)
    return parser.parse_args(argv)


def unknown_items(path: str, items: list, known: list, where: str) -> None:
    """Fail naming the items of ``items`` that ``known`` lacks."""
    known_set = set(known)
    missing = [item for item in items if item not in known_set]
    if missing:
        shown = ", ".join(repr(item) for item in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        fail(f"{path}: {len(missing)} item(s) have no difficulty in {where}: {shown}{more}")


def _aligned(args, items: list, variable: str) -> np.ndarray:
    """Draws (S, N) of ``variable`` in the difficulty file's item order."""
    from benchmeasure.analyses.posterior_metrics import read_posterior_b

    draw_items, draws = read_posterior_b(args.difficulty_draws, variable)
    unknown_items(args.difficulty, items, draw_items, args.difficulty_draws)
    if draws.shape[0] < 1:
        fail(f"{args.difficulty_draws}: no draws")
    if not np.all(np.isfinite(draws)):
        fail(f"{args.difficulty_draws}: some {variable} draws are not finite numbers")
    position = {item: k for k, item in enumerate(draw_items)}
    return draws[:, [position[item] for item in items]]


def difficulty_draws(args, items: list, model) -> tuple:
    """(b draws, slope draws or None), each (S, N) in the difficulty file's item order, paired, thinned evenly to
    --max-draws; (None, None) without --difficulty-draws. A posterior of another model than the table's is refused."""
    if args.difficulty_draws is None:
        return None, None
    from benchmeasure.analyses.posterior_metrics import has_draws
    from benchmeasure.irt.item_models import ITEM_MODELS

    path = args.difficulty_draws
    if model.draws is not None and not has_draws(path, model.draws):
        fail(f"{path}: no {model.draws!r} draws, and {args.difficulty} is a {model.name} table: its items' slopes "
             f"vary with b from draw to draw, so give both: the posterior.zarr of benchmeasure fit --model "
             f"{model.name} --save-posterior, or an .npz with arrays b and {model.draws} (a CSV of draws holds b only)")
    for other in (ITEM_MODELS[name] for name in ITEM_MODELS):
        if other.draws is not None and other.draws != model.draws and has_draws(path, other.draws):
            fail(f"{path}: holds {other.draws!r} draws, the slopes of a {other.name} fit, but {args.difficulty} is a "
                 f"{model.name} table; give the draws of the fit that wrote it (a mixture is refused; "
                 "docs/anchored.md)")
    draws = _aligned(args, items, "b")
    slopes = None if model.draws is None else _aligned(args, items, model.draws)
    if slopes is not None:
        if slopes.shape != draws.shape:
            fail(f"{path}: {slopes.shape[0]} {model.draws} draws for {draws.shape[0]} b draws; they must pair up")
        bad = np.argwhere(~(slopes > 0))
        if bad.size:
            fail(f"{path}: draw {bad[0][0]} of {model.draws} for item {items[bad[0][1]]!r} is "
                 f"{slopes[tuple(bad[0])]:g}; a slope must be positive")
    keep = np.unique(np.linspace(0, draws.shape[0] - 1, min(args.max_draws, draws.shape[0])).round().astype(int))
    return draws[keep], None if slopes is None else slopes[keep]


def _model_record(item_model, prior, choice: str) -> dict:
    """The record's ``model`` (in words, as before the 2PL) and, under another model than the 1PL, which one."""
    if item_model.slope is None:
        return {"model": f"1PL, {describe_prior(prior)}, difficulties fixed"}
    return {"model": f"{item_model.name.upper()}, {describe_prior(prior)}, difficulties and slopes "
                     f"({item_model.slope}) fixed", "item_model": item_model.name, "item_model_option": choice}


def describe_prior(prior) -> str:
    from benchmeasure.irt.fixed_prior import describe

    return describe(prior, "model")


def _cell(value: float) -> str:
    return "" if not math.isfinite(value) else f"{value:.6g}"


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    inputs = [*args.responses, args.difficulty, args.guessing_csv, args.difficulty_draws]
    plan_outputs(files=[args.output, f"{args.output}.json"], inputs=inputs)
    from benchmeasure.irt.fixed_prior import describe, free_side_prior
    from benchmeasure.irt.item_models import FixedItems, chosen_model, read_slopes

    prior = free_side_prior(args.prior, "model", args.difficulty, "--difficulty")
    items, b = benchmark_difficulties(args.difficulty)
    item_model = chosen_model(args.model, args.difficulty)
    slopes = read_slopes(item_model, args.difficulty, items)
    position = {item: k for k, item in enumerate(items)}
    tasks, seen = [], {}  # (model, counts, answered item indices, trials) for every model of every input
    absent = {}
    for path in args.responses:
        matrix = read_counts(path, args.n_trials, args.allow_missing)
        unknown_items(path, matrix.items, items, args.difficulty)
        answered = np.asarray([position[item] for item in matrix.items], dtype=np.int64)
        for j, model in enumerate(matrix.models):
            if model in seen:
                fail(f"{path}: model {model!r} is also in {seen[model]}; give each model's answers in one file")
            seen[model] = path
            present, counts, trials = cells_of(matrix, j)
            tasks.append((model, counts, answered[present], trials))
        absent.update(absent_counts(matrix)["per_model"])
    guessing = np.asarray(guessing_from_options(args, items, "difficulty file"), dtype=float)
    draws, slope_draws = difficulty_draws(args, items, item_model)
    fixed = FixedItems(items, b, slopes, draws, slope_draws)

    from benchmeasure.irt.anchored import SCORE_COLUMNS

    say = (lambda message: None) if args.quiet else (lambda message: print(message, file=sys.stderr))
    say(f"scoring {len(tasks)} model(s) against {len(items)} items"
        + ("" if slopes is None else f" of the {item_model.name} (slopes {slopes.min():.3g} to {slopes.max():.3g})")
        + (f", integrating over {len(draws)} difficulty draws" if draws is not None else "")
        + ("" if prior is None else f", {describe(prior, 'model')}"))
    normal = None if prior is None else (prior["mean"], prior["sd"])
    scores = []
    for j, (model, counts, answered, trials) in enumerate(tasks):
        scores.append(item_model.score(counts, answered, fixed, args.n_trials, guessing, args.hdi_prob, model,
                                       trials=trials, prior=normal))
        say(f"  [{j + 1}/{len(tasks)}] {model}: {answered.size} items, theta {scores[-1].theta_mean:.3f} ± "
            f"{scores[-1].theta_sd:.3f}, predicted accuracy {scores[-1].accuracy_predicted_full:.4f}")
    record = {
        "output": args.output, "columns": SCORE_COLUMNS, "models": len(scores),
        "items_answered": {model: int(answered.size) for model, _, answered, _ in tasks},
        "absent_cells_per_model": absent,
        "items_in_benchmark": len(items),
        "settings": {"n_trials": args.n_trials, "guessing": args.guessing if args.guessing_csv is None else None,
                     "hdi_prob": args.hdi_prob, "difficulty_draws_used": None if draws is None else len(draws),
                     "max_draws": args.max_draws, **_model_record(item_model, prior, args.model),
                     "prior": args.prior, **({} if prior is None else {"prior_hyperparameters": prior})},
        "inputs": input_records(inputs),
        **provenance(PACKAGES),
        "wall_time_s": time.perf_counter() - start,
    }
    with all_or_nothing():
        with atomic_write(args.output) as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(SCORE_COLUMNS)
            for score in scores:
                writer.writerow([score.model, *(_cell(v) if isinstance(v, float) else v for v in score.row()[1:])])
        write_json(f"{args.output}.json", record)
    say(f"wrote {args.output} and {args.output}.json ({time.perf_counter() - start:.1f} s)")
    return 0
