"""Growing Pains: benchmarks arrive in order; held-out models answer only anchors; predict their accuracy.

Reads a suite of long responses (``model,item_id[,trial],correct[,benchmark]``; ``.gz`` allowed; holes and K per
cell allowed), runs the protocol of :mod:`benchmeasure.suite.chain` and prints, per number of anchors and
method, the mean absolute error (points), Spearman ρ and the coverage of the prediction intervals.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import sys
import time

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import all_or_nothing, atomic_write, plan_outputs, provenance, write_json
from benchmeasure.base.options import OPEN_PROBABILITY, SEED, add_hdi_prob, add_quiet, integer
from benchmeasure.core.fixed_scale_inputs import input_records
from benchmeasure.irt.priors import add_option as add_prior_option

EXAMPLES = """\
examples:
  benchmeasure chain data/mmlu_pro/responses.csv.gz --order math,physics,law --anchors 10,25,50,100 \\
      --splits 10 --seed 1 --output-dir runs/mmlu_pro_chain
  benchmeasure chain data/zeroeval/gsm8k.csv.gz data/zeroeval/math_l5.csv.gz --order gsm8k,math_l5 \\
      --anchors 10,25,50,100 --splits 10 --seed 1 --output-dir runs/zeroeval_chain
  benchmeasure chain responses.csv --item-benchmarks item_benchmark.csv --seed 1 --output-dir runs/chain
  benchmeasure chain data/zeroeval/gsm8k.csv.gz data/zeroeval/math_l5.csv.gz --order gsm8k,math_l5 \\
      --anchors 100 --splits 5 --prior hierarchical --output-dir runs/zeroeval_chain_hier

input: one or more CSVs with columns model,item_id,correct and optionally trial and benchmark (a file without a
  benchmark column is one benchmark named after the file: gsm8k.csv.gz → gsm8k). An empty correct, or no row,
  is an absent cell; each cell has as many trials as rows (distinct trial IDs).
output: DIR/predictions.csv (split,step,benchmark,model,method,n_anchors,predicted,low,high,observed),
  DIR/summary.csv (per N and method: MAE in points, Spearman rho, coverage, each with its standard error over
  splits), DIR/difficulty/<benchmark>.csv (item,b_mean: every item calibrated on every model, one scale),
  DIR/chain.json (settings, absent cells per model, inputs and their SHA-256).
