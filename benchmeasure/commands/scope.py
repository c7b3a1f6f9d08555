"""Search a dynamic benchmark for configurations a model reliably fails, with certified bounds.

Each pull draws a fresh instance of a configuration from the generator, asks the model once and grades
the reply. A strategy decides where pulls go; a configuration is certified when its binary-KL lower bound
passes the threshold, with a union bound over the whole search so that the chance of certifying any
configuration that is truly below it is at most --delta. Every model reply is journaled before it is
used: rerun the same command to resume a killed search (no call lost or repeated).

Strategies: ``shared`` (this project's), ``quickscope`` (our implementation of the allocation published by
Lundy, Raman & Leyton-Brown, 2026, "QuickScope: Certifying Hard Questions in Dynamic LLM Benchmarks",
arXiv 2604.17842; none of their code is used), ``lucb`` (this project's former allocator), ``uniform``.
"""

from __future__ import annotations

import asyncio
import csv
import json
import time
from pathlib import Path

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import (
    all_or_nothing,
    atomic_write,
    command_line,
    package_versions,
    plan_outputs,
    sha256_file,
    write_json,
)
from benchmeasure.base.options import OPEN_PROBABILITY, SEED, add_entry_options, entry_options, integer, number
from benchmeasure.base.progress import show_progress
from benchmeasure.base.resources import example_path
from benchmeasure.core.ability_file import read_ability_table
from benchmeasure.core.difficulty_file import read_difficulty_column
from benchmeasure.scope.generators import generate, load_generator
from benchmeasure.scope.journal import JOURNAL, Journal, search_lock
from benchmeasure.scope.runner import search, summarize
from benchmeasure.scope.space import read_space
from benchmeasure.scope.strategies import STRATEGIES
from benchmeasure.scope.utility import UTILITIES, band_thresholds, gap_band, threshold_function

EXAMPLES = """\
examples:
  benchmeasure serve start --name scope-sim --pid-file sim.pid --log sim.log \\
      -- python -m benchmeasure.serving.sim.server --scope --port 8011     # a simulated model, known error law
  benchmeasure scope --space docs/examples/arithmetic_space.yaml \\
      --generator benchmeasure.scope.arithmetic:arithmetic --endpoint http://127.0.0.1:8011/v1 \\
      --model sim-solver --budget 2000 --utility error --threshold 0.9 --delta 0.05 --strategy shared \\
      --seed 0 --output-dir results/scope_arith
  benchmeasure scope --space rg_space.yaml --generator benchmeasure.scope.rg:basic_arithmetic ... \\
      --utility complexity --complexity "terms*digits" --threshold 0.1 ...
  benchmeasure scope ... --model sim-weak --model sim-solver --model sim-strong --utility band \\
      --band 0.35 0.6 --abilities panel_ability.csv --difficulty my_benchmark/difficulty.csv ...
  benchmeasure scope ... --utility band --gap 1 --abilities panel_ability.csv \\
      --difficulty my_benchmark/difficulty.csv ...     # the first gap in BenchFill's order (resolved first)

space file (YAML): one entry per parameter
  terms: {type: int, low: 2, high: 11}
  rate: {type: float, low: 0.0, high: 1.0}
  ops: {type: categorical, choices: [add, mul]}

outputs in --output-dir: certified.csv (one column per parameter, then pulls,mean,lower,upper, in the
order certified), configurations.csv (every configuration pulled, same columns + certified_at_pull; lower
and upper are the bounds at its last checkpoint, 0 and 1 before its first), summary.json (settings, bound
level, counts, pulls to the first 10 certifications, model usage, provenance), settings.json and
journal.jsonl (what a resume needs; the same command resumes).
"""
CERTIFIED, SUMMARY, SETTINGS, TRIED = "certified.csv", "summary.json", "settings.json", "configurations.csv"


