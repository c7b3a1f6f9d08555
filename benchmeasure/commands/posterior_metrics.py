"""DDM, Max Gap and the Top-k Gap Sum from a fit's saved difficulty draws: the paper's value, labelled,
with the per-draw intervals, a noise-aware estimate and interval, and the benchmark's resolution."""

from __future__ import annotations

import os
import sys

from benchmeasure.analyses.gap_calibration import CALIBRATION_WORLDS, GOAL_BIAS, METRICS, calibrate
from benchmeasure.analyses.noise_aware import INTERVAL_FOR, n_trials_beside, report
from benchmeasure.analyses.posterior_metrics import PROBABILITY, input_sha256, read_posterior_b
from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import command_line, package_versions, plan_outputs, result_json, write_json
from benchmeasure.base.options import DRAWS, SEED, TOP_K, add_alias, add_hdi_prob, integer
from benchmeasure.base.progress import show_progress
from benchmeasure.core.calibrated_text import interval_text
from benchmeasure.core.matrix_holes import absent_cells_beside

EXAMPLES = """\
examples:
  benchmeasure fit m.csv --n-trials 8 --output-dir my_benchmark --save-posterior
  benchmeasure posterior-metrics my_benchmark/posterior.zarr
  benchmeasure posterior-metrics draws.csv --top-k 3 --hdi-prob 0.9 --json
  benchmeasure posterior-metrics my_benchmark/posterior.zarr --output my_benchmark/metric_intervals.json
  benchmeasure posterior-metrics my_benchmark/posterior.zarr --calibrate 4 --json > calibration.json

input: an ArviZ/xarray posterior (zarr store as benchmeasure fit --save-posterior writes it, or
NetCDF; group 'posterior', variable b), an .npz with array b, or a CSV of draws (header =
item IDs, one row per draw).

what is printed, per metric (docs/gap_noise.md):
  plug-in        the paper's value: the metric of the posterior-mean difficulties (tied items'
                 draws pooled, as fit does). Noise biases it (fills gaps; a staircase at one
                 trial per cell), so it is not an estimate of the true metric.
  true value     the calibrated interval the fit made by simulation at itself (diagnostics.json;
                 docs/gap_noise.md, "Calibrated intervals") with the estimate it is built around:
                 "≈ estimate [low, high]" is for the TRUE metric, not for the plug-in.
  resolved       whether the widest gap(s) are real: edges at least 2 posterior sds apart.
  resolution     the narrowest band this fit can reveal (normalized units).

--all-intervals adds the other intervals (all are always in --json, each with what it is for):
  per draw, own min-max     the per-draw metric, each draw normalized by its own min and max;
                 a draw's range is wider than the means' range, so it can exclude the plug-in.
  per draw, fixed range     the same draws normalized by the posterior means' min and max.
  noise-aware    the true metric: draws under a population of difficulties learned from the data
                 (estimate = mean, interval = central quantiles; refused at K = 1).

--calibrate R: a slower check by full refits: can the per-draw and noise-aware intervals be trusted on
THIS benchmark? Simulates R benchmarks per world
at the fit's own abilities (ability.csv beside the posterior), number of items and trials per cell
(diagnostics.json), with true difficulties of several shapes (as_fitted: the fit's own posterior
means; normal, uniform, band with an empty 20 % band, clusters: placed at the fit's mean and
spread), fits each with the same 1PL (collapsed route, 2 chains), and prints per world the bias
and 94 % coverage of the plug-in (per-draw interval) and of the noise-aware estimate, pooled with a
Wilson interval. Binomial counts and complete matrices only. About 1 s per fit once the sampler's
kernels are cached (25 refits of ChemBench: 28 s on a 2-core machine).
"""


