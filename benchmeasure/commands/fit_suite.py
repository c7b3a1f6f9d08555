"""Fit a suite (several benchmarks, holes allowed) on one scale; per-benchmark difficulties and metrics.

Reads long responses (``model,item_id[,trial],correct[,benchmark]``, ``.gz`` allowed) or a count matrix with holes
(``--matrix``, from ``prepare --allow-missing``), calibrates every item at once by marginal maximum a posteriori
(EM over an ability grid; absent cells add nothing to the likelihood) and writes one difficulty file per
benchmark with its DDM, Max Gap and Top-5 Gap Sum (each benchmark min–max normalized on its own, as the paper
does), the abilities and, with ``--abilities correlated`` (NUTS, the full posterior of a multidimensional 1PL with
an LKJ prior) or ``--abilities correlated-eb`` (fast empirical-Bayes point estimate), one ability per model per
benchmark and the correlation of abilities across benchmarks.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import re
import sys
import time

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import all_or_nothing, atomic_write, plan_outputs, provenance, write_json
from benchmeasure.base.options import CHAINS, DRAWS, N_TRIALS, OPEN_PROBABILITY, SEED, TUNE, add_quiet, number
from benchmeasure.core.fixed_scale_inputs import input_records
from benchmeasure.irt.priors import HYPER_SCALE
from benchmeasure.irt.priors import add_option as add_prior_option
from benchmeasure.suite.mirt import ROUTES

POSITIVE = number(0.0, 1e6, open_low=True)
ESTIMATOR = {"paper": "marginal maximum a posteriori (EM, 61-point grid)",
             "hierarchical": "marginal maximum a posteriori (EM, 121-point grid over -12..12), the hyperparameters "
                             "estimated with the difficulties (b's conditional posteriors by Laplace)"}
PRIOR_TEXT = {"paper": "theta ~ Normal(0, 1); b ~ Normal(0, 3^2)",
              "hierarchical": "theta ~ Normal(0, sigma_theta); b ~ Normal(mu_b, sigma_b) per benchmark; sigma_theta, "
                              "sigma_b ~ HalfNormal(3), mu_b ~ Normal(0, 3)"}

EXAMPLES = """\
examples:
  benchmeasure fit-suite data/mmlu_pro/responses.csv.gz --output-dir runs/mmlu_pro_suite
  benchmeasure fit-suite data/zeroeval/gsm8k.csv.gz data/zeroeval/math_l5.csv.gz --abilities correlated \\
      --seed 1 --output-dir runs/zeroeval_suite
  benchmeasure fit-suite data/mmlu_pro/responses.csv.gz --abilities correlated-eb --output-dir runs/mmlu_pro_eb
  benchmeasure fit-suite --matrix matrix.csv --n-trials 4 --item-benchmarks item_benchmark.csv --output-dir runs/s
  benchmeasure fit-suite data/zeroeval/gsm8k.csv.gz data/zeroeval/math_l5.csv.gz --prior hierarchical \\
      --output-dir runs/zeroeval_hier

output: DIR/<benchmark>/difficulty.csv (item,b_mean,b_sd: one scale for the whole suite), DIR/metrics.csv (per
  benchmark: items, DDM, Max Gap, Top-5 Gap Sum, each benchmark normalized on its own), DIR/ability.csv
  (model,theta_mean,theta_sd,absent_cells[,theta_<benchmark>...,sd_<benchmark>...]), DIR/correlation.csv (the
  correlation matrix: posterior means with correlated, point estimate with correlated-eb), DIR/correlation_pairs.csv
  (correlated: benchmark_a,benchmark_b,mean,sd,low,high,r_hat,ess_bulk; low/high the central 94 % interval),
  DIR/suite.json (settings, convergence, absent cells per model and item, inputs and their SHA-256).

