"""Posterior 94% intervals of DDM, Max Gap and the Top-k Gap Sum from a fit's saved difficulty draws."""

from __future__ import annotations

import argparse

from benchmeasure.analyses.posterior_metrics import PROBABILITY, input_sha256, posterior_intervals, read_posterior_b
from benchmeasure.base.errors import ArgumentParser, fail
from benchmeasure.base.files import command_line, package_versions, plan_outputs, result_json, write_json
from benchmeasure.base.options import OPEN_PROBABILITY, TOP_K
from benchmeasure.core.metrics import diagnose

EXAMPLES = """\
examples:
  python scripts/fit_irt.py m.csv --n-trials 8 --output-dir my_benchmark --save-posterior
  python scripts/posterior_metrics.py my_benchmark/posterior.zarr
  python scripts/posterior_metrics.py draws.csv --top-k 3 --probability 0.9 --json
  python scripts/posterior_metrics.py my_benchmark/posterior.zarr --output my_benchmark/metric_intervals.json

input: an ArviZ/xarray posterior (zarr store as fit_irt.py --save-posterior writes it, or
NetCDF; group 'posterior', variable b), an .npz with array b, or a CSV of draws (header =
item IDs, one row per draw). Each draw is min-max normalized on its own and the
metrics are computed per draw; the interval is the central (equal-tailed) one. The
"at posterior mean" column is the paper's point estimate (metrics of the mean of b).
"""


def parse_args(argv):
    parser = ArgumentParser(
        prog="posterior_metrics.py",
        description="Posterior intervals of DDM, Max Gap and Top-k Gap Sum, one value per posterior draw.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("posterior", metavar="POSTERIOR", help="posterior.zarr, .nc, .npz or CSV of draws")
    parser.add_argument("--variable", default="b", help="difficulty variable in a NetCDF posterior (default: b)")
    parser.add_argument("--top-k", type=TOP_K, default=5, metavar="K")
    parser.add_argument("--probability", type=OPEN_PROBABILITY, default=PROBABILITY,
                        help="interval mass (default: 0.94)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--output", metavar="JSON", help="also write the JSON record here")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    plan_outputs(files=[args.output], inputs=[args.posterior])
    if args.top_k < 1:
        fail(f"--top-k must be at least 1, got {args.top_k}")
    items, draws = read_posterior_b(args.posterior, args.variable)
    intervals = posterior_intervals(draws, args.top_k, args.probability)
    point = diagnose(list(draws.mean(axis=0)), top_k=args.top_k, where=args.posterior).as_dict()
    record = {
        "items": len(items), "draws": int(draws.shape[0]), "top_k": args.top_k,
        "interval": f"central {args.probability:g} (equal-tailed quantiles)",
        "metrics": {name: {**iv.as_dict(), "at_posterior_mean": point[name]} for name, iv in intervals.items()},
        "input": args.posterior, "input_sha256": input_sha256(args.posterior), "command": command_line(),
        "package_versions": package_versions(["numpy", "xarray"]),
    }
    if args.output:
        write_json(args.output, record)
    if args.json:
        print(result_json(record))
        return 0
    pct = f"{100 * args.probability:g}%"
    print(f"{len(items)} items, {draws.shape[0]} posterior draws; central {pct} intervals")
    print(f"| Metric | At posterior mean | Posterior mean | Median | {pct} interval |")
    print("|---|---|---|---|---|")
    for name, m in record["metrics"].items():
        print(f"| {name} | {m['at_posterior_mean']:.4f} | {m['mean']:.4f} | {m['median']:.4f} | "
              f"[{m['low']:.4f}, {m['high']:.4f}] |")
    return 0

