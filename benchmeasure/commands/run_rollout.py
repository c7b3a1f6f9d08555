"""Roll out candidate items on every panel model and write graded response rows.

Output: ``model,item_id,trial,correct`` CSV (what ``scripts/prepare_response_matrix.py`` and the
online calibration read), a JSON Lines side file with each raw response, and ``OUTPUT.json``, the
run's record (backend, panel file and its SHA-256, trials, models and their sampling settings,
the candidates file's SHA-256, command line, package versions). Two backends give
the same rows: ``direct`` (the ``openai`` SDK against each model's OpenAI-compatible server,
``benchmeasure.verifier.rollouts``) and ``lmms-eval`` (the installed lmms-eval program with our
task definition, ``benchmeasure.verifier.lmms_backend``; run from ``.venv-benchfill``).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import (
    all_or_nothing,
    atomic_write,
    plan_outputs,
    provenance,
    read_jsonl_objects,
    sha256_file,
)
from benchmeasure.base.options import N_TRIALS, SECONDS, integer
from benchmeasure.base.resources import example_path
from benchmeasure.grading import KINDS, kind_for

BACKENDS = ("direct", "lmms-eval")

EXAMPLES = """examples:
  benchmeasure rollout --candidates items.jsonl --panel verifier/panels/paper.toml \\
      --benchmark aime24 --output rows.csv
  benchmeasure rollout --candidates items.jsonl --panel panel.toml --benchmark bbh_3obj \\
      --n-trials 4 --output rows.csv --raw-output raw.jsonl
  benchmeasure rollout --backend lmms-eval --candidates items.jsonl \\
      --panel panel.toml --benchmark aime24 --output rows.csv --workdir lmms_run/
