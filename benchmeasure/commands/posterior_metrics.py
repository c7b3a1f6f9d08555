"""DDM, Max Gap and the Top-k Gap Sum from a fit's saved difficulty draws: the paper's value, labelled,
with the per-draw intervals, a noise-aware estimate and interval, and the benchmark's resolution."""

from __future__ import annotations

import argparse

from benchmeasure.analyses.noise_aware import n_trials_beside, report
from benchmeasure.analyses.posterior_metrics import PROBABILITY, input_sha256, read_posterior_b
from benchmeasure.base.errors import ArgumentParser, fail
from benchmeasure.base.files import command_line, package_versions, plan_outputs, result_json, write_json
from benchmeasure.base.options import OPEN_PROBABILITY, SEED, TOP_K, add_alias, integer
from benchmeasure.core.matrix_holes import absent_cells_beside

EXAMPLES = """\
examples:
  benchmeasure fit m.csv --n-trials 8 --output-dir my_benchmark --save-posterior
  benchmeasure posterior-metrics my_benchmark/posterior.zarr
  benchmeasure posterior-metrics draws.csv --top-k 3 --hdi-prob 0.9 --json
  benchmeasure posterior-metrics my_benchmark/posterior.zarr --output my_benchmark/metric_intervals.json

input: an ArviZ/xarray posterior (zarr store as benchmeasure fit --save-posterior writes it, or
NetCDF; group 'posterior', variable b), an .npz with array b, or a CSV of draws (header =
item IDs, one row per draw).

what is printed, per metric (docs/gap_noise.md):
  plug-in        the paper's value: the metric of the posterior-mean difficulties. Noise
                 biases it (fills gaps; a staircase at one trial per cell).
  per draw, own min-max     each draw normalized by its own min and max; a draw's range
                 is wider than the means' range, so this interval can exclude the plug-in.
  per draw, fixed range     the same draws normalized by the posterior means' min and max.
  noise-aware    draws under a population of difficulties learned from the data, with its
                 uncertainty (estimate = mean, interval = central quantiles); its bias and
                 coverage are measured in docs/gap_noise.md.
  resolution     the narrowest band this fit can reveal (normalized units); a gap narrower
                 than about this, or whose edges are < 2 posterior sds apart, is not resolved.
"""


def parse_args(argv):
    parser = ArgumentParser(
        prog="posterior_metrics.py",
        description="DDM, Max Gap and Top-k Gap Sum with labelled posterior intervals, a noise-aware estimate "
                    "and the benchmark's resolution.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("posterior", metavar="POSTERIOR", help="posterior.zarr, .nc, .npz or CSV of draws")
    parser.add_argument("--variable", default="b", help="difficulty variable in a NetCDF posterior (default: b)")
    parser.add_argument("--top-k", type=TOP_K, default=5, metavar="K")
    mass = parser.add_argument("--hdi-prob", type=OPEN_PROBABILITY, default=PROBABILITY, metavar="P",
                               help="interval mass (default: 0.94)")
    add_alias(parser, "--probability", mass)  # the old name, for a release
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the noise-aware estimator (default: 0)")
    parser.add_argument("--replicates", type=integer(10, 10_000), default=200, metavar="R",
                        help="Bayesian-bootstrap refits of the learned population (default: 200)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--output", metavar="JSON", help="also write the JSON record here")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    plan_outputs(files=[args.output], inputs=[args.posterior])
    if args.top_k < 1:
        fail(f"--top-k must be at least 1, got {args.top_k}")
    items, draws = read_posterior_b(args.posterior, args.variable)
    if draws.shape[0] < 2:
        fail(f"{args.posterior}: {draws.shape[0]} posterior draw; intervals need at least 2")
    n_trials = n_trials_beside(args.posterior)
    rec = report(items, draws, top_k=args.top_k, probability=args.hdi_prob, seed=args.seed,
                 replicates=args.replicates, n_trials=n_trials)
    record = {
        "items": len(items), "draws": int(draws.shape[0]), "top_k": args.top_k,
        "interval": f"central {args.hdi_prob:g} (equal-tailed quantiles)",
        "metrics": rec["metrics"], "resolution": rec["resolution"],
        "resolution_detail": rec["resolution_detail"], "gaps": rec["gaps"], "population": rec["population"],
        "labels": rec["labels"],
        "input": args.posterior, "input_sha256": input_sha256(args.posterior), "command": command_line(),
        "settings": {"seed": args.seed, "replicates": args.replicates, "hdi_prob": args.hdi_prob,
                     "n_trials": n_trials},
        "package_versions": package_versions(["numpy", "scipy", "xarray"]),
    }
    absent = absent_cells_beside(args.posterior)
    if absent is not None:  # the fit had holes: its b draws already carry each item's own amount of data
        record["absent_cells"] = absent
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
    print(f"| Metric | Plug-in (paper) | Per draw, own min-max {pct} | Per draw, fixed range {pct} | "
          f"Noise-aware estimate [{pct}] | Widest gap(s) resolved |")
    print("|---|---|---|---|---|---|")
    for name, m in record["metrics"].items():
        own, fixed = m["per_draw_min_max"], m["per_draw_fixed_range"]
        resolved = {True: "yes", False: "NO"}.get(m.get("resolved"), "")
        if "resolved_gaps" in m:
            resolved = f"{m['resolved_gaps']} of {len(rec['gaps'])}"
        if m["refused"]:
            aware = "refused (K = 1)" if "K = 1" in m["refused"] else "refused (see note)"
        else:
            aware = f"{m['estimate']:.4f} [{m['low']:.4f}, {m['high']:.4f}]"
        print(f"| {name} | {m['plugin']:.4f} | [{own['low']:.4f}, {own['high']:.4f}] | "
              f"[{fixed['low']:.4f}, {fixed['high']:.4f}] | {aware} | {resolved} |")
    for name, m in record["metrics"].items():
        if not m["per_draw_min_max"]["low"] <= m["plugin"] <= m["per_draw_min_max"]["high"]:
            print(f"note: the plug-in {name} lies outside the own-min-max interval: each draw's range is wider "
                  "than the posterior means' range (tails of noise); see the fixed-range interval")
    if rec["metrics"]["ddm"]["refused"]:
        print(f"note: noise-aware estimate {rec['metrics']['ddm']['refused']}")
    if rec["metrics"]["max_gap"].get("resolved") is False:
        g = rec["gaps"][0]
        print(f"note: the widest gap ({g['lower_item']} to {g['upper_item']}) is not resolved: its edges are "
              f"{g['separation']:.1f} posterior sds apart (resolved: ≥ 2); it may be noise, not a gap")
    return 0