def parse_args(argv):
    parser = command_parser("scope", __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("--space", required=True,
                        help="the parameter space (YAML): a path, or a shipped one by name (arithmetic_space, "
                             "rg_basic_arithmetic_space; in a checkout docs/examples/<name>.yaml)")
    parser.add_argument("--generator", required=True, help="module:function(config, seed) -> (question, answer)")
    parser.add_argument("--endpoint", required=True, help="OpenAI-compatible base URL ending in /v1")
    parser.add_argument("--model", required=True, action="append",
                        help="served model name; repeat for a panel (each instance goes to every model, the "
                             "certified rate is the panel's mean error)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")
    parser.add_argument("--budget", type=integer(1, 10_000_000), required=True, help="model calls (pulls) in all")
    parser.add_argument("--utility", choices=UTILITIES, default="error")
    parser.add_argument("--complexity", help="complexity expression for --utility complexity (e.g. 'terms*digits')")
    parser.add_argument("--band", nargs=2, type=number(0.0, 1.0), metavar=("LO", "HI"),
                        help="--utility band: the normalized difficulty band [LO, HI] (e.g. a gap from diagnose)")
    parser.add_argument("--gap", type=integer(1, 1_000_000), metavar="R",
                        help="--utility band, instead of --band: the R-th gap of --difficulty in BenchFill's order "
                             "(resolved gaps first, widest first; resolution needs its b_sd column)")
    parser.add_argument("--abilities", help="--utility band: the panel's ability.csv (model,theta_mean), held fixed")
    parser.add_argument("--difficulty", help="--utility band: the benchmark's difficulty.csv (b_mean): its min and "
                                             "max define the normalized scale")
    parser.add_argument("--threshold", type=number(0.0, 1e6, open_low=True), default=0.9,
                        help="certify when the utility's lower bound reaches this (default 0.9 error rate)")
    parser.add_argument("--delta", type=OPEN_PROBABILITY, default=0.05,
                        help="chance of certifying any configuration that is truly below the threshold")
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="shared",
                        help="where pulls go: shared (this project's; default), quickscope (our implementation of "
                             "the allocation published by Lundy, Raman & Leyton-Brown, 2026), lucb (this project's "
                             "former allocator), uniform")
    parser.add_argument("--seed", type=SEED, default=0)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--batch", type=integer(1, 4096), default=16, help="pulls proposed at once (default 16)")
    parser.add_argument("--concurrency", type=integer(1, 1024), default=8, help="requests in flight (default 8)")
    parser.add_argument("--pulls-each", type=integer(10, 1_000_000), default=10,
                        help="uniform strategy: pulls per configuration (default 10)")
    parser.add_argument("--pool-start", type=integer(1, 1_000_000),
                        help="quickscope and lucb strategies: configurations in the starting pool (default 5 for "
                             "quickscope, as published; 20 for lucb)")
    parser.add_argument("--temperature", type=number(0.0, 2.0), default=0.7)
    parser.add_argument("--max-tokens", type=integer(1, 100_000), default=256)
    parser.add_argument("--timeout", type=number(0.0, 3600.0, open_low=True), default=120.0,
                        help="seconds per request (default 120)")
    parser.add_argument("--retries", type=integer(0, 20), default=3)
    add_entry_options(parser, "strategy")
    args = parser.parse_args(argv)
    strategy = STRATEGIES[args.strategy]
    args.strategy_options = entry_options(args.option, strategy.options, f"the {args.strategy} strategy")
    if args.utility == "error" and args.threshold > 1:
        fail(f"--threshold {args.threshold:g}: --utility error certifies an error rate, which lies in [0, 1]; a "
             "threshold above 1 is never reached (nothing could be certified): give one in (0, 1]")
    return args


def panel_band(args) -> dict:
    """The band utility's error-rate interval for the panel (see benchmeasure.scope.utility)."""
    if (args.band is None) == (args.gap is None) or args.abilities is None or args.difficulty is None:
        fail("--utility band needs one of --band LO HI or --gap R, and --abilities ability.csv and "
             "--difficulty difficulty.csv")
    abilities = read_ability_table(args.abilities)
    missing = [m for m in args.model if m not in abilities]
    if missing:
        fail(f"{args.abilities}: no ability for panel model(s) {', '.join(missing)}")
    b = read_difficulty_column(args.difficulty).values
    thetas = [abilities[m] for m in args.model]
    gap = None
    if args.gap is not None:
        from benchmeasure.base.csv_table import read_table
        from benchmeasure.core.difficulty_file import fit_n_trials

        has_sd = "b_sd" in read_table(args.difficulty).header
        sd = read_difficulty_column(args.difficulty, "b_sd").values if has_sd else [0.0] * len(b)
        gap = gap_band(b, sd, args.gap, fit_n_trials(args.difficulty))
        args.band = [gap["low"], gap["high"]]
    low, high = band_thresholds(thetas, args.band[0], args.band[1], min(b), max(b))
    return {"z_band": list(args.band), "b_min": min(b), "b_max": max(b), "abilities": dict(zip(args.model, thetas)),
            "error_interval": (low, high), **({"gap": gap} if gap else {})}


def check_resume(folder: Path, settings: dict) -> None:
    path = folder / SETTINGS
    if not path.exists():
        return
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        fail(f"{path}: damaged ({exc}); move the folder away to start afresh")
    if not isinstance(recorded, dict):  # a hand edit: not the object this command writes
        fail(f"{path}: damaged (not a JSON object of settings); move the folder away to start afresh")
    keys = set(settings) | ({"strategy_options"} & set(recorded))   # recorded only when --option was given
    changed = sorted(k for k in keys if k not in ("budget", "endpoint") and recorded.get(k) != settings.get(k))
    if changed:
        fail(f"{folder}: holds a search with other settings ({', '.join(changed)} differ); "
             "use another --output-dir or the same settings to resume")