"""


def read_candidates(path: str, benchmark: str) -> list:
    from benchmeasure.verifier.base import Candidate

    if not Path(path).is_file():
        fail(f"{path}: candidates file not found")
    out, seen = [], set()
    for line, record in read_jsonl_objects(path, ("item_id", "question", "answer")):
        item = str(record["item_id"])
        if item in seen:
            fail(f"{path} line {line}: item_id {item!r} appears twice")
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


def lmms_eval_program() -> str:
    """The ``lmms-eval`` program beside this interpreter (or on PATH); one-line error when absent."""
    from benchmeasure.verifier.lmms_backend import default_executable

    program = default_executable()
    if importlib.util.find_spec("lmms_eval") is None or shutil.which(program) is None:
        fail(f"--backend lmms-eval needs lmms-eval, which is not installed for {sys.executable}: run with "
             ".venv-benchfill/bin/python (bash scripts/setup_env.sh benchfill installs it)")
    return program


def run_direct(candidates, models, n_trials: int, kind: str, args) -> list:
    from benchmeasure.verifier.llm_client import LLMCallError, LLMClient
    from benchmeasure.verifier.rollouts import DirectRollouts

    client = LLMClient(args.concurrency, args.timeout, args.retries)
    backend = DirectRollouts(client, models, n_trials, kind)
    try:
        return asyncio.run(collect(candidates, backend))
    except LLMCallError as exc:
        fail(str(exc))


def run_lmms_eval(candidates, models, n_trials: int, kind: str, args, program: str) -> list:
    """lmms-eval once per model in ``--workdir`` (default: a temporary folder, removed afterwards)."""
    from benchmeasure.verifier.lmms_backend import LmmsEvalError, LmmsRollouts

    for model in models:
        model.resolve_base_url()  # a model without an endpoint fails before any run
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or stack.enter_context(tempfile.TemporaryDirectory(prefix="run_rollout_lmms_"))
        backend = LmmsRollouts(models, n_trials, kind, Path(workdir), executable=program,
                               num_concurrent=args.concurrency, processes=args.processes)
        try:
            return backend.run(candidates)
        except LmmsEvalError as exc:
            fail(str(exc))


PACKAGES = ["openai", "lmms_eval", "sympy", "latex2sympy2_extended"]


def run_record(args, models, n_trials: int, kind: str, candidates, results, raw: str, hashes: dict) -> dict:
    """What ``OUTPUT.json`` holds: the settings, the inputs with their SHA-256 (``hashes``: taken when
    each was read), the command and the package versions."""
    return {
        "output": args.output,
        "raw_output": raw,
        "backend": args.backend,
        "benchmark": args.benchmark,
        "kind": kind,
        "n_trials": n_trials,
        "panel": {"path": args.panel, "sha256": hashes["panel"]},
        "models": [{"name": m.name, "temperature": m.temperature, "top_p": m.top_p, "max_tokens": m.max_tokens,
                    "supports_n": m.supports_n, "base_url": m.resolve_base_url(), "api_key_env": m.api_key_env}
                   for m in models],
        "inputs": [{"path": args.candidates, "sha256": hashes["candidates"], "items": len(candidates)}],
        "rows": sum(len(r) for r in results),
        "settings": {"concurrency": args.concurrency, "timeout": args.timeout, "retries": args.retries,
                     "workdir": args.workdir, "processes": args.processes},
        **provenance(PACKAGES),
    }


def main(argv=None) -> int:
    parser = command_parser(None, __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("--candidates", required=True, help="JSON Lines with item_id, question, answer")
    parser.add_argument("--panel", required=True, help="panel config (TOML)")
    parser.add_argument("--benchmark", required=True, help="benchmark key: picks the grader and rollouts")
    parser.add_argument("--kind", choices=KINDS, help="grader kind (default: from --benchmark)")
    parser.add_argument("--n-trials", type=N_TRIALS, help="samples per item and model (default: the panel's rollouts)")
    parser.add_argument("--models", help="comma-separated subset of panel models")
    parser.add_argument("--output", required=True,
                        help="CSV of model,item_id,trial,correct; the run's record goes to OUTPUT.json")
    parser.add_argument("--raw-output", help="JSON Lines of raw responses (default: OUTPUT with .raw.jsonl)")
    parser.add_argument("--backend", choices=BACKENDS, default="direct",
                        help="direct: the openai SDK (default); lmms-eval: the installed lmms-eval program "
                             "(run from .venv-benchfill). Both write the same rows")
    parser.add_argument("--workdir", help="lmms-eval only: keep its task, items, logs and samples here "
                                          "(default: a temporary folder, removed afterwards)")
    parser.add_argument("--concurrency", type=integer(1, 4096), default=16,
                        help="requests in flight (lmms-eval: its num_concurrent, per model)")
    parser.add_argument("--processes", type=integer(1, 256), default=1,
                        help="lmms-eval only: models evaluated at once, one lmms-eval process each (default 1; "
                             "each process starts by importing torch, ~0.5 GB of memory)")
    parser.add_argument("--timeout", type=SECONDS, default=600.0, help="seconds per request (direct)")
    parser.add_argument("--retries", type=integer(0, 100), default=6, help="retries per request (direct)")
    args = parser.parse_args(argv)
    # after parsing, so --help answers at once; before any input is read, so a missing package is named first
    from benchmeasure.verifier.llm_client import LLMClient  # noqa: F401
    from benchmeasure.verifier.panel import load_panel

    if args.workdir and args.backend != "lmms-eval":
        fail("--workdir applies to --backend lmms-eval only")
    if args.processes != 1 and args.backend != "lmms-eval":
        fail("--processes applies to --backend lmms-eval only (the direct backend sends --concurrency requests)")
    if not os.path.exists(args.panel):  # a shipped panel by name (cpu_smollm, paper): hash the file read
        args.panel = str(example_path(args.panel, "panel"))
    panel = load_panel(args.panel)
    hashes = {"panel": sha256_file(args.panel)}
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
    raw = args.raw_output or str(Path(args.output).with_suffix(".raw.jsonl"))
    record_path = f"{args.output}.json"
    if len({str(Path(p).resolve()) for p in (args.output, raw, record_path)}) < 3:
        fail(f"--output {args.output}, --raw-output {raw} and the record {record_path} must be three different files")
    # before any request is spent: none may be an input (the candidates, the panel) or a device
    plan_outputs(files=[args.output, raw, record_path], inputs=[args.candidates, args.panel])
    program = lmms_eval_program() if args.backend == "lmms-eval" else None  # the wrong interpreter fails first
    candidates = read_candidates(args.candidates, args.benchmark)
    hashes["candidates"] = sha256_file(args.candidates)
    if program:
        results = run_lmms_eval(candidates, models, n_trials, kind, args, program)
    else:
        results = run_direct(candidates, models, n_trials, kind, args)
    record = run_record(args, models, n_trials, kind, candidates, results, raw, hashes)
    with all_or_nothing(), atomic_write(args.output) as rows, atomic_write(raw) as side, \
            atomic_write(record_path) as meta:
        json.dump(record, meta, indent=2, ensure_ascii=False)
        meta.write("\n")
        writer = csv.writer(rows, lineterminator="\n")
        writer.writerow(["model", "item_id", "trial", "correct"])
        for candidate, rollouts in zip(candidates, results):
            for r in rollouts:
                writer.writerow([r.model, candidate.item_id, r.trial, r.correct])
                side.write(json.dumps({"model": r.model, "item_id": candidate.item_id, "trial": r.trial,
                                       "correct": r.correct, "response": r.response}, ensure_ascii=False) + "\n")
    print(f"{sum(len(r) for r in results)} rows for {len(candidates)} items x {len(models)} models "
          f"({args.backend}) -> {args.output}", file=sys.stderr)
    return 0

