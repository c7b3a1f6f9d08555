"""Mass fill: fill a benchmark's difficulty gaps one after another with BenchFill until a target Max Gap or a budget.

Each step fills the widest gap of the benchmark as it stands (originals plus the items already
inserted) with the BenchFill loop, then recomputes the gaps. Writes filled_benchmark.json
(originals as <BENCH>-origin-NNN, then <BENCH>-fill-001, ...), mass_fill_records.csv and
mass_fill_summary.json in the run folder. The logic is benchmeasure.benchfill.mass_fill.
"""

from __future__ import annotations

import argparse

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.options import integer, number

EXAMPLES = """examples:
  # create a run folder: stop at Max Gap 0.05, or after 20 items or 5000 model calls, whichever comes first
  benchmeasure mass-fill init --config propose/configs/aime26.toml --name mass1 \\
      --target-max-gap 0.05 --max-items 20 --max-calls 5000
  benchmeasure mass-fill run propose/results/aime26/mass1     # start, or resume after a kill
  benchmeasure mass-fill run propose/results/aime26/mass1 --max-items 40   # raise a budget, go on
  benchmeasure mass-fill status propose/results/aime26/mass1  # read-only progress
  BENCHMARK=aime26 bash run_experiment.sh mass-fill mass1 --max-items 20     # init if needed, then run

At least one budget (--max-items, --max-calls, --max-rounds) is required; the search settings
(rounds per gap, parents, children, references, tolerance, seed) come from the config's [search].
"""


def add_limits(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("stop rules (any one that is met stops; on 'run' they replace the stored ones)")
    group.add_argument("--target-max-gap", type=number(0.0, 1.0, open_low=True, open_high=True),
                       help="stop once the Max Gap is at most this (0 < x < 1)")
    group.add_argument("--max-items", type=integer(1, 10_000_000), help="stop after inserting this many items")
    group.add_argument("--max-calls", type=integer(1, 10**12),
                       help="model calls to spend at most (rewrites, solves, rollouts)")
    group.add_argument("--max-rounds", type=integer(1, 10_000_000),
                       help="BenchFill rounds to spend at most, all gaps together")


def limits_of(args) -> dict:
    return {"target_max_gap": args.target_max_gap, "max_items": args.max_items, "max_calls": args.max_calls,
            "max_rounds": args.max_rounds}


def main(argv=None) -> int:
    parser = command_parser(None, __doc__.splitlines()[0], EXAMPLES)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("init", help="create a mass-fill run folder with the resolved config and stop rules",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="benchmark config (propose/configs/<benchmark>.toml)")
    p.add_argument("--name", help="run name (default: mass-<date>-<time>)")
    p.add_argument("--results", help="results root (default: $BENCHFILL_RESULTS, else propose/results)")
    add_limits(p)
    p = sub.add_parser("run", help="start or resume mass fill in a run folder", epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder")
    add_limits(p)
    p = sub.add_parser("status", help="print a mass fill's progress (read-only)")
    p.add_argument("folder")
    args = parser.parse_args(argv)
    # Imported after parsing so that --help answers at once (the loop pulls in the openai SDK).
    from benchmeasure.base.progress import show_progress
    from benchmeasure.benchfill import mass_fill
    from benchmeasure.benchfill.config import results_root
    from benchmeasure.verifier.llm_client import LLMCallError

    if args.command == "init":
        limits = mass_fill.Limits(**limits_of(args))
        print(mass_fill.init_mass(args.config, args.results or results_root(), args.name, limits))
    elif args.command == "run":
        show_progress("benchmeasure.benchfill")
        try:
            mass_fill.run_mass(args.folder, limits_of(args))
        except LLMCallError as exc:
            fail(f"{exc}; fix the endpoint and rerun 'run' to resume (finished calls are kept)")
    else:
        print(mass_fill.status_mass(args.folder))
    return 0

