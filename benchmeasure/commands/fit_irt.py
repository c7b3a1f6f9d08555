"""Fit the Bayesian 1PL IRT model (paper, Appendix C.3) to a count matrix.

Run with the .venv-irt interpreter (Python >= 3.12, requirements_irt.txt):

    .venv-irt/bin/python scripts/fit_irt.py my_benchmark/response_matrix.csv --n-trials 2 --output-dir my_benchmark

Writes difficulty.csv, ability.csv and diagnostics.json (and, with --save-posterior,
posterior.zarr) into --output-dir. Every input is checked before fitting; a bad one is
reported in one line with exit status 2 and nothing is written.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmeasure.errors import ArgumentParser, fail
from benchmeasure.files import atomic_write, command_line, package_versions, plan_outputs, sha256_file, write_json
from benchmeasure.guessing import read_guessing_csv
from benchmeasure.irt.fit import POSTERIOR_NAME
from benchmeasure.matrix import read_matrix
from benchmeasure.options import CHAINS, DRAWS, GUESSING, N_TRIALS, OPEN_PROBABILITY, SEED, TUNE

DIFFICULTY_COLUMNS = ["item", "b_mean", "b_sd", "r_hat", "ess_bulk"]
ABILITY_COLUMNS = ["model", "theta_mean", "theta_sd", "r_hat", "ess_bulk"]
#: Every file a fit may write into --output-dir; a refit replaces them all or removes the stale ones.
OUTPUTS = ("difficulty.csv", "ability.csv", "diagnostics.json")
PACKAGES = ["numpy", "scipy", "pandas", "pymc", "pytensor", "nutpie", "numba", "arviz", "xarray", "zarr",
            "numpyro", "jax"]

EXAMPLES = """\
examples:
  fit_irt.py my_benchmark/response_matrix.csv --n-trials 2 --output-dir my_benchmark
  fit_irt.py matrix.csv --n-trials 8 --output-dir out --guessing 0.25          # four-choice items
  fit_irt.py matrix.csv --n-trials 8 --output-dir out --guessing-csv guessing.csv
  fit_irt.py matrix.csv --n-trials 8 --output-dir out --method map            # marginal posterior mode, in seconds

model (paper, Appendix C.3):
  P(correct) = g + (1 - g) * sigmoid(theta_j - b_i);  Y_ij ~ Binomial(n_trials, P)
  theta_j ~ Normal(0, 1), b_i ~ Normal(0, 1);  g = 0 unless --guessing / --guessing-csv
