"""Fit the Bayesian 1PL IRT model (paper, Appendix C.3) to a count matrix.

Run with the .venv-irt interpreter (Python >= 3.12, requirements_irt.txt):

    .venv-irt/bin/python scripts/fit_irt.py my_benchmark/response_matrix.csv --n-trials 2 --output-dir my_benchmark

Writes difficulty.csv, ability.csv and diagnostics.json (and, with --save-posterior,
posterior.zarr) into --output-dir. Every input is checked before fitting; a bad one is
reported in one line with exit status 2 and nothing is written.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import numpy as np

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import plan_outputs
from benchmeasure.base.lifetime import exit_with_parent
from benchmeasure.base.options import CHAINS, DRAWS, GUESSING, N_TRIALS, OPEN_PROBABILITY, SECONDS, SEED, TUNE
from benchmeasure.core.guessing import read_guessing_csv
from benchmeasure.core.matrix import read_matrix
from benchmeasure.irt.fit_folder import POSTERIOR_NAME
from benchmeasure.irt.observation import OBSERVATIONS
from benchmeasure.irt.plan import (
    FIELDS,
    PAPER_DEFAULTS,
    FitSettings,
    SettingsError,
    method_choices,
    model_choices,
    route_choices,
    sampler_choices,
)
from benchmeasure.irt.priors import PRIORS

EXAMPLES = """\
examples:
  benchmeasure fit my_benchmark/response_matrix.csv --n-trials 2 --output-dir my_benchmark
  benchmeasure fit matrix.csv --n-trials 8 --output-dir out --guessing 0.25          # four-choice items
  benchmeasure fit matrix.csv --n-trials 8 --output-dir out --guessing-csv guessing.csv
  benchmeasure fit matrix.csv --n-trials 8 --output-dir out --method map   # marginal posterior mode, in seconds
  benchmeasure fit suite.csv --n-trials 1 --allow-missing --route gibbs --output-dir out   # sparse suites

model (paper, Appendix C.3):
  P(correct) = g + (1 - g) * sigmoid(theta_j - b_i);  Y_ij ~ Binomial(n_trials, P)
  theta_j ~ Normal(0, 1), b_i ~ Normal(0, 1);  g = 0 unless --guessing / --guessing-csv
  --observation beta-binomial: Y_ij ~ BetaBinomial(n_trials, P c, (1 - P) c), c = (1 - rho)/rho, rho ~ Beta(1, 1)
  --model 2pl: P(correct) = g + (1 - g) * sigmoid(a_i (theta_j - b_i)), a_i ~ LogNormal(0, 0.5) (docs/irt.md)
  --prior hierarchical: theta_j ~ Normal(0, sigma_theta), b_i ~ Normal(mu_b, sigma_b);
      sigma_theta, sigma_b ~ HalfNormal(3), mu_b ~ Normal(0, 3) (joint route)
"""


#: the library names fit settings by field; here they are the flags that set them
FLAGS = {field: "--" + field.replace("_", "-") for field in FIELDS}

def _default(name: str) -> str:
    """A NUTS setting's default as --help words it: the paper's, and the 2pl route's own where it differs."""
    from benchmeasure.irt.routes import ROUTES

    own = ROUTES["2pl"].defaults.get(name)
    return f"{PAPER_DEFAULTS[name]}" + ("" if own is None else f"; {own} with --model 2pl: docs/irt.md")


