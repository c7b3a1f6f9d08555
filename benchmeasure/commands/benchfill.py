"""BenchFill runs: create a run folder, start or resume it, report its progress (paper, Section 4).

Usually driven by ``run_experiment.sh``; the logic lives in ``benchmeasure.benchfill``. Progress
(the ``benchmeasure.benchfill`` loggers) is shown on stdout; ``sim-data`` shows its fit's on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import check_output_folder
from benchmeasure.base.options import SEED, integer
from benchmeasure.base.progress import show_progress
from benchmeasure.benchfill.config import results_root

EXAMPLES = """examples:
  benchmeasure benchfill init --config propose/configs/aime24.toml --name first
  benchmeasure benchfill init --config aime24 --name first   # a shipped config by name, from any folder
  benchmeasure benchfill init --config ~/my_bench.toml --results /data/benchfill   # a config anywhere
  benchmeasure benchfill run propose/results/aime24/first
  benchmeasure benchfill where --benchmark aime24    # the newest run folder of aime24
  benchmeasure benchfill status propose/results/aime24/first
  benchmeasure benchfill sim-data --folder /tmp/simbench --seed 1
"""


def main(argv=None) -> int:
    parser = command_parser(None, __doc__.splitlines()[0], EXAMPLES)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("init", help="create a run folder with the resolved config")
    p.add_argument("--config", required=True,
                   help="benchmark config: any path, or a shipped one by name (aime24, amc23, …; in a checkout "
                        "propose/configs/<name>.toml); its relative data paths are read under the checkout, "
                        "else the working folder")
    p.add_argument("--name", help="run name, one plain folder name (default: run-<date>-<time>)")
    p.add_argument("--results", default=str(results_root()),
                   help="results root (default: $BENCHFILL_RESULTS, else %(default)s)")
    p = sub.add_parser("run", help="start or resume a run")
    p.add_argument("folder")
    p = sub.add_parser("status", help="print a run's progress (read-only)")
    p.add_argument("folder")
    p = sub.add_parser("where", help="print a run folder's path: the newest run of a benchmark, or the run NAME")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--benchmark", help="benchmark name, as in its config's [benchmark] name")
    group.add_argument("--config", help="benchmark config (its [benchmark] name is used)")
    p.add_argument("--name", help="the run of this name (printed whether or not it exists yet)")
    p.add_argument("--results", default=str(results_root()),
                   help="results root (default: $BENCHFILL_RESULTS, else %(default)s)")
    p = sub.add_parser("sim-data", help="write the synthetic benchmark of simulation mode and calibrate it")
    p.add_argument("--folder", required=True)
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--items", type=integer(2, 1_000_000), default=40)
    p.add_argument("--truth", action="store_true",
                   help="calibrate from the ground truth instead of the IRT fit (fast tests only)")
    args = parser.parse_args(argv)
    from benchmeasure.benchfill import runner  # after parsing: --help and usage errors stay instant
    from benchmeasure.verifier.llm_client import LLMCallError

    if args.command == "init":
        print(runner.init_run(args.config, args.results, args.name))
    elif args.command == "where":
        from benchmeasure.benchfill.config import check_name, load_config
        from benchmeasure.benchfill.run_folder import latest

        bench = check_name(args.benchmark, "--benchmark") if args.benchmark else load_config(args.config).benchmark.name
        if args.name:
            print(Path(args.results).absolute() / bench / check_name(args.name, "run name"))
        else:
            print(latest(args.results, bench))
    elif args.command == "run":
        show_progress("benchmeasure.benchfill")
        try:
            runner.run(args.folder)
        except LLMCallError as exc:
            fail(f"{exc}; fix the endpoint and rerun 'run' to resume (finished calls are kept)")
    elif args.command == "status":
        print(runner.status(args.folder))
    else:
        from benchmeasure.benchfill.abilities import fit_abilities
        from benchmeasure.serving.sim.dataset import calibrate_from_fit, make_sim_benchmark

        if args.items < 10:
            fail(f"--items must be at least 10, got {args.items}")
        check_output_folder(args.folder)
        config = make_sim_benchmark(args.folder, args.seed, n_items=args.items, truth=args.truth)
        if not args.truth:
            folder = Path(args.folder)
            show_progress("benchmeasure.benchfill", sys.stderr)
            _, fit = fit_abilities(folder / "response_matrix.csv", 32, folder / "ability_cache", seed=args.seed)
            calibrate_from_fit(folder, fit)
        print(config)
    return 0