abilities: one = one ability per model (the paper's; marginal MAP by EM, seconds). correlated = one ability per
  model per benchmark, correlated across benchmarks: NUTS (nutpie) on the multidimensional 1PL, theta_j ~
  Normal(mu, diag(s) R diag(s)), R ~ LKJ(eta), b ~ Normal(0, 1) (the paper's), masked likelihood; difficulty.csv
  then holds its posterior b. --route collapsed (default) samples the abilities, means, spreads and correlation
  with every b integrated out per benchmark, then draws every b exactly; --route joint samples everything (the
  same posterior; far slower: see docs/suites.md); --coordinates partial (default) samples the abilities centred
  along the directions the data resolve and non-centred along the others (suite.json records how many).
  correlated-eb = the same abilities with the correlation estimated
  by the method of moments and plugged in (empirical Bayes: no interval for it; seconds).

prior: paper (default) keeps what fit-suite always fitted: theta ~ N(0, 1), b ~ N(0, 3^2) by EM, b ~ N(0, 1) with
  correlated. hierarchical: theta ~ N(0, sigma_theta) and, per benchmark, b ~ N(mu_b, sigma_b), sigma ~
  HalfNormal(3), mu_b ~ N(0, 3): by EM with the hyperparameters estimated alongside (one, correlated-eb), or by
  NUTS on the joint route (correlated; the collapsed route integrates b under N(0, 1) and refuses it; --route then
  defaults to joint). suite.json records the prior and the estimated hyperparameters.
"""


def parse_args(argv):
    parser = command_parser("benchmeasure fit-suite", __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("responses", nargs="*", metavar="RESPONSES_CSV", help="long responses (.csv or .csv.gz)")
    parser.add_argument("--matrix", metavar="MATRIX_CSV", help="a count matrix instead (blank = absent; "
                        "MATRIX.trials.csv beside it gives K per cell)")
    parser.add_argument("--n-trials", type=N_TRIALS, metavar="K", help="with --matrix: the most trials of a cell")
    parser.add_argument("--item-benchmarks", metavar="CSV", help="item_id,benchmark file (items of files without "
                        "a benchmark column, or of --matrix)")
    parser.add_argument("--abilities", choices=("one", "correlated", "correlated-eb"), default="one",
                        help="one ability per model (default, the paper's); one per benchmark, correlated: full "
                        "posterior by NUTS (correlated) or empirical-Bayes point estimate (correlated-eb)")
    nuts = parser.add_argument_group("--abilities correlated (NUTS)")
    nuts.add_argument("--eta", type=POSITIVE, default=2.0, help="LKJ shape of the correlation prior (default 2)")
    nuts.add_argument("--scales", choices=("unit", "half-normal"), default=None,
                      help="ability spread per benchmark: HalfNormal(1) (default; HalfNormal(3) with --prior "
                      "hierarchical) or 1 (the paper's; one benchmark is then exactly the paper's 1PL)")
    nuts.add_argument("--route", choices=ROUTES, default=None,
                      help="collapsed (default): NUTS on the abilities, mean, spreads and correlation with every b "
                      "integrated out, then exact b draws; joint: NUTS on all of them and every b (same posterior, "
                      "far slower at suite size; the default, and the only route, with --prior hierarchical)")
    nuts.add_argument("--coordinates", choices=("partial", "centred"), default="partial",
                      help="how NUTS sees the abilities (the same posterior): partial (default) = centred along the "
                      "directions of the abilities' covariance that the data resolve, non-centred along the others "
                      "(chosen from the data before sampling); centred = the abilities themselves (docs/suites.md)")
    nuts.add_argument("--chains", type=CHAINS, default=4, help="NUTS chains (default 4)")
    nuts.add_argument("--tune", type=TUNE, default=1000, help="warm-up iterations per chain (default 1000)")
    nuts.add_argument("--draws", type=DRAWS, default=2500,
                      help="draws per chain (default 2500: on MMLU-Pro 1000 left the largest R-hat at 1.012-1.018 and "
                           "2000 met the 1.01 rule on 2 of 3 seeds, 2500 on 3 of 3; docs/suites.md)")
    nuts.add_argument("--target-accept", type=OPEN_PROBABILITY, default=0.9, metavar="P",
                      help="NUTS target acceptance rate in (0, 1) (default 0.9); raise it (e.g. 0.95) when the fit "
                           "warns of divergent transitions")
    nuts.add_argument("--seed", type=SEED, default=0, metavar="N", help="sampler seed (default 0)")
    nuts.add_argument("--strict", action="store_true",
                      help="exit with status 3 (after writing the outputs) when the correlated posterior misses the "
                           "convergence rule: max R-hat > 1.01, min bulk ESS < 400 or any divergence")
    add_quiet(nuts)
    add_prior_option(parser, "theta ~ N(0, sigma_theta), b ~ N(mu_b, sigma_b) per benchmark, the hyperparameters "
                     "estimated with the difficulties; --abilities correlated: the joint route only",
                     "theta ~ N(0, 1), b ~ N(0, 3^2) by EM; b ~ N(0, 1) with --abilities correlated")
    parser.add_argument("--output-dir", required=True, metavar="DIR", help="where to write the results")
    args = parser.parse_args(argv)
    hierarchical = args.prior != "paper"
    if hierarchical and args.route == "collapsed" and args.abilities == "correlated":
        fail(f"--prior {args.prior}: --route collapsed integrates every b out under Normal(0, 1); the {args.prior} "
             "prior is fitted by --route joint (or by EM with --abilities one or correlated-eb)")
    if hierarchical and args.scales == "unit" and args.abilities == "correlated":
        fail(f"--prior {args.prior} learns each benchmark's ability spread (s_k ~ HalfNormal(3)); --scales unit fixes "
             "it at 1: leave --scales out")
    args.route = args.route or ("joint" if hierarchical else "collapsed")
    args.scales = args.scales or "half-normal"
    if bool(args.responses) == bool(args.matrix):
        fail("give RESPONSES_CSV files or --matrix MATRIX_CSV (one of the two)")
    if args.matrix and args.n_trials is None:
        fail("--matrix needs --n-trials K")
    if args.n_trials is not None and not args.matrix:
        fail("--n-trials applies to --matrix only (long responses give the trials of each cell)")
    return args


def _folder_name(benchmark: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", benchmark).strip("._") or "benchmark"


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    from benchmeasure.core.matrix_holes import companion_trials

    inputs = [*args.responses, args.matrix, args.item_benchmarks]
    companion = companion_trials(args.matrix) if args.matrix and os.path.isfile(args.matrix) else None
    if companion:
        inputs.append(companion)
    fixed = (["metrics.csv", "ability.csv", "suite.json"] + (["correlation.csv"] if args.abilities != "one" else [])
             + (["correlation_pairs.csv"] if args.abilities == "correlated" else []))
    plan_outputs(folders=[(args.output_dir, fixed)], inputs=inputs)

    from benchmeasure.core.metrics import diagnose
    from benchmeasure.suite.chain import single_thread
    from benchmeasure.suite.fit import fit_suite
    from benchmeasure.suite.reader import read_item_benchmarks, read_suite, suite_from_matrix

    mapping = read_item_benchmarks(args.item_benchmarks) if args.item_benchmarks else None
    suite = (suite_from_matrix(args.matrix, args.n_trials, mapping) if args.matrix
             else read_suite(args.responses, mapping))
    folders = {name: _folder_name(name) for name in suite.benchmarks}
    if len(set(folders.values())) != len(folders):
        fail("two benchmarks' names give the same folder name; rename one")
    plan_outputs(folders=[(args.output_dir, fixed), *((os.path.join(args.output_dir, f), ["difficulty.csv"])
                                                      for f in folders.values())], inputs=inputs)
    with single_thread():
        result = fit_suite(suite, "correlated" if args.abilities == "correlated-eb" else "one", prior=args.prior)
    posterior = None
    if args.abilities == "correlated":
        posterior = _nuts(suite, args)
        result = dataclasses.replace(result, b=posterior.b["mean"], b_sd=posterior.b["sd"],
                                     per_benchmark=posterior.theta["mean"], per_benchmark_sd=posterior.theta["sd"],
                                     correlation=posterior.correlation["mean"])
    unestimated = _unestimated_pairs(suite) if args.abilities != "one" else {}
    metrics = []
    for name in suite.benchmarks:
        items = suite.benchmark_items(name)
        if items.size < 2:
            metrics.append((name, int(items.size), None))
            continue
        metrics.append((name, int(items.size), diagnose(result.b[items].tolist(), where=f"benchmark {name!r}")))
    absent = suite.absent_cells()
    record = {
        "settings": {"abilities": args.abilities, "estimator": ESTIMATOR[args.prior], "prior": PRIOR_TEXT[args.prior],
                     "prior_name": args.prior,
                     **({"hyperparameters": result.hyper.record(suite.benchmarks)} if result.hyper else {}),
                     **({"note": "theta_mean/theta_sd: the one-ability EM fit; b and the per-benchmark abilities: "
                                 "the multidimensional posterior (correlated_posterior)"} if posterior else {})},
        **({"correlated_posterior": _posterior_record(posterior, suite.benchmarks)} if posterior else {}),
        "models": len(suite.models), "items": len(suite.items), "em_iterations": result.iterations,
        "benchmarks": {name: int(size) for name, size, _ in metrics},
        "absent_cells": {"total": absent["total"], "of": absent["cells"],
                         "per_model": {m: c for m, c in absent["per_model"].items() if c},
                         "per_item": {i: c for i, c in absent["per_item"].items() if c}},
        **({"correlation_not_estimated": [
            {"benchmark_a": suite.benchmarks[a], "benchmark_b": suite.benchmarks[b], "models_answering_both": n,
             "reason": f"fewer than {MIN_SHARED} models answered both benchmarks"}
            for (a, b), n in unestimated.items()]} if unestimated else {}),
        "inputs": input_records(inputs), **provenance(["numpy", "scipy", "pandas"]),
        "wall_time_s": time.perf_counter() - start,
    }
    with all_or_nothing():
        for name, folder in folders.items():
            with atomic_write(os.path.join(args.output_dir, folder, "difficulty.csv")) as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(["item", "b_mean", "b_sd"])
                writer.writerows((suite.items[i], f"{result.b[i]:.8g}", f"{result.b_sd[i]:.6g}")
                                 for i in suite.benchmark_items(name))
        with atomic_write(os.path.join(args.output_dir, "metrics.csv")) as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["benchmark", "items", "ddm", "max_gap", "top5_gap_sum"])
            for name, size, d in metrics:
                writer.writerow([name, size, *(("", "", "") if d is None else
                                               (f"{d.ddm:.6g}", f"{d.max_gap:.6g}", f"{d.top_k_gap_sum:.6g}"))])
        with atomic_write(os.path.join(args.output_dir, "ability.csv")) as handle:
            writer = csv.writer(handle, lineterminator="\n")
            extra = ([] if result.per_benchmark is None else
                     [f"theta_{folders[n]}" for n in suite.benchmarks] + [f"sd_{folders[n]}" for n in suite.benchmarks])
            writer.writerow(["model", "theta_mean", "theta_sd", "absent_cells", *extra])
            guessed = _prior_only(suite, unestimated) if result.per_benchmark is not None else None
            for j, model in enumerate(suite.models):
                # a benchmark the model never answered, linked to none it answered by an estimated correlation:
                # its ability there is the prior's mean, not an estimate (blank, like the correlation)
                more = ([] if result.per_benchmark is None else
                        ["" if guessed[j, k % len(suite.benchmarks)] else f"{v:.6g}"
                         for k, v in enumerate((*result.per_benchmark[j], *result.per_benchmark_sd[j]))])
                writer.writerow([model, f"{result.theta[j]:.6g}", f"{result.theta_sd[j]:.6g}",
                                 absent["per_model"][model], *more])
        if result.correlation is not None:
            with atomic_write(os.path.join(args.output_dir, "correlation.csv")) as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(["benchmark", *suite.benchmarks])
                # a pair no 3 models answered together has no estimate: blank, never 0.0000
                writer.writerows([name, *("" if tuple(sorted((a, b))) in unestimated else f"{v:.4f}"
                                          for b, v in enumerate(row))]
                                 for a, (name, row) in enumerate(zip(suite.benchmarks, result.correlation)))
        if posterior is not None:
            _write_pairs(os.path.join(args.output_dir, "correlation_pairs.csv"), posterior, suite.benchmarks,
                         unestimated)
        write_json(os.path.join(args.output_dir, "suite.json"), record)
    for name, size, d in metrics:
        shown = "fewer than 2 items" if d is None else f"DDM {d.ddm:.3f}, Max Gap {d.max_gap:.3f}, " \
                                                        f"Top-5 {d.top_k_gap_sum:.3f}"
        print(f"{name}: {size} items, {shown}")
    if posterior is not None:
        d, c = posterior.diagnostics, posterior.correlation
        for a in range(len(suite.benchmarks)):
            for b in range(a + 1, len(suite.benchmarks)):
                if (a, b) in unestimated:
                    continue
                print(f"correlation {suite.benchmarks[a]} ~ {suite.benchmarks[b]}: {c['mean'][a, b]:.3f} "
                      f"[{c['low'][a, b]:.3f}, {c['high'][a, b]:.3f}] (94% interval)")
        print(f"NUTS: max R-hat {d['max_r_hat']:.4f} ({d['worst_r_hat']}), min bulk ESS {d['min_ess_bulk']:.0f} "
              f"({d['worst_ess_bulk']}), {d['divergences']} divergences; sampling {d['sampling_time_s']:.1f} s",
              file=sys.stderr)
        from benchmeasure.irt.diagnostics import warnings_for

        for warning in warnings_for(d):
            print(f"warning: {warning}", file=sys.stderr)
    if result.hyper is not None:
        _warn_collapsed(result.hyper.collapsed(suite.benchmarks))
    for (a, b), n in unestimated.items():
        print(f"warning: correlation {suite.benchmarks[a]} ~ {suite.benchmarks[b]} not estimated: {n} model"
              f"{'s' * (n != 1)} answered both (at least {MIN_SHARED} needed); left blank in correlation.csv",
              file=sys.stderr)
    print(f"wrote {args.output_dir}: {len(suite.benchmarks)} benchmarks, {len(suite.models)} models, "
          f"{absent['total']} absent cells of {absent['cells']}, {time.perf_counter() - start:.1f} s", file=sys.stderr)
    if args.strict and posterior is not None:
        from benchmeasure.irt.diagnostics import converged

        if not converged(posterior.diagnostics):
            print("error: --strict: the correlated posterior did not converge (see the warnings above); its outputs "
                  "are written for inspection", file=sys.stderr)
            return 3
    return 0


def _warn_collapsed(collapsed: list) -> None:
    """One warning line for the hierarchical EM's spreads that collapsed (suite.hierarchical.COLLAPSED)."""
    if collapsed:
        print(f"warning: the hierarchical prior's {', '.join(collapsed)} collapsed towards 0 (too few items, or models "
              "answering alike, to estimate a spread): those parameters are pooled at their mean (docs/suites.md)",
              file=sys.stderr)


def _nuts(suite, args):
    """The multidimensional 1PL's posterior (suite.mirt), with a progress display unless --quiet."""
    import contextlib

    from benchmeasure.irt.progress import Progress
    from benchmeasure.suite.mirt import fit_correlated

    shown = None if args.quiet else Progress("multidimensional 1PL", chains=args.chains)
    with shown if shown is not None else contextlib.nullcontext():
        return fit_correlated(suite.counts, suite.trials, suite.item_benchmark, list(suite.benchmarks),
                              eta=args.eta, scales=args.scales, chains=args.chains, tune=args.tune,
                              draws=args.draws, seed=args.seed, route=args.route, parametrization=args.coordinates,
                              target_accept=args.target_accept, progress=shown, prior=args.prior,
                              **({"scale_sd": HYPER_SCALE} if args.prior == "hierarchical" else {}))


def _posterior_record(posterior, benchmarks) -> dict:
    d = posterior.diagnostics
    keys = ("max_r_hat", "worst_r_hat", "min_ess_bulk", "worst_ess_bulk", "divergences", "converged",
            "leapfrog_steps_per_draw", "compile_time_s", "sampling_time_s", "min_ess_bulk_per_s", "route",
            "difficulty_draw_time_s", "quadrature")
    out = {"settings": posterior.settings, **{k: d.get(k) for k in keys}}
    if posterior.scales is not None:
        out["scales"] = {name: {k: float(v[n]) for k, v in posterior.scales.items()}
                         for n, name in enumerate(benchmarks)}
    if posterior.sigma_b is not None:   # the hierarchical prior's spread of b per benchmark
        out["sigma_b"] = {name: {k: float(v[n]) for k, v in posterior.sigma_b.items()}
                          for n, name in enumerate(benchmarks)}
    from benchmeasure.irt.fit_folder import json_safe

    return json_safe(out)


MIN_SHARED = 3  # models answering both benchmarks, below which a correlation is not estimated (suite.predict)


def _unestimated_pairs(suite) -> dict:
    """``{(a, b): models answering both}`` for each pair of benchmarks too few models answered together (the
    method of moments then puts 0 in, and the LKJ posterior is its prior: neither is an estimate)."""
    import numpy as np

    answered = np.stack([suite.trials[:, suite.benchmark_items(name)].sum(axis=1) > 0 for name in suite.benchmarks])
    out = {}
    for a in range(len(suite.benchmarks)):
        for b in range(a + 1, len(suite.benchmarks)):
            shared = int((answered[a] & answered[b]).sum())
            if shared < MIN_SHARED:
                out[(a, b)] = shared
    return out


def _prior_only(suite, unestimated: dict):
    """(models × benchmarks) True where a model answered nothing of a benchmark and every benchmark it answered has
    no estimated correlation with it: its per-benchmark ability there would be the prior's, not an estimate."""
    import numpy as np

    names = suite.benchmarks
    answered = np.stack([suite.trials[:, suite.benchmark_items(name)].sum(axis=1) > 0 for name in names], axis=1)
    out = np.zeros_like(answered)
    for j in range(len(suite.models)):
        for b in np.flatnonzero(~answered[j]):
            out[j, b] = all(tuple(sorted((int(b), int(c)))) in unestimated for c in np.flatnonzero(answered[j]))
    return out


def _write_pairs(path, posterior, benchmarks, unestimated) -> None:
    c = posterior.correlation
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["benchmark_a", "benchmark_b", "mean", "sd", "low", "high", "r_hat", "ess_bulk"])
        for a in range(len(benchmarks)):
            for b in range(a + 1, len(benchmarks)):
                if (a, b) in unestimated:
                    writer.writerow([benchmarks[a], benchmarks[b], "", "", "", "", "", ""])
                    continue
                writer.writerow([benchmarks[a], benchmarks[b], *(f"{c[k][a, b]:.4f}" for k in ("mean", "sd", "low",
                                                                                             "high", "r_hat")),
                                 f"{c['ess_bulk'][a, b]:.0f}"])