def parse_args(argv):
    parser = command_parser("posterior_metrics.py",
                            "DDM, Max Gap and Top-k Gap Sum with labelled posterior intervals, a noise-aware estimate "
                            "and the benchmark's resolution.", EXAMPLES)
    parser.add_argument("posterior", metavar="POSTERIOR", help="posterior.zarr, .nc, .npz or CSV of draws")
    parser.add_argument("--variable", default="b", help="difficulty variable in a NetCDF posterior (default: b)")
    parser.add_argument("--top-k", type=TOP_K, default=5, metavar="K")
    mass = add_hdi_prob(parser, "interval mass (default: 0.94)", PROBABILITY)
    add_alias(parser, "--probability", mass)  # the old name, for a release
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the noise-aware estimator (default: 0)")
    parser.add_argument("--replicates", type=integer(10, 10_000), default=200, metavar="R",
                        help="Bayesian-bootstrap refits of the learned population (default: 200)")
    parser.add_argument("--calibrate", type=integer(1, 1000), metavar="R",
                        help="also run the calibration at this fit's abilities, n and K: R replications per "
                             "world (needs ability.csv and diagnostics.json beside POSTERIOR)")
    parser.add_argument("--calibrate-worlds", default=",".join(CALIBRATION_WORLDS), metavar="LIST",
                        help=f"worlds to calibrate on, comma-separated (default: {','.join(CALIBRATION_WORLDS)})")
    parser.add_argument("--calibrate-draws", type=DRAWS, default=250, metavar="D",
                        help="warm-up and kept draws per chain of each calibration fit (default: 250)")
    parser.add_argument("--no-calibrate", action="store_true",
                        help="leave out the calibrated intervals the fit stored (diagnostics.json beside POSTERIOR): "
                             "the report is then labelled uncalibrated")
    parser.add_argument("--all-intervals", action="store_true",
                        help="also print the per-draw and noise-aware intervals (always in --json)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--output", metavar="JSON", help="also write the JSON record here")
    return parser.parse_args(argv)


def calibration_inputs(args, items, n_trials):
    """The fit's abilities (ability.csv beside POSTERIOR) and K, checked before any fit."""
    from benchmeasure.core.ability_file import read_ability_table

    worlds = [w.strip() for w in args.calibrate_worlds.split(",") if w.strip()]
    unknown = [w for w in worlds if w not in CALIBRATION_WORLDS]
    if not worlds or unknown or len(set(worlds)) != len(worlds):
        fail(f"--calibrate-worlds {args.calibrate_worlds!r}: give distinct worlds from "
             f"{', '.join(CALIBRATION_WORLDS)}")
    path = args.posterior.rstrip("/")
    folder = path if os.path.isdir(path) and not path.endswith(".zarr") else os.path.dirname(os.path.abspath(path))
    ability = os.path.join(folder, "ability.csv")
    if not os.path.isfile(ability):
        fail(f"--calibrate: no ability.csv in {folder}; give the posterior of a fit folder "
             "(benchmeasure fit ... --save-posterior writes both)")
    if n_trials is None:
        fail(f"--calibrate: no diagnostics.json with input.n_trials in {folder}; the trials per cell are needed")
    from benchmeasure.core.matrix_holes import diagnostics_beside

    holes = diagnostics_beside(os.path.join(folder, "diagnostics.json")).get("absent_cells")
    if holes is not None:  # fit_irt records absent_cells whenever the matrix had holes or K per cell
        total = holes.get("total") if isinstance(holes, dict) else None
        fail(f"--calibrate: the fit in {folder} had holes ({total if isinstance(total, int) else 'some'} absent cells "
             "or cells with fewer trials, diagnostics.json: absent_cells); the calibration simulates complete "
             f"matrices with {n_trials} trials per cell, so its coverage would not describe this fit: calibrate a "
             "fit of a complete matrix, or leave out --calibrate")
    if len(items) < 3:
        fail(f"{args.posterior}: {len(items)} items; the calibration needs at least 3")
    return list(read_ability_table(ability).values()), worlds


def attach_calibrated(args, metrics: dict) -> str:
    """Each metric's calibrated interval from the fit's diagnostics.json (``calibrated`` in its entry), when the
    fit made one at this interval mass; returns what the report says about them."""
    from benchmeasure.core.calibrated_text import LABEL, UNCALIBRATED, calibrated_beside

    if args.no_calibrate:
        return "uncalibrated (--no-calibrate)"
    path = args.posterior.rstrip("/")
    block = calibrated_beside(path if path.endswith(".zarr") or not os.path.isdir(path)
                              else os.path.join(path, "posterior.zarr"))
    if block is None:
        return UNCALIBRATED
    if "refused" in block:
        return f"not calibrated: {block['refused']}"
    found = False
    for name, entry in metrics.items():
        stored = block["metrics"].get(name)
        if stored is not None and abs(stored["probability"] - args.hdi_prob) < 1e-9:
            entry["calibrated"] = {k: stored[k] for k in ("plugin", "estimate", "low", "high", "known_world_width",
                                                          "spans_most", "consistent_worlds", "no_world_consistent")
                                   if k in stored}
            entry["calibrated"]["for"] = INTERVAL_FOR["calibrated"]
            found = True
    return LABEL if found else (f"uncalibrated at --hdi-prob {args.hdi_prob:g} / --top-k {args.top_k} (the fit "
                                "calibrated other ones)")