methods: anchor_accuracy (raw), concurrent (refit every item each step, one ability), fixed (earlier items
  fixed, one ability), fixed_correlated (earlier items fixed, one ability per benchmark, correlated: the
  empirical-Bayes covariance plugged in; the default, seconds), with --blend also blended (lambda x raw +
  (1 - lambda) x fixed_correlated, lambda chosen by 5-fold cross-validation over the calibration models, after
  gp-IRT of Polo et al. 2024, tinyBenchmarks; its interval from their cross-validated residuals; chain.json:
  blend; five more calibrations per split and step, 4-10 times the time), and with
  --lkj-steps also lkj_correlated (the
  LKJ model's posterior, fitted by NUTS on the calibration models at those steps, every item refit; about
  1-2 min per split and step on 2 cores: --lkj-steps last on MMLU-Pro's 14 categories is the measured setting).
  With --lkj-steps a second table compares every method on the steps where lkj_correlated ran.
prior: paper (default) calibrates with theta ~ N(0, 1) on a 61-point grid and b ~ N(0, 3^2); hierarchical with
  theta ~ N(0, sigma_theta) on a 121-point grid over -12..12 and b ~ N(mu_b, sigma_b) per benchmark, the
  hyperparameters estimated with the difficulties (docs/anchored.md); lkj_correlated fits the paper's prior only.
"""


PRIOR_TEXT = {
    "paper": "theta ~ Normal(0, 1) integrated on a 61-point grid; b ~ Normal(0, 3^2), posterior mode",
    "hierarchical": "theta ~ Normal(0, sigma_theta) integrated on a 121-point grid over -12..12; "
                    "b ~ Normal(mu_b, sigma_b) per benchmark, posterior mode; sigma_theta, sigma_b ~ HalfNormal(3), "
                    "mu_b ~ Normal(0, 3), estimated with the difficulties by EM (b's conditional posteriors by "
                    "Laplace); hyperparameters: those of the calibration on every model that wrote difficulty/"}


def _lkj_steps(text: str):
    text = text.strip()
    if text in ("last", "all"):
        return text
    parse = integer(1, 100_000)
    try:
        steps = sorted({parse(part.strip()) for part in text.split(",") if part.strip()})
    except argparse.ArgumentTypeError:
        steps = []
    if not steps:
        raise argparse.ArgumentTypeError(f"expected last, all or step numbers separated by commas, got {text!r}")
    return steps



def _anchor_list(text: str) -> list:
    parse = integer(1, 1_000_000)
    values = [parse(part.strip()) for part in text.split(",") if part.strip()]
    if not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expected distinct positive integers separated by commas, got {text!r}")
    return values


def parse_args(argv):
    parser = command_parser("benchmeasure chain", __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("responses", nargs="+", metavar="RESPONSES_CSV", help="long responses (.csv or .csv.gz)")
    parser.add_argument("--order", default=None, metavar="B1,B2,...",
                        help="benchmarks in order of arrival (default: as they first appear); others are left out")
    parser.add_argument("--anchors", type=_anchor_list, default=[10, 25, 50, 100], metavar="N1,N2,...",
                        help="anchors per benchmark to compare (default 10,25,50,100)")
    parser.add_argument("--splits", type=integer(1, 1000), default=10, help="random splits of the models (default 10)")
    parser.add_argument("--seed", type=SEED, default=0, metavar="S",
                        help="random seed of the splits and anchors (default 0)")
    parser.add_argument("--holdout", type=OPEN_PROBABILITY, default=0.25,
                        help="share of models held out in each split (default 0.25)")
    add_hdi_prob(parser, "mass of the prediction intervals (default 0.90)", 0.90, None)
    parser.add_argument("--item-benchmarks", default=None, metavar="CSV",
                        help="item_id,benchmark file naming the benchmark of items whose file has no benchmark column")
    parser.add_argument("--blend", action="store_true",
                        help="add the blended method (raw anchor accuracy and fixed_correlated weighted by "
                        "cross-validation over the calibration models; 4-10 times the time; default: not run)")
    parser.add_argument("--lkj-steps", type=_lkj_steps, default=None, metavar="last|all|S1,S2,...",
                        help="add the lkj_correlated method at these steps (a NUTS fit per split and step; "
                        "default: not run)")
    parser.add_argument("--lkj-draws", type=integer(50, 100_000), default=300, metavar="N",
                        help="with --lkj-steps: warm-up and draws per chain, 2 chains (default 300)")
    add_prior_option(parser, "the calibration under theta ~ N(0, sigma_theta) and, per benchmark, b ~ N(mu_b, "
                     "sigma_b), the hyperparameters estimated with the difficulties",
                     "theta ~ N(0, 1), b ~ N(0, 3^2), as the chain always calibrated")
    parser.add_argument("--output-dir", required=True, metavar="DIR", help="where to write the results")
    add_quiet(parser)
    args = parser.parse_args(argv)
    if args.prior != "paper" and args.lkj_steps is not None:
        fail(f"--prior {args.prior}: --lkj-steps runs the LKJ model on its collapsed route, which integrates b out "
             "under Normal(0, 1) only; leave --lkj-steps out (fit-suite --abilities correlated --route joint fits the "
             f"LKJ model under --prior {args.prior})")
    return args


def _file_name(benchmark: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", benchmark).strip("._") or "benchmark"


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    inputs = [*args.responses, args.item_benchmarks]
    fixed_names = ["predictions.csv", "summary.csv", "chain.json"]
    plan_outputs(folders=[(args.output_dir, fixed_names)], inputs=inputs)

    from benchmeasure.base.progress import show_progress
    from benchmeasure.suite.chain import COLUMNS, run_chain, single_thread, summarize
    from benchmeasure.suite.chain_blend import FOLDS
    from benchmeasure.suite.reader import read_item_benchmarks, read_suite

    mapping = read_item_benchmarks(args.item_benchmarks) if args.item_benchmarks else None
    suite = read_suite(args.responses, mapping)
    order = suite.benchmarks if args.order is None else [name.strip() for name in args.order.split(",")]
    unknown = [name for name in order if name not in suite.benchmarks]
    if unknown:
        fail(f"--order: benchmark {unknown[0]!r} is in no responses file (benchmarks: {', '.join(suite.benchmarks)})")
    if len(set(order)) != len(order):
        fail("--order: a benchmark is named twice")
    if len(suite.models) < 4:
        fail(f"need at least 4 models to hold some out, found {len(suite.models)}")
    sizes = {name: len(suite.benchmark_items(name)) for name in order}
    smallest = min(sizes, key=sizes.get)
    too_many = [n for n in args.anchors if n >= sizes[smallest]]
    if too_many:
        fail(f"--anchors {max(too_many)}: benchmark {smallest!r} has {sizes[smallest]} items; anchors must leave items "
             f"to predict (at most {sizes[smallest] - 1} here), else the prediction is the observation itself")
    names = {name: f"{_file_name(name)}.csv" for name in order}
    if len(set(names.values())) != len(names):
        fail("two benchmarks' names give the same file name under difficulty/; rename one")
    plan_outputs(folders=[(args.output_dir, fixed_names), (os.path.join(args.output_dir, "difficulty"),
                                                           list(names.values()))], inputs=inputs)
    lkj, lkj_fits, skipped, blend_log = None, [], [], []
    if args.lkj_steps is not None:
        steps = args.lkj_steps
        if isinstance(steps, str):
            steps = [len(order)] if steps == "last" else list(range(1, len(order) + 1))
        if max(steps) > len(order):
            fail(f"--lkj-steps: step {max(steps)} is beyond the {len(order)} benchmarks of --order")
        lkj = {"steps": set(steps), "draws": args.lkj_draws, "keep": 50}
    if not args.quiet:
        show_progress("benchmeasure.suite", stream=sys.stderr)
    with single_thread():
        from benchmeasure.suite.chain import calibrate_suite

        rows = run_chain(suite, order, args.anchors, args.splits, args.seed, holdout=args.holdout, level=args.hdi_prob,
                         lkj=lkj, lkj_fits=lkj_fits, skipped=skipped, prior=args.prior,
                         blend_log=blend_log if args.blend else None)
        if not rows:
            fail("no prediction could be made: in every split the calibration models answered too few items of each "
                 "benchmark for the --anchors asked; use fewer anchors")
        summary = summarize(rows, args.anchors)
        at_lkj = summarize([r for r in rows if r[1] in lkj["steps"]], args.anchors) if lkj else None
        difficulty, hyper = calibrate_suite(suite, order, prior=args.prior)
    absent = suite.absent_cells()
    record = {
        "settings": {"order": order, "anchors": args.anchors, "splits": args.splits, "seed": args.seed,
                     "holdout": args.holdout, "level": args.hdi_prob, "anchor_strategy": "stratified",
                     "prior": PRIOR_TEXT[args.prior], "prior_name": args.prior,
                     **({"hyperparameters": hyper} if hyper else {})},
        "models": len(suite.models), "items": {name: len(suite.benchmark_items(name)) for name in order},
        "absent_cells": {"total": absent["total"], "of": absent["cells"],
                         "per_model": {m: c for m, c in absent["per_model"].items() if c},
                         "items_with_absent_cells": sum(1 for c in absent["per_item"].values() if c)},
        "summary": summary,
        **({"blend": {"folds": FOLDS, "method": "lambda x anchor_accuracy + (1 - lambda) x fixed_correlated; lambda "
                  "minimizes the squared error of the calibration models' cross-validated predictions, moved towards 1 "
                  "by its standard error (positive-part shrinkage), within [0, 1]; interval: t quantile (models - 1 "
                  "degrees of freedom) x scale x the raw estimator's sd (docs/suites.md)",
                  "choices": blend_log}} if args.blend else {}),
        "left_out": [{"split": sp, "step": st, "benchmark": b, "n_anchors": n, "answered_items": a}
                     for sp, st, b, n, a in skipped],
        **({"lkj": {"steps": sorted(lkj["steps"]), "chains": 2, "tune": args.lkj_draws, "draws": args.lkj_draws,
                    "draws_used": lkj["keep"], "fits": lkj_fits, "summary_at_lkj_steps": at_lkj}} if lkj else {}),
        "inputs": input_records(inputs), **provenance(["numpy", "scipy", "pandas"]),
        "wall_time_s": time.perf_counter() - start,
    }
    with all_or_nothing():
        with atomic_write(os.path.join(args.output_dir, "predictions.csv")) as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(COLUMNS)
            writer.writerows((*row[:6], *(f"{v:.6f}" for v in row[6:])) for row in rows)
        with atomic_write(os.path.join(args.output_dir, "summary.csv")) as handle:
            writer = csv.writer(handle, lineterminator="\n")
            keys = list(summary[0])
            writer.writerow(keys)
            writer.writerows(["" if s[k] is None else (f"{s[k]:.6g}" if isinstance(s[k], float) else s[k])
                              for k in keys] for s in summary)
        for name in order:
            with atomic_write(os.path.join(args.output_dir, "difficulty", names[name])) as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(["item", "b_mean"])
                writer.writerows((suite.items[i], f"{difficulty[i]:.8g}") for i in suite.benchmark_items(name))
        write_json(os.path.join(args.output_dir, "chain.json"), record)
    if hyper and hyper["collapsed"]:
        print(f"warning: the hierarchical prior's {', '.join(hyper['collapsed'])} collapsed towards 0 (too few items, "
              "or models answering alike, to estimate a spread): those parameters are pooled at their mean "
              "(docs/suites.md)", file=sys.stderr)
    if skipped:
        print(f"warning: {len(skipped)} (split, step, benchmark, N) prediction set(s) left out: the calibration models "
              "answered too few of the benchmark's items for N anchors and an item left to predict (chain.json: "
              "left_out)", file=sys.stderr)
    print(format_summary(summary, args.hdi_prob))
    if at_lkj:
        print(f"\nat the steps where lkj_correlated ran ({', '.join(map(str, sorted(lkj['steps'])))}), every method "
              "on the same predictions:")
        print(format_summary(at_lkj, args.hdi_prob))
    print(f"wrote {args.output_dir}/predictions.csv ({len(rows)} rows), summary.csv, difficulty/ "
          f"({len(order)} benchmarks), chain.json in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0



def format_summary(summary: list, level: float) -> str:
    def cell(s, key, digits):
        value, se = s[key], s[f"{key}_se"]
        if value is None:
            return "—"
        return f"{value:.{digits}f}" + (f" ± {se:.{digits}f}" if se is not None else "")

    header = f"{'N':>5}  {'method':<17} {'MAE (points)':>14} {'Spearman rho':>15} {f'{level:.0%} coverage':>15}"
    lines = [header]
    for s in summary:
        lines.append(f"{s['n_anchors']:>5}  {s['method']:<17} {cell(s, 'mae_points', 2):>14} "
                     f"{cell(s, 'spearman', 3):>15} {cell(s, 'coverage', 3):>15}")
    lines.append("(mean ± standard error over splits; rho: mean over (split, step, benchmark) groups of "
                 "held-out models)")
    return "\n".join(lines)
