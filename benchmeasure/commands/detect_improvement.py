"""Test whether a model improved between two runs on a benchmark (paper Table 12)."""

from __future__ import annotations

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import plan_outputs, provenance, result_json, sha256_file, write_json
from benchmeasure.base.options import OPEN_PROBABILITY, SEED, integer

EXAMPLES = """\
examples:
  benchmeasure detect responses.csv
  benchmeasure detect responses.csv --permutations 100000 --seed 7 --json
  benchmeasure detect responses.csv --output detection.json

input: CSV with columns model,item_id,trial,correct,condition (condition: pre or post);
every item a model answered needs rollouts in both conditions. Each model is tested alone.

test: within each item, rollouts are reassigned between pre and post keeping each
condition's count (drawn exactly as a hypergeometric count); statistic = change in mean
per-item accuracy; one-sided p = (1 + #{permuted >= observed}) / (1 + B).
"""


def parse_args(argv):
    parser = command_parser("detect_improvement.py",
                            "One-sided stratified randomization test of an accuracy gain between pre and post "
                            "rollouts.", EXAMPLES)
    parser.add_argument("responses", metavar="RESPONSES_CSV", help="model,item_id,trial,correct,condition rows")
    parser.add_argument("--permutations", type=integer(1, 100_000_000), default=100_000, metavar="B",
                        help="random reassignments (default: 100000)")
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the reassignments (default: 0)")
    parser.add_argument("--alpha", type=OPEN_PROBABILITY, default=0.05,
                        help="level for the 'detected' flag (default: 0.05)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--output", metavar="JSON", help="also write the JSON record to this file")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from benchmeasure.analyses.detection import read_pre_post, stratified_test  # pandas: after parsing
    plan_outputs(files=[args.output], inputs=[args.responses])
    if not 0 < args.alpha < 1:
        fail(f"--alpha must lie in (0, 1), got {args.alpha}")
    if args.permutations < 1:
        fail(f"--permutations must be at least 1, got {args.permutations}")
    data = read_pre_post(args.responses)
    settings = {"input": args.responses, "input_sha256": sha256_file(args.responses),
                **provenance(["numpy", "pandas"])}
    records = []
    for model, tallies in data.items():
        result = stratified_test(tallies, args.permutations, args.seed)
        records.append({"model": model, **result.as_dict(args.alpha), **settings})
    payload = records[0] if len(records) == 1 else records
    if args.output:
        write_json(args.output, payload)
    if args.json:
        print(result_json(payload))
        return 0
    print("| Model | Items | Gain (points) | One-sided p | Detected |")
    print("|---|---|---|---|---|")
    for r in records:
        print(f"| {r['model']} | {r['items']} | {r['gain_points']:+.3f} | {r['p_value']:.6f} | "
              f"{'✓' if r['detected'] else '×'} |")
    print(f"B = {args.permutations} permutations, seed {args.seed}, detected at p < {args.alpha}")
    return 0