def main(argv=None) -> int:
    args = parse_args(argv)
    plan_outputs(files=[args.output], inputs=[args.posterior])
    if args.top_k < 1:
        fail(f"--top-k must be at least 1, got {args.top_k}")
    items, draws = read_posterior_b(args.posterior, args.variable)
    if draws.shape[0] < 2:
        fail(f"{args.posterior}: {draws.shape[0]} posterior draw; intervals need at least 2")
    store = args.posterior.rstrip("/")
    if not (store.endswith(".zarr") or not os.path.isdir(store)):
        store = os.path.join(store, "posterior.zarr")   # a fit folder: what lies beside its posterior.zarr
    n_trials = n_trials_beside(store)
    if args.calibrate:
        abilities, worlds = calibration_inputs(args, items, n_trials)
    rec = report(items, draws, top_k=args.top_k, probability=args.hdi_prob, seed=args.seed,
                 replicates=args.replicates, n_trials=n_trials, posterior_path=store)
    record = {
        "items": len(items), "draws": int(draws.shape[0]), "top_k": args.top_k,
        "interval": f"central {args.hdi_prob:g} (equal-tailed quantiles)",
        "metrics": rec["metrics"], "resolution": rec["resolution"],
        "resolution_detail": rec["resolution_detail"], "gaps": rec["gaps"], "population": rec["population"],
        "labels": rec["labels"], "means": rec["means"],
        "input": args.posterior, "input_sha256": input_sha256(args.posterior), "command": command_line(),
        "settings": {"seed": args.seed, "replicates": args.replicates, "hdi_prob": args.hdi_prob,
                     "n_trials": n_trials},
        "package_versions": package_versions(["numpy", "scipy", "xarray"]),
    }
    absent = absent_cells_beside(args.posterior)
    if absent is not None:  # the fit had holes: its b draws already carry each item's own amount of data
        record["absent_cells"] = absent
    record["calibrated_intervals"] = attach_calibrated(args, record["metrics"])
    if args.calibrate:
        show_progress("benchmeasure.analyses.gap_calibration", stream=sys.stderr)
        from benchmeasure.analyses.plugin import pooled_moments

        mean, sd, _ = pooled_moments(items, draws, store)   # the means the plug-in is computed from
        record["calibration"] = calibrate(
            abilities, mean, sd, n_trials, worlds=worlds, reps=args.calibrate,
            seed=args.seed, tune=args.calibrate_draws, draws=args.calibrate_draws, replicates=args.replicates)
        record["settings"]["calibrate"] = {"reps": args.calibrate, "worlds": worlds, "draws": args.calibrate_draws}
    if args.output:
        write_json(args.output, record)
    if args.json:
        print(result_json(record))
        return 0
    pct = f"{100 * args.hdi_prob:g}%"
    print(f"{len(items)} items, {draws.shape[0]} posterior draws; central {pct} intervals; "
          f"resolution {rec['resolution']:.3f} (narrowest band this fit can reveal, normalized units)")
    if absent is not None:
        print(f"absent cells: {absent['total']} in the fit (masked likelihood: an item answered by fewer models "
              f"has a wider posterior), {len(absent.get('per_item', {}))} items and "
              f"{len(absent.get('per_model', {}))} models with some; per model and item in --json / diagnostics.json")
    print_table(record, pct, args.all_intervals)
    if args.all_intervals:
        for name, m in record["metrics"].items():
            if not m["per_draw_min_max"]["low"] <= m["plugin"] <= m["per_draw_min_max"]["high"]:
                print(f"note: the plug-in {name} lies outside the own-min-max interval: each draw's range is wider "
                      "than the posterior means' range (tails of noise); see the fixed-range interval")
    if args.all_intervals and rec["metrics"]["ddm"]["refused"]:
        print(f"note: noise-aware estimate {rec['metrics']['ddm']['refused']}")
    if rec["metrics"]["max_gap"].get("resolved") is False:
        g = rec["gaps"][0]
        print(f"note: the widest gap ({g['lower_item']} to {g['upper_item']}) is not resolved: its edges are "
              f"{g['separation']:.1f} posterior sds apart (resolved: ≥ 2); it may be noise, not a gap"
              + ("" if g.get("extra_trials_per_model") is None else
                 f"; about {g['extra_trials_per_model']} more trials per model on these two items would resolve it "
                 "if it is as wide as it looks"))
    if args.calibrate:
        print_calibration(record["calibration"])
    return 0


