#!/usr/bin/env python3
"""Roll out candidate items on every panel model (direct backend) and write graded response rows.

Output: ``model,item_id,trial,correct`` CSV (what ``scripts/prepare_response_matrix.py`` and the
online calibration read) plus a JSON Lines side file with each raw response.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmeasure.errors import fail, run_cli
from benchmeasure.files import atomic_write
from benchmeasure.llm_client import LLMCallError, LLMClient
from benchmeasure.verifier.base import Candidate
from benchmeasure.verifier.grading import KINDS, kind_for
from benchmeasure.verifier.panel import load_panel
from benchmeasure.verifier.rollouts import DirectRollouts

EXAMPLES = """examples:
  python verifier/run_rollout.py --candidates items.jsonl --panel verifier/panels/paper.toml \\
      --benchmark aime24 --output rows.csv
  python verifier/run_rollout.py --candidates items.jsonl --panel panel.toml --benchmark bbh_3obj \\
      --n-trials 4 --output rows.csv --raw-output raw.jsonl
"""


def read_candidates(path: str, benchmark: str) -> list:
    if not Path(path).is_file():
        fail(f"{path}: candidates file not found")
    out, seen = [], set()
    with open(path, encoding="utf-8") as handle:
        for line, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                fail(f"{path}: line {line} is not valid JSON ({exc.msg})")
            if not isinstance(record, dict):
                fail(f"{path}: line {line} is not a JSON object")
            for key in ("item_id", "question", "answer"):
                if key not in record:
                    fail(f"{path}: line {line} has no field {key!r}")
            item = str(record["item_id"])
            if item in seen:
                fail(f"{path}: line {line}: item_id {item!r} appears twice")
            seen.add(item)
            out.append(Candidate(item, str(record["question"]), str(record["answer"]), benchmark))
    if not out:
        fail(f"{path}: no candidates")
    return out


async def collect(candidates, backend) -> list:
    try:
        return await asyncio.gather(*(backend.for_candidate(c) for c in candidates))
    finally:
        await backend.client.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", required=True, help="JSON Lines with item_id, question, answer")
    parser.add_argument("--panel", required=True, help="panel config (TOML)")
    parser.add_argument("--benchmark", required=True, help="benchmark key: picks the grader and rollouts")
    parser.add_argument("--kind", choices=KINDS, help="grader kind (default: from --benchmark)")
    parser.add_argument("--n-trials", type=int, help="samples per item and model (default: the panel's rollouts)")
    parser.add_argument("--models", help="comma-separated subset of panel models")
    parser.add_argument("--output", required=True, help="CSV of model,item_id,trial,correct")
    parser.add_argument("--raw-output", help="JSON Lines of raw responses (default: OUTPUT with .raw.jsonl)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    parser.add_argument("--retries", type=int, default=6)
    args = parser.parse_args(argv)
    panel = load_panel(args.panel)
    models = list(panel.models)
    if args.models:
        models = [panel.model(name.strip()) for name in args.models.split(",") if name.strip()]
    if not models:
        fail(f"{args.panel}: no panel models to roll out")
    n_trials = args.n_trials if args.n_trials is not None else panel.n_trials(args.benchmark)
    if n_trials < 1:
        fail(f"--n-trials must be a positive integer, got {n_trials}")
    if args.concurrency < 1 or args.retries < 0 or args.timeout <= 0:
        fail("--concurrency >= 1, --retries >= 0 and --timeout > 0 are required")
    kind = args.kind or kind_for(args.benchmark)
    candidates = read_candidates(args.candidates, args.benchmark)
    client = LLMClient(args.concurrency, args.timeout, args.retries)
    backend = DirectRollouts(client, models, n_trials, kind)
    try:
        results = asyncio.run(collect(candidates, backend))
    except LLMCallError as exc:
        fail(str(exc))
    raw = args.raw_output or str(Path(args.output).with_suffix(".raw.jsonl"))
    with atomic_write(args.output) as rows, atomic_write(raw) as side:
        writer = csv.writer(rows, lineterminator="\n")
        writer.writerow(["model", "item_id", "trial", "correct"])
        for candidate, rollouts in zip(candidates, results):
            for r in rollouts:
                writer.writerow([r.model, candidate.item_id, r.trial, r.correct])
                side.write(json.dumps({"model": r.model, "item_id": candidate.item_id, "trial": r.trial,
                                       "correct": r.correct, "response": r.response}, ensure_ascii=False) + "\n")
    print(f"{sum(len(r) for r in results)} rows for {len(candidates)} items x {len(models)} models -> {args.output}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_cli(main)