"""


def parse_args(argv):
    parser = ArgumentParser(
        prog="fit_irt.py",
        description="Fit item difficulties and model abilities jointly (Bayesian 1PL, NUTS) from a count matrix.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
    parser.add_argument("--tune", type=TUNE, default=1000, help="warm-up iterations per chain (default 1000)")
    parser.add_argument("--draws", type=DRAWS, default=1000,
                        help="posterior draws per chain, at least 4 (default 1000)")
    parser.add_argument("--target-accept", type=OPEN_PROBABILITY, default=0.95, metavar="P",
                        help="NUTS target acceptance rate in (0, 1) (default 0.95)")
    parser.add_argument("--seed", type=SEED, default=None, metavar="N",
                        help="random seed; the same seed and inputs give identical outputs (default: drawn, recorded)")
    parser.add_argument("--sampler", default="nutpie", choices=["nutpie", "pymc", "numpyro"],
                        help="NUTS implementation (default nutpie; pymc is PyMC's own NUTS; numpyro needs jax)")
    parser.add_argument("--route", default="auto", choices=["auto", "collapsed", "joint"],
                        help="how NUTS explores the same posterior: collapsed = NUTS on the abilities with every "
                             "difficulty integrated out by quadrature, then each difficulty drawn exactly given each "
                             "draw (fast for many items); joint = NUTS on abilities and difficulties together; "
                             "auto (default) = collapsed, joint with --sampler numpyro")
    parser.add_argument("--method", default="nuts", choices=["nuts", "map"],
                        help="nuts: full posterior (default, as in the paper); map: the marginal posterior mode "
                             "of the difficulties (abilities integrated out by quadrature, as marginal maximum "
                             "likelihood does; each ability the mode given them), no uncertainty, for exploring")
    parser.add_argument("--fixed-difficulties", default=None, metavar="CSV",
                        help="anchor items: a difficulty file (item,b_mean) whose items keep their given b while "
                             "every other item and every model is fitted, so new items land on that scale "
                             "(joint route; docs/anchored.md)")
    parser.add_argument("--save-posterior", action="store_true",
                        help=f"also write the posterior draws (ArviZ DataTree, zarr) as {POSTERIOR_NAME}")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress and no summary (warnings still shown); without it progress goes to stderr: "
                             "a redrawn line on a terminal, a line every 10 s when stderr is a file")
    return parser.parse_args(argv)


# ------------------------------------------------------------------------------------------
# validation




def validate(args):
    """Every check that can fail on the user's input, in one place; returns (matrix, guessing)."""
    from benchmeasure.irt.fit import check_guessing, check_settings

    # every output (and the folder) checked before any input is read: none may be an input
    plan_outputs(inputs=[args.matrix, args.guessing_csv, args.fixed_difficulties],
                 folders=[(args.output_dir, OUTPUTS)])
    matrix = read_matrix(args.matrix, args.n_trials)
    if args.guessing_csv is not None:
        guessing = read_guessing_csv(args.guessing_csv, matrix.items)
    else:  # --guessing's range, like every number's, is checked as the option is parsed (benchmeasure.options)
        guessing = 0.0 if args.guessing is None else args.guessing
    guessing = check_guessing(guessing, len(matrix.items), matrix.items)
    if args.sampler == "nutpie" and args.tune < 1:  # the library's check, named by the option
        fail(f"--tune must be at least 1 with the nutpie sampler, got {args.tune}")
    check_settings(method=args.method, sampler=args.sampler, chains=args.chains, tune=args.tune, draws=args.draws,
                   target_accept=args.target_accept, seed=args.seed, route=args.route)
    args.fixed_b = read_fixed_difficulties(args, matrix)
    return matrix, guessing


def read_fixed_difficulties(args, matrix):
    """--fixed-difficulties in matrix order (NaN = free), or None; every named item must be in the matrix."""
    if args.fixed_difficulties is None:
        return None
    if args.method != "nuts":
        fail("--fixed-difficulties needs --method nuts (no posterior mode for anchored fits)")
    if args.route == "collapsed" or args.sampler == "numpyro":
        fail("--fixed-difficulties runs on the joint route with --sampler nutpie or pymc (--route joint or auto)")
    from benchmeasure.difficulty_file import read_item_difficulties

    items, values = read_item_difficulties(args.fixed_difficulties)
    position = {item: i for i, item in enumerate(matrix.items)}
    unknown = [item for item in items if item not in position]
    if unknown:
        more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
        fail(f"{args.fixed_difficulties}: item {unknown[0]!r}{more} is not in the matrix {args.matrix}")
    if len(items) == len(matrix.items):
        fail(f"{args.fixed_difficulties}: every matrix item is fixed; nothing to calibrate "
             "(to place models on a fixed scale use score_models.py)")
    fixed = np.full(len(matrix.items), np.nan)
    for item, value in zip(items, values):
        fixed[position[item]] = value
    return fixed


# ------------------------------------------------------------------------------------------
# outputs