def parse_args(argv):
    parser = command_parser("fit_irt.py",
                            "Fit item difficulties and model abilities jointly (Bayesian 1PL, NUTS) from a count "
                            "matrix.", EXAMPLES)
    parser.add_argument("matrix", help="count matrix CSV: header 'model,<item>,...', one row per model")
    parser.add_argument("--n-trials", type=N_TRIALS, required=True, metavar="K",
                        help="responses collected per model-item pair (every cell is in [0, K])")
    parser.add_argument("--output-dir", required=True, metavar="DIR",
                        help="folder for difficulty.csv, ability.csv, diagnostics.json (created if missing)")
    guess = parser.add_mutually_exclusive_group()
    guess.add_argument("--guessing", type=GUESSING, default=None, metavar="G",
                       help="one guessing floor g in [0, 1) for every item (e.g. 0.25 for four choices; default 0)")
    guess.add_argument("--guessing-csv", default=None, metavar="CSV",
                       help="per-item guessing: columns item_id,guessing, exactly one row per matrix item")
    parser.add_argument("--chains", type=CHAINS, default=4,
                        help="NUTS chains, at least 2: R-hat compares chains (default 4)")
    parser.add_argument("--tune", type=TUNE, default=None,
                        help=f"warm-up iterations per chain (default {_default('tune')}); burn-in sweeps on "
                             "--route gibbs")
    parser.add_argument("--draws", type=DRAWS, default=None,
                        help=f"posterior draws per chain, at least 4 (default {_default('draws')})")
    parser.add_argument("--target-accept", type=OPEN_PROBABILITY, default=None, metavar="P",
                        help=f"NUTS target acceptance rate in (0, 1) (default {_default('target_accept')}; unused "
                             "on --route gibbs)")
    parser.add_argument("--seed", type=SEED, default=None, metavar="N",
                        help="random seed; the same seed and inputs give identical outputs (default: drawn, recorded)")
    parser.add_argument("--sampler", default="nutpie", choices=sampler_choices(),
                        help="NUTS implementation (default nutpie; pymc is PyMC's own NUTS; numpyro needs jax)")
    parser.add_argument("--route", default="auto", choices=route_choices(),
                        help="how NUTS explores the same posterior: collapsed = NUTS on the abilities with every "
                             "difficulty integrated out by quadrature, then each difficulty drawn exactly given each "
                             "draw (fast for many items); joint = NUTS on abilities and difficulties together; "
                             "gibbs = blocked Gibbs on abilities and difficulties with exact conditional updates and "
                             "a shift move (matrices with many holes; --tune is its burn-in sweeps); "
                             "auto (default) = collapsed, gibbs with --allow-missing when the holes leave the "
                             "collapsed route few shared integrals (docs/suites.md), joint with --sampler numpyro or "
                             "--fixed-difficulties")
    parser.add_argument("--method", default="nuts", choices=method_choices(),
                        help="nuts: full posterior (default, as in the paper); map: the marginal posterior mode "
                             "of the difficulties (abilities integrated out by quadrature, as marginal maximum "
                             "likelihood does; each ability the mode given them), no uncertainty, for exploring")
    parser.add_argument("--observation", default="binomial", choices=OBSERVATIONS,
                        help="how a cell's K trials are observed: binomial (default, the paper's: independent trials) "
                             "or beta-binomial (trials of one model on one item share a success rate; one "
                             "correlation rho ~ Beta(1, 1) for the matrix; joint route, --method nuts; "
                             "docs/observation_models.md)")
    parser.add_argument("--model", default="1pl", choices=model_choices(),
                        help="item-response model: 1pl (default, the paper's) or 2pl (a slope a_i ~ LogNormal(0, 0.5) "
                             "per item, on the 2pl route; difficulty.csv gains a_mean, a_sd; docs/irt.md)")
    parser.add_argument("--compare", default=None, choices=("1pl",),
                        help="with --model 2pl: also sample the 1PL and compare both by PSIS-LOO over the cells "
                             "(elpd difference and its standard error, in the summary and diagnostics.json)")
    parser.add_argument("--prior", default="paper", choices=PRIORS,
                        help="the prior on abilities and difficulties: paper (default, the paper's N(0, 1)) or "
                             "hierarchical (theta ~ N(0, sigma_theta), b ~ N(mu_b, sigma_b), the scales learned from "
                             "the panel; joint route; docs/irt.md)")
    parser.add_argument("--prior-sensitivity", action="store_true",
                        help="also refit under the other prior with the same settings and print DDM, Max Gap and the "
                             "widest gap under both, flagged where they differ by more than the calibrated interval's "
                             "width (about doubles the fit's time; docs/irt.md)")
    parser.add_argument("--fixed-difficulties", default=None, metavar="CSV",
                        help="anchor items: a difficulty file (item,b_mean) whose items keep their given b while "
                             "every other item and every model is fitted, so new items land on that scale "
                             "(joint route; docs/anchored.md)")
    parser.add_argument("--name", metavar="NAME",
                        help="the benchmark's name, recorded in diagnostics.json and shown by diagnose, plot and "
                             "explore (default: the matrix file's name, or its folder's for response_matrix.csv)")
    parser.add_argument("--save-posterior", action="store_true",
                        help=f"also write the posterior draws (ArviZ DataTree, zarr) as {POSTERIOR_NAME}")
    parser.add_argument("--allow-missing", action="store_true",
                        help="accept absent cells (blank) and K per cell (MATRIX.trials.csv, prepare --allow-missing): "
                             "NUTS with the masked likelihood, on the collapsed route unless --route joint "
                             "(docs/suites.md)")
    parser.add_argument("--no-calibrate", action="store_true",
                        help="skip the calibrated intervals of DDM, Max Gap and Top-5 Gap Sum (a simulation at this "
                             "fit, about a second to a minute; docs/gap_noise.md): reports then say 'uncalibrated'")
    parser.add_argument("--calibrate-budget", type=SECONDS, default=60.0, metavar="S",
                        help="time budget of that simulation in seconds (default 60; fewer simulated data sets per "
                             "world when it would take longer, never fewer than 16)")
    parser.add_argument("--no-check-fit", action="store_true",
                        help="skip the model-fit check that follows the fit (10 of its posterior draws, about 7 %% of "
                             "a default ChemBench fit's time; written to DIR/check_fit/, its summary line printed; "
                             "docs/model_fit.md)")
    parser.add_argument("--strict", action="store_true",
                        help="exit with status 3 (after writing the outputs) when the fit misses the convergence rule: "
                             "max R-hat > 1.01, min bulk ESS < 400 or any divergence (the warnings say which)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress and no summary (warnings still shown); without it progress goes to stderr: "
                             "a redrawn line on a terminal, a line every 10 s when stderr is a file")
    return parser.parse_args(argv)