async def _run(args, space, threshold_of, function, folder: Path):
    from benchmeasure.scope.evaluate import ModelEvaluator
    from benchmeasure.verifier.llm_client import Endpoint, LLMClient

    journal = Journal(folder / JOURNAL)
    client = LLMClient(max_concurrency=args.concurrency, timeout=args.timeout, max_retries=args.retries,
                       backoff=0.5, journal=journal, seed=args.seed)
    endpoints = [Endpoint(model, args.endpoint, args.api_key_env, supports_n=False) for model in args.model]
    evaluator = ModelEvaluator(function, args.generator, endpoints, client, args.seed,
                               {"temperature": args.temperature, "max_tokens": args.max_tokens})
    settings = {"pulls_each": args.pulls_each, **({"pool_start": args.pool_start} if args.pool_start else {}),
                **args.strategy_options}
    try:
        pool = await search(space, args.strategy, evaluator, args.budget, args.seed, args.delta, threshold_of,
                            args.batch, settings, progress_every=max(args.batch, args.budget // 20),
                            panel=len(endpoints))
    finally:
        await client.close()
        journal.close()
    return pool, dict(client.usage)


def main(argv=None) -> int:
    args = parse_args(argv)
    # after parsing (--help answers at once), before any input is read (a missing openai is named first)
    from benchmeasure.scope.evaluate import check_endpoint

    args.space = str(example_path(args.space, "space"))  # a path, or a shipped space by name (arithmetic_space)
    start = time.perf_counter()
    folder = Path(args.output_dir)
    plan_outputs(folders=[(folder, [CERTIFIED, TRIED, SUMMARY, SETTINGS, JOURNAL])],
                 inputs=[args.space, args.abilities, args.difficulty])
    if len(set(args.model)) != len(args.model):
        fail("--model: a model is named twice")
    space = read_space(args.space)
    band = panel_band(args) if UTILITIES[args.utility].panel else None
    threshold_of = threshold_function(args.utility, args.threshold, space, args.complexity,
                                      band["error_interval"] if band else None)
    function = load_generator(args.generator)
    import numpy as np

    generate(function, args.generator, space.sample(np.random.default_rng(args.seed)), 0)  # fails early
    settings = {"space": space.describe(), "generator": args.generator, "endpoint": args.endpoint,
                "model": args.model, "utility": args.utility, "complexity": args.complexity,
                "threshold": args.threshold, "delta": args.delta, "strategy": args.strategy, "seed": args.seed,
                "batch": args.batch, "pulls_each": args.pulls_each, "pool_start": args.pool_start,
                "temperature": args.temperature,
                "max_tokens": args.max_tokens, "budget": args.budget,
                **({"strategy_options": args.strategy_options} if args.strategy_options else {}),
                "band": {**band, "error_interval": list(band["error_interval"])} if band else None}
    check_endpoint(args.endpoint)
    folder.mkdir(parents=True, exist_ok=True)
    with search_lock(folder):
        check_resume(folder, settings)
        write_json(folder / SETTINGS, settings)
        show_progress("benchmeasure.scope")
        pool, usage = asyncio.run(_run(args, space, threshold_of, function, folder))
        rows = pool.certified_rows()
        inputs = {"space": args.space, "abilities": args.abilities, "difficulty": args.difficulty}
        summary = {**summarize(pool, args.budget), "settings": settings, "model_usage": usage,
                   "inputs": {k: {"path": str(v), "sha256": sha256_file(v)} for k, v in inputs.items() if v},
                   "command": command_line(), "wall_time_s": round(time.perf_counter() - start, 3),
                   "package_versions": package_versions(["numpy", "openai", "reasoning-gym"])}
        with all_or_nothing():
            with atomic_write(folder / CERTIFIED) as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow([*space.names, "pulls", "mean", "lower", "upper"])
                for row in rows:
                    writer.writerow([*(row[n] for n in space.names), row["pulls"], f"{row['mean']:.6f}",
                                     f"{row['lower']:.6f}", f"{row['upper']:.6f}"])
            with atomic_write(folder / TRIED) as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow([*space.names, "pulls", "mean", "lower", "upper", "certified_at_pull"])
                for row in pool.rows():
                    writer.writerow([*(row[n] for n in space.names), row["pulls"], f"{row['mean']:.6f}",
                                     f"{row['lower']:.6f}", f"{row['upper']:.6f}", row["certified"] or ""])
            write_json(folder / SUMMARY, summary)
    print(f"{len(rows)} configuration(s) certified (family-wise δ = {args.delta}) "
          f"after {pool.total} pulls over {len(pool)} configurations; "
          f"model calls made {usage['calls']}, replayed from the journal {usage['cached']} → {folder / CERTIFIED}")
    return 0