def _cell(value, digits: int = 6) -> str:
    """A CSV cell: empty for a missing figure (NaN), else a compact float."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return f"{float(value):.{digits}g}" if digits else str(value)


def _json_safe(value):
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def build_diagnostics(args, matrix, guessing, result, wall_time: float) -> dict:
    d = result.diagnostics
    method = result.method
    constant = matrix.constant_items()
    record = {
        "max_r_hat": d.get("max_r_hat"),
        "min_ess_bulk": d.get("min_ess_bulk"),
        "divergences": d.get("divergences", 0),
        "method": method,
        "uncertainty": (None if method == "nuts" else
                        "none: --method map gives the posterior mode only; b_sd, theta_sd, r_hat and ess_bulk are "
                        "empty and max_r_hat / min_ess_bulk are null"),
        "converged": d.get("converged") if method == "nuts" else None,
        "worst_r_hat": d.get("worst_r_hat"),
        "worst_ess_bulk": d.get("worst_ess_bulk"),
        "leapfrog_steps_per_draw": d.get("leapfrog_steps_per_draw"),
        "max_tree_depth_hits": d.get("max_tree_depth_hits"),
        "settings": {
            "method": method,
            "route": result.settings.get("route"),
            "sampler": args.sampler if method == "nuts" else None,
            "chains": args.chains if method == "nuts" else None,
            "tune": args.tune if method == "nuts" else None,
            "draws": args.draws if method == "nuts" else None,
            "target_accept": args.target_accept if method == "nuts" else None,
            "seed": args.seed,
            "seed_used": result.settings.get("seed_used"),
            "guessing": (guessing if isinstance(guessing, float) else
                         {"per_item_csv": os.path.abspath(args.guessing_csv),
                          "sha256": sha256_file(args.guessing_csv),
                          "min": float(min(guessing)), "max": float(max(guessing))}),
            "parametrization": result.settings.get("parametrization"),
            "adaptation": result.settings.get("adaptation"),
            "fixed_difficulties": None if args.fixed_difficulties is None else {
                "path": os.path.abspath(args.fixed_difficulties), "sha256": sha256_file(args.fixed_difficulties),
                "items": result.settings.get("fixed_items"),
                "note": "these items kept their given b (b_sd 0, no R-hat/ESS, fixed = true in difficulty.csv); "
                        "max_r_hat and min_ess_bulk cover the models and the free items"},
        },
        "input": {
            "path": os.path.abspath(args.matrix),
            "sha256": sha256_file(args.matrix),
            "models": len(matrix.models),
            "items": len(matrix.items),
            "n_trials": matrix.n_trials,
        },
        "constant_items": {
            "all_correct": constant["all_correct"],
            "all_wrong": constant["all_wrong"],
            "note": "items every model solved in every trial, or none did; legal, the priors keep their b finite, "
                    "but their b is set mostly by the prior",
        },
        "quadrature": d.get("quadrature"),
        "timing": {
            "compile_time_s": d.get("compile_time_s"),
            "sampling_time_s": d.get("sampling_time_s"),
            "difficulty_draw_time_s": d.get("difficulty_draw_time_s"),
            "summary_time_s": d.get("summary_time_s"),
            "optimization_time_s": d.get("optimization_time_s"),
            "min_ess_bulk_per_s": d.get("min_ess_bulk_per_s"),
        },
        "wall_time_s": wall_time,
        "warnings": list(result.warnings),
        "versions": package_versions(PACKAGES),
        "command": command_line(),
        "outputs": ["difficulty.csv", "ability.csv", "diagnostics.json"] + ([POSTERIOR_NAME]
                                                                             if args.save_posterior else []),
    }
    return _json_safe(record)


def _write_csv(path: Path, columns: list, rows) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)


def tail_ess_summary(result) -> dict:
    """``min_ess_tail`` and ``worst_ess_tail`` over θ and b (ArviZ's tail ESS, 5 % and 95 % quantiles), beside
    the bulk ESS: how well the posterior intervals are resolved. Empty for a fit without draws (MAP)."""
    if result.posterior is None:
        return {"min_ess_tail": None, "worst_ess_tail": None}
    import numpy as np

    from benchmeasure.irt.diagnostics import ess_tail

    posterior = result.posterior["posterior"].to_dataset()
    worst, where = None, None
    for var in ("theta", "b"):
        if var not in posterior:
            continue
        draws = posterior[var]
        dim = next(d for d in draws.dims if d not in ("chain", "draw"))
        values = np.asarray(draws.transpose("chain", "draw", dim).values, dtype=float)
        tails = ess_tail(values)
        if np.any(np.isfinite(tails)):
            k = int(np.nanargmin(tails))
            if worst is None or tails[k] < worst:
                worst, where = float(tails[k]), f"{var}[{draws[dim].values[k]}]"
    return {"min_ess_tail": worst, "worst_ess_tail": where}


def write_outputs(out_dir: Path, result, diagnostics: dict, save_posterior: bool) -> None:
    """Write every output to a staging folder first, then move each into place."""
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fit_irt.", dir=out_dir))
    try:
        fixed = set(result.settings.get("fixed_items") or ())
        _write_csv(staging / "difficulty.csv", DIFFICULTY_COLUMNS + (["fixed"] if fixed else []),
                   ([item, _cell(m, 8), _cell(s), _cell(r), _cell(e, 5)]
                    + ([str(item in fixed).lower()] if fixed else [])
                    for item, m, s, r, e in zip(result.items, result.b_mean, result.b_sd, result.r_hat,
                                                result.ess_bulk)))
        _write_csv(staging / "ability.csv", ABILITY_COLUMNS,
                   ([model, _cell(m, 8), _cell(s), _cell(r), _cell(e, 5)]
                    for model, m, s, r, e in zip(result.models, result.theta_mean, result.theta_sd,
                                                 result.theta_r_hat, result.theta_ess_bulk)))
        write_json(staging / "diagnostics.json", diagnostics)
        if save_posterior and result.posterior is not None:
            save_posterior_zarr(result.posterior, staging / POSTERIOR_NAME)
        # everything is complete: move into place (the posterior first, diagnostics.json last)
        if save_posterior and result.posterior is not None:
            target = out_dir / POSTERIOR_NAME
            old = None
            if target.exists():
                old = staging / "old-posterior"
                os.replace(target, old)
            os.replace(staging / POSTERIOR_NAME, target)
        else:
            # a posterior left by an earlier fit into this folder would be read as this fit's (stale)
            stale = out_dir / POSTERIOR_NAME
            if stale.is_dir() and not stale.is_symlink():
                shutil.rmtree(stale)
            elif stale.exists() or stale.is_symlink():
                stale.unlink()
        for name in OUTPUTS:
            os.replace(staging / name, out_dir / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def save_posterior_zarr(posterior, path: Path) -> None:
    """The posterior DataTree (theta, b and sampler statistics) as a zarr store ArviZ reads back."""
    import warnings

    tree = posterior.copy()
    if "sample_stats" in tree.children:
        stats = tree["sample_stats"].to_dataset()
        drop = [name for name, var in stats.data_vars.items() if var.dtype == object]
        if drop:
            tree["sample_stats"] = stats.drop_vars(drop)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.to_zarr(path, mode="w")


# ------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    wall_start = time.perf_counter()
    args = parse_args(argv)
    matrix, guessing = validate(args)
    # Table 5 response-matrix checks: one warning line on stderr when they fail; the fit proceeds
    from benchmeasure.checks import warn_if_failing

    warn_if_failing(matrix)

    from benchmeasure.irt.diagnostics import warnings_for
    from benchmeasure.irt.fit import fit_1pl, resolve_route

    show_progress = not args.quiet
    say = (lambda *a: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    say(f"fitting the 1PL to {len(matrix.models)} models x {len(matrix.items)} items "
        f"({matrix.n_trials} trials per cell) with "
        + (f"NUTS ({args.sampler}, {'joint' if args.fixed_b is not None else resolve_route(args.route, args.sampler)}"
           f" route, {args.chains} chains x "
           f"({args.tune} + {args.draws}))" if args.method == "nuts" else "MAP (marginal mode)"))
    result = fit_1pl(matrix, guessing=guessing, method=args.method, sampler=args.sampler, chains=args.chains,
                     tune=args.tune, draws=args.draws, target_accept=args.target_accept, seed=args.seed,
                     progress=show_progress, route=args.route, fixed_b=args.fixed_b)
    if args.method == "nuts":
        result.warnings = warnings_for(result.diagnostics)
    constant = matrix.constant_items()
    n_constant = len(constant["all_correct"]) + len(constant["all_wrong"])
    diagnostics = build_diagnostics(args, matrix, guessing, result, time.perf_counter() - wall_start)
    from benchmeasure.matrix import constant_models

    models_constant = constant_models(matrix)
    diagnostics["constant_models"] = {
        **models_constant,
        "note": "models that solved every item in every trial, or none; legal, but their theta is set mostly by "
                "the prior"}
    diagnostics.update(tail_ess_summary(result))
    write_outputs(Path(args.output_dir), result, diagnostics, args.save_posterior)
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
    if args.method == "nuts":
        tail = diagnostics.get("min_ess_tail")
        say(f"max R-hat {d['max_r_hat']:.4f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
            + (f"min tail ESS {tail:.0f}, " if tail is not None else "") +
            f"{d['divergences']} divergences; sampling {d['sampling_time_s']:.1f} s, "
            f"wall {diagnostics['wall_time_s']:.1f} s")
    say(f"wrote {args.output_dir}/difficulty.csv, ability.csv, diagnostics.json"
        + (f", {POSTERIOR_NAME}" if args.save_posterior and result.posterior is not None else ""))
    return 0