# ------------------------------------------------------------------------------------------
# validation




def validate(args):
    """Every check that can fail on the user's input, in one place; returns the matrix (the plan, with the checked
    guessing floors, is ``args.plan``)."""
    # every output (and the folder) checked before any input is read: none may be an input
    from benchmeasure.analyses.fit_check_outputs import CHECK_OUTPUTS
    from benchmeasure.core.fit_check_text import CHECK_FOLDER
    from benchmeasure.irt.fit_folder import OUTPUTS

    checked = [] if args.no_check_fit else [(os.path.join(args.output_dir, CHECK_FOLDER), CHECK_OUTPUTS)]
    plan_outputs(inputs=[args.matrix, args.guessing_csv, args.fixed_difficulties],
                 folders=[(args.output_dir, OUTPUTS), *checked])
    if args.allow_missing:
        from benchmeasure.core.matrix import read_matrix_allowing_holes

        matrix = read_matrix_allowing_holes(args.matrix, args.n_trials)
    else:
        matrix = read_matrix(args.matrix, args.n_trials)
    if args.guessing_csv is not None:
        guessing = read_guessing_csv(args.guessing_csv, matrix.items)
    else:  # --guessing's range, like every number's, is checked as the option is parsed (benchmeasure.base.options)
        guessing = 0.0 if args.guessing is None else args.guessing
    try:  # the library checks the fit's settings once; its messages name fields, written here as flags
        args.settings = FitSettings(method=args.method, sampler=args.sampler, chains=args.chains, tune=args.tune,
                                    draws=args.draws, target_accept=args.target_accept, seed=args.seed,
                                    route=args.route, observation=args.observation, model=args.model,
                                    compare=args.compare, prior=args.prior)
    except SettingsError as exc:
        fail(exc.render(FLAGS))
    args.fixed_b = read_fixed_difficulties(args, matrix)
    from benchmeasure.irt.plan import plan_fit

    try:  # the fit's plan, resolved once: what the routes cannot fit (holes, anchors…) refused before any output
        args.plan = plan_fit(matrix, args.settings, guessing, args.fixed_b)
    except SettingsError as exc:
        fail(exc.render(FLAGS))
    args.sensitivity_plan = sensitivity_plan(args, matrix) if args.prior_sensitivity else None
    return matrix