def print_table(record: dict, pct: str, everything: bool) -> None:
    """One row per metric: the plug-in, the calibrated estimate and interval for the true value, whether the widest
    gaps are resolved; with ``everything`` (--all-intervals) also the per-draw and noise-aware intervals."""
    more = (f"Per draw, own min-max {pct} (per-draw metric) | Per draw, fixed range {pct} (per-draw metric) | "
            f"Noise-aware: true value ≈ estimate [{pct}] | ") if everything else ""
    print(f"| Metric | Plug-in (paper) | True value ≈ estimate [calibrated {pct}] | {more}Widest gap(s) resolved |")
    print("|---|---|---|" + ("---|---|---|" if everything else "") + "---|")
    for name, m in record["metrics"].items():
        resolved = {True: "yes", False: "NO"}.get(m.get("resolved"), "")
        if "resolved_gaps" in m:
            resolved = f"{m['resolved_gaps']} of {len(record['gaps'])}"
        cal = m.get("calibrated")
        cells = [name, f"{m['plugin']:.4f}", "uncalibrated" if cal is None else interval_text(cal, 4)]
        if everything:
            own, fixed = m["per_draw_min_max"], m["per_draw_fixed_range"]
            aware = (f"≈ {m['estimate']:.4f} [{m['low']:.4f}, {m['high']:.4f}]" if not m["refused"] else
                     "refused (K = 1)" if "K = 1" in m["refused"] else "refused (see note)")
            cells += [f"[{own['low']:.4f}, {own['high']:.4f}]", f"[{fixed['low']:.4f}, {fixed['high']:.4f}]", aware]
        print("| " + " | ".join([*cells, resolved]) + " |")
    print(f"intervals: {record['calibrated_intervals']}")
    print(f"plug-in: {record['means']}")
    if not everything:
        print("per-draw and noise-aware intervals: --all-intervals (all are in --json, each with what it is for)")


def _cell(c: dict | None, key: str = "coverage") -> str:
    return "refused | -" if c is None else f"{c['bias']:+.3f} | {c[key]}"


def print_calibration(cal: dict) -> None:
    s = cal["settings"]
    print(f"\ncalibration at this fit's {s['models']} abilities, n = {s['items']}, K = {s['n_trials']}: "
          f"{s['reps']} simulated benchmarks per world, fitted on the collapsed route ({s['chains']} chains x "
          f"{s['draws']} draws); truth = the metric of the simulated true difficulties")
    print("| world | metric | truth (mean) | plug-in bias | per-draw 94% covers | noise-aware bias | 94% covers |")
    print("|---|---|---|---|---|---|---|")
    for world, cell in cal["worlds"].items():
        for m in METRICS:
            c = cell[m]
            print(f"| {world} | {m} | {c['truth_mean']:.3f} | {_cell(c['plugin'])} | {_cell(c.get('new'))} |")
    for label, key in (("per-draw interval (plug-in)", "plugin"), ("noise-aware interval", "noise_aware")):
        for m, v in cal[key].items():
            if v is None:
                print(f"{label}, {m}: refused at K = 1")
                continue
            under = ", ".join(v["under_covering"]) or "none"
            biased = ", ".join(v["biased"]) or "none"
            print(f"{label}, {m}: covers {v['coverage']} (94% Wilson interval {v['coverage_low']:.2f}-"
                  f"{v['coverage_high']:.2f}); covers < 85% in: {under}"
                  + ("" if m == "top5_gap_sum" else f"; |bias| over the goal ({GOAL_BIAS[m]:g}) in: {biased}"))