def read_fixed_difficulties(args, matrix):
    """--fixed-difficulties in matrix order (NaN = free), or None; every named item must be in the matrix."""
    if args.fixed_difficulties is None:
        return None
    from benchmeasure.core.difficulty_file import read_item_difficulties

    items, values = read_item_difficulties(args.fixed_difficulties)
    position = {item: i for i, item in enumerate(matrix.items)}
    unknown = [item for item in items if item not in position]
    if unknown:
        more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
        fail(f"{args.fixed_difficulties}: item {unknown[0]!r}{more} is not in the matrix {args.matrix}")
    if len(items) == len(matrix.items):
        fail(f"{args.fixed_difficulties}: every matrix item is fixed; nothing to calibrate "
             "(to place models on a fixed scale use benchmeasure score)")
    fixed = np.full(len(matrix.items), np.nan)
    for item, value in zip(items, values):
        fixed[position[item]] = value
    return fixed


def sensitivity_plan(args, matrix):
    """``--prior-sensitivity``'s refit, planned with the fit (so what cannot run is refused before any output): the
    same settings and seed under the other prior, on ``--route`` when that route fits it, else as auto chooses."""
    import dataclasses

    from benchmeasure.analyses.prior_sensitivity import other_prior
    from benchmeasure.irt.plan import plan_fit

    if args.method != "nuts":
        fail("--prior-sensitivity needs --method nuts (the other prior is fitted on the joint route)")
    settings = dataclasses.replace(args.settings, prior=other_prior(args.prior), seed=args.plan.seed_used)
    try:
        return plan_fit(matrix, settings, args.plan.guessing, args.fixed_b)
    except SettingsError:
        pass
    try:
        return plan_fit(matrix, dataclasses.replace(settings, route="auto"), args.plan.guessing, args.fixed_b)
    except SettingsError as exc:
        fail(f"--prior-sensitivity: {exc.render(FLAGS)}")


def prior_sensitivity(args, matrix, result, calibrated, show_progress, say) -> dict:
    """The refit of :func:`sensitivity_plan`, compared with the fit (:mod:`benchmeasure.analyses.prior_sensitivity`)."""
    from benchmeasure.analyses.prior_sensitivity import compare, readings
    from benchmeasure.irt.fit import fit_1pl

    plan = args.sensitivity_plan
    say(f"prior sensitivity: refitting under the {plan.settings.prior} prior ({plan.route} route, same settings)")
    refit = fit_1pl(matrix, plan=plan, progress=show_progress)
    calibrated = calibrated if calibrated is None or "refused" not in calibrated else None
    return compare(args.prior, readings(result.b_mean, matrix.items), plan.settings.prior,
                   readings(refit.b_mean, matrix.items), calibrated)


def model_fit_check(args, matrix, result):
    """The model-fit check of the fit just made (``analyses.fit_check_outputs.fit_folder_check``: a few of its own
    posterior draws), or a skipped one saying why (another model or observation model than the binomial 1PL)."""
    from benchmeasure.analyses.fit_check_outputs import FolderCheck, fit_folder_check, refusal
    from benchmeasure.base.files import sha256_file

    why = refusal(args.model, args.observation)
    if why is not None:
        return FolderCheck(f"model fit: not checked ({why})", skipped=why)
    return fit_folder_check(result, matrix, os.path.abspath(args.matrix), args.plan.guessing,
                            matrix_sha256=sha256_file(args.matrix), seed=result.settings.get("seed_used") or 0)


# ------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    wall_start = time.perf_counter()
    exit_with_parent()  # started by BenchFill's ability fit: end with it (benchmeasure.base.lifetime)
    args = parse_args(argv)
    matrix = validate(args)
    # Table 5 response-matrix checks: one warning line on stderr when they fail; the fit proceeds
    from benchmeasure.analyses.checks_holes import warn_if_failing

    warn_if_failing(matrix)  # on present cells with holes

    from benchmeasure.irt.diagnostics import warnings_for
    from benchmeasure.irt.fit import fit_1pl

    plan = args.plan
    s = plan.settings   # --tune, --draws and --target-accept as resolved (the route's defaults where not given)
    show_progress = not args.quiet
    say = (lambda *a: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    say(f"fitting the {args.model.upper()} to {len(matrix.models)} models x {len(matrix.items)} items "
        f"({matrix.n_trials} trial{'s' if matrix.n_trials != 1 else ''} per cell) with "
        + ("MAP (marginal mode)" if not plan.nuts else
           f"blocked Gibbs (gibbs route, {s.chains} chains x ({s.tune} burn-in + {s.draws} sweeps))"
           if plan.sampler == "gibbs" else
           f"NUTS ({plan.sampler}, {plan.route} route, {s.chains} chains x ({s.tune} + {s.draws})"
           + (f", the route's defaults for {', '.join(plan.route_defaults)}" if plan.route_defaults else "") + ")"))
    result = fit_1pl(matrix, plan=plan, progress=show_progress)
    if args.method == "nuts":
        result.warnings = warnings_for(result.diagnostics)
    from benchmeasure.core.difficulty_file import default_benchmark_name
    from benchmeasure.irt.fit_folder import write_fit_folder
    from benchmeasure.irt.plan import fit_record
    from benchmeasure.irt.progress import Progress

    wall_time = time.perf_counter() - wall_start
    calibrated = None
    if args.model != "1pl" and not args.no_calibrate:
        say("note: the calibrated intervals simulate 1PL worlds; under --model 2pl they are not computed "
            "(reports say 'uncalibrated')")
    if args.method == "nuts" and not args.no_calibrate and args.model == "1pl":
        from benchmeasure.analyses.calibrated import calibrate_fit

        say("calibrating the intervals: DDM, Max Gap and Top-5 Gap Sum simulated at this fit "
            f"(budget {args.calibrate_budget:g} s; --no-calibrate skips it)")
        calibrated = calibrate_fit(result, matrix, guessing=plan.guessing, observation=args.observation,
                                   anchored=args.fixed_b is not None, budget_s=args.calibrate_budget,
                                   seed=result.settings.get("seed_used") or 0)
    sensitivity = prior_sensitivity(args, matrix, result, calibrated, show_progress, say) \
        if args.sensitivity_plan is not None else None
    check = None if args.no_check_fit else model_fit_check(args, matrix, result)
    # writing the fit folder shows its own progress (tail ESS per chunk of items, then each file): at
    # 12 x 41,871 it takes tens of seconds after the sampler's display says done
    writing = Progress("fit folder") if show_progress and args.method == "nuts" else None
    with writing if writing is not None else contextlib.nullcontext():
        diagnostics = fit_record(result, matrix, matrix_path=args.matrix,
                                 benchmark=args.name or default_benchmark_name(args.matrix),
                                 guessing_csv=args.guessing_csv, fixed_difficulties=args.fixed_difficulties,
                                 save_posterior=args.save_posterior, wall_time=wall_time, calibrated=calibrated,
                                 progress=writing)
        if sensitivity is not None:   # asked for only: a default fit's record is unchanged
            diagnostics["prior_sensitivity"] = sensitivity
        subfolders = {}
        if check is not None:
            from benchmeasure.core.fit_check_text import CHECK_FOLDER

            diagnostics["check_fit"] = {"summary": check.summary, "seconds": round(check.seconds, 3),
                                        "cpu_seconds": round(check.cpu_seconds, 3)}
            if check.skipped is None:
                diagnostics["outputs"].append(CHECK_FOLDER)
                subfolders[CHECK_FOLDER] = check.write
        write_fit_folder(Path(args.output_dir), result, diagnostics, args.save_posterior, progress=writing,
                         subfolders=subfolders)
    fallback = result.diagnostics.get("route_fallback")
    if fallback:
        print(f"note: --route auto chose gibbs, whose chains did not mix here (max R-hat "
              f"{fallback['gibbs_max_r_hat']:.3f}, min bulk ESS {fallback['gibbs_min_ess_bulk']:.0f}); refitted on the "
              "collapsed route, which samples the same posterior (diagnostics.json: route_fallback)", file=sys.stderr)
    if matrix.trials is not None:
        say(f"note: {int((matrix.trials == 0).sum())} absent cells (per model and item in diagnostics.json), "
            "fitted with the masked likelihood " + (f"on the {result.settings.get('route')} route"
                                                    if result.settings.get("route") else "(marginal mode)"))
    constant, models_constant = diagnostics["constant_items"], diagnostics["constant_models"]
    n_constant = len(constant["all_correct"]) + len(constant["all_wrong"])
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.method == "map":
        say("note: --method map gives the posterior mode only; the outputs carry no posterior uncertainty "
            "(b_sd, r_hat and ess_bulk are empty)")
    if n_constant:
        say(f"note: {n_constant} item(s) are answered the same by every model in every trial "
            "(listed under constant_items in diagnostics.json); their b comes mostly from the prior")
    n_models_constant = len(models_constant["all_correct"]) + len(models_constant["all_wrong"])
    if n_models_constant:
        say(f"note: {n_models_constant} model(s) answered every item the same way in every trial (listed under "
            "constant_models in diagnostics.json); their theta comes mostly from the prior")
    d = result.diagnostics
    if (d.get("ties") or {}).get("staircase"):
        say(f"note: {d['ties']['note']}")
    if d.get("dispersion"):
        disp = d["dispersion"]
        say(f"dispersion check (K > 1): Pearson dispersion {disp['observed']:.2f} "
            f"[{disp['observed_low']:.2f}, {disp['observed_high']:.2f}] against {disp['replicated']:.2f} for data "
            f"replicated from the fit, p = {disp['p_value']:.2f}" + (f"; {disp['note']}" if disp["note"] else ""))
    if args.method == "nuts":
        tail = diagnostics.get("min_ess_tail")
        say(f"max R-hat {d['max_r_hat']:.4f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
            + (f"min tail ESS {tail:.0f}, " if tail is not None else "") +
            f"{d['divergences']} divergences; sampling {d['sampling_time_s']:.1f} s, "
            f"wall {diagnostics['wall_time_s']:.1f} s")
    if d.get("slopes"):
        sl = d["slopes"]
        say(f"slopes (2PL): median {sl['median']:.2f}, range {sl['min']:.2f} to {sl['max']:.2f}; "
            f"{sl['below_0_5']} item(s) with a < 0.5, {sl['above_2']} with a > 2")
    if d.get("loo"):
        say(d["loo"]["line"])
    if "calibrated_intervals" in diagnostics and not args.quiet:
        from benchmeasure.core.calibrated_text import checked, lines
        from benchmeasure.core.resolution import gap_table

        # the widest gaps' resolution from the same pooled means and sds diagnose reads back from difficulty.csv
        gaps = (gap_table(result.b_mean, result.b_sd, matrix.items, 5, n_trials=matrix.n_trials)
                if np.all(np.isfinite(result.b_sd)) else None)
        for line in lines(checked(diagnostics["calibrated_intervals"]), gaps):
            say(line)
    if sensitivity is not None:
        from benchmeasure.analyses.prior_sensitivity import line

        print(line(sensitivity), file=sys.stderr)
    if check is not None:
        say(check.summary)
    say(f"wrote {args.output_dir}/difficulty.csv, ability.csv, diagnostics.json"
        + (f", {POSTERIOR_NAME}" if args.save_posterior and result.posterior is not None else "")
        + (", check_fit/" if check is not None and check.skipped is None else ""))
    from benchmeasure.irt.diagnostics import converged

    if args.strict and args.method == "nuts" and not converged(d):
        print("error: --strict: the fit did not converge (see the warnings above); its outputs are written for "
              "inspection", file=sys.stderr)
        return 3
    return 0
