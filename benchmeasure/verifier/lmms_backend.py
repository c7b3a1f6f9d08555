"""The lmms-eval rollout backend: the same graded rows as the direct backend, through lmms-eval.

lmms-eval (pinned in ``requirements_benchfill.txt``) is driven as an installed program,
``lmms-eval --model openai …`` in a subprocess, with a task of our own written per run:

- the candidate items go to a JSONL file, one document per item with the exact user turn
  the direct backend sends (``verifier/prompts/rollout_<kind>.txt`` rendered by
  :func:`benchmeasure.verifier.rollouts.rollout_template`) and the reference answer;
- the task YAML (``dataset_path: json`` on that file, the panel model's temperature, top-p
  and max tokens, ``repeats: K``) keeps every repeat in the log through a ``take_first_k``
  filter, since lmms-eval logs only the first response otherwise; its functions live in
  ``verifier/lmms_task/benchfill_lmms_utils.py``, copied beside the YAML
  (``--include_path``);
- the per-sample log is read by :func:`benchmeasure.core.harness.read_lmms_samples` and each
  of the K responses graded with :func:`benchmeasure.grading.grade`, giving
  ``model,item_id,trial,correct`` rows (:class:`~benchmeasure.verifier.base.Rollout`), trial
  = repeat index.

The panel model's API key (its ``api_key_env``) reaches lmms-eval as ``OPENAI_API_KEY`` in
the subprocess environment, never on the command line, whose ``model_args`` lmms-eval copies
into its results file.

lmms-eval's OpenAI model refuses ``n > 1``, so the K repeats are K requests; it exits 0
even when every request failed, so the log is checked for ``[LMMS_EVAL_REQUEST_FAILED``
responses (:class:`LmmsEvalError`). Checked with lmms-eval 0.7.3.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmeasure.base.resources import package_file
from benchmeasure.core.harness import find_lmms_samples, read_lmms_samples
from benchmeasure.grading import grade
from benchmeasure.verifier.base import Rollout
from benchmeasure.verifier.rollouts import rollout_template

TASK_FILES = package_file("verifier", "lmms_task")  # verifier/lmms_task/ in a checkout links here
UTILS = "benchfill_lmms_utils"
TASK = "benchfill_items"


class LmmsEvalError(RuntimeError):
    """lmms-eval failed, or exited 0 but its log shows failed requests or missing samples."""


@dataclass(frozen=True)
class LmmsRun:
    """Where one lmms-eval call put its files.

    Attributes
    ----------
    workdir : Path
        Holds ``items.jsonl``, ``tasks/`` (the include path), ``out/`` and ``lmms-eval.log``.
    samples : Path
        The per-sample JSONL that lmms-eval wrote.
    """

    workdir: Path
    samples: Path


def item_documents(candidates, kind: str) -> list:
    """One lmms-eval document per candidate: ``item_id``, ``prompt`` (the direct backend's user turn), ``answer``."""
    template = rollout_template(kind)
    return [{"item_id": c.item_id, "prompt": template.substitute(question=c.question), "answer": c.answer}
            for c in candidates]


def task_yaml(data_path: Path, model, n_trials: int) -> str:
    """The task definition for one panel model (JSON is valid YAML; lmms-eval's ``!function`` tags are added).

    Parameters
    ----------
    data_path : Path
        Absolute path of the items' JSONL.
    model : PanelModel
        Supplies ``temperature``, ``top_p`` and ``max_tokens``.
    n_trials : int
        Repeats per document (K); all K are kept by ``take_first_k``.
    """
    generation = {"max_new_tokens": model.max_tokens, "temperature": model.temperature,
                  "do_sample": model.temperature > 0, "until": []}
    if model.top_p is not None:
        generation["top_p"] = model.top_p
    fields = {
        "task": TASK,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data_path)}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_target": f"!function {UTILS}.doc_to_target",
        "doc_to_text": f"!function {UTILS}.doc_to_text",
        "process_results": f"!function {UTILS}.process_results",
        "generation_kwargs": generation,
        "repeats": n_trials,
        "filter_list": [{"name": "all", "filter": [{"function": "take_first_k", "k": n_trials}]}],
        "metric_list": [{"metric": "n_responses", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": 1},
    }
    lines = []
    for key, value in fields.items():
        text = json.dumps(value)
        if isinstance(value, str) and value.startswith("!function "):
            text = value  # a YAML tag, not a string
        lines.append(f"{key}: {text}")
    return "\n".join(lines) + "\n"


def write_task(workdir: Path, documents: list, model, n_trials: int) -> Path:
    """Write ``items.jsonl`` and the include folder ``tasks/``; return the include folder."""
    workdir.mkdir(parents=True, exist_ok=True)
    data_path = (workdir / "items.jsonl").resolve()
    with open(data_path, "w", encoding="utf-8") as handle:
        for doc in documents:
            handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
    tasks = workdir / "tasks"
    tasks.mkdir(exist_ok=True)
    (tasks / f"{TASK}.yaml").write_text(task_yaml(data_path, model, n_trials), encoding="utf-8")
    shutil.copyfile(TASK_FILES / f"{UTILS}.py", tasks / f"{UTILS}.py")
    return tasks


def lmms_command(executable: str, tasks: Path, model_name: str, base_url: str, out: Path,
                 num_concurrent: int = 4, max_retries: int = 2, timeout: int = 120) -> list:
    """The ``lmms-eval`` command line for one panel model.

    It carries no API key: lmms-eval writes ``model_args`` into its results file, so the key
    travels in the subprocess environment instead (``OPENAI_API_KEY``, see :func:`lmms_environment`).
    """
    model_args = (f"model={model_name},base_url={base_url},"
                  f"num_concurrent={num_concurrent},max_retries={max_retries},timeout={timeout}")
    return [executable, "--model", "openai", "--model_args", model_args, "--tasks", TASK,
            "--include_path", str(tasks), "--batch_size", "1", "--log_samples", "--output_path", str(out),
            "--timezone", "UTC", "--verbosity", "WARNING"]


def lmms_environment(model, workdir: Path, environ=None) -> dict:
    """The environment of the lmms-eval subprocess for ``model``.

    ``OPENAI_API_KEY`` is the panel model's key (``model.api_key()``: its ``api_key_env``
    variable, ``"EMPTY"`` when unset), which lmms-eval's OpenAI client sends as
    ``Authorization: Bearer …`` when ``model_args`` has no ``api_key``; ``OPENAI_API_BASE`` is
    dropped (the base URL is in ``model_args``). Hugging Face runs offline, with a dataset
    cache inside ``workdir``.
    """
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if k != "OPENAI_API_BASE"}
    env.update({"OPENAI_API_KEY": model.api_key(environ), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false", "HF_DATASETS_CACHE": str(Path(workdir) / "hf_datasets")})
    return env


def default_executable() -> str:
    """``lmms-eval`` beside the running interpreter (the BenchFill venv), else on PATH."""
    beside = Path(sys.executable).parent / "lmms-eval"
    return str(beside) if beside.exists() else (shutil.which("lmms-eval") or "lmms-eval")


def run_lmms(candidates, model, kind: str, n_trials: int, workdir: Path, base_url: str | None = None,
             executable: str | None = None, num_concurrent: int = 4, timeout_s: float = 1800.0) -> LmmsRun:
    """Run lmms-eval for one panel model on ``candidates``; return where its sample log is.

    Raises
    ------
    LmmsEvalError
        Non-zero exit, time-out, or no sample log; the message carries the log's tail.
    """
    workdir = Path(workdir).resolve()  # lmms-eval runs with cwd=workdir: the paths it gets must be absolute
    tasks = write_task(workdir, item_documents(candidates, kind), model, n_trials)
    out = workdir / "out"
    argv = lmms_command(executable or default_executable(), tasks, model.name, base_url or model.resolve_base_url(),
                        out, num_concurrent=num_concurrent)
    env = lmms_environment(model, workdir)
    log_path = workdir / "lmms-eval.log"
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            done = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                  timeout=timeout_s, cwd=workdir)
        except subprocess.TimeoutExpired:
            raise LmmsEvalError(f"lmms-eval ran past {timeout_s:.0f} s for {model.name}{_tail(log_path)}") from None
    if done.returncode != 0:
        raise LmmsEvalError(f"lmms-eval exited with {done.returncode} for {model.name}{_tail(log_path)}")
    found = find_lmms_samples(out, TASK)
    if not found:
        raise LmmsEvalError(f"lmms-eval exited 0 but wrote no samples_{TASK}.jsonl under {out}{_tail(log_path)}")
    return LmmsRun(workdir, found[-1])


def _tail(path: Path, lines: int = 20) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    return "; lmms-eval output ends with:\n" + "\n".join(text)


def rollouts_from_samples(samples_path: Path, candidates, model_name: str, kind: str, n_trials: int,
                          grade_options: dict | None = None) -> list:
    """Grade every logged response; return one list of :class:`Rollout` per candidate (candidate order).

    ``doc_id`` k is the k-th candidate (the JSONL order). Each document must hold exactly
    ``n_trials`` responses and no ``[LMMS_EVAL_REQUEST_FAILED`` one.

    Raises
    ------
    LmmsEvalError
        A failed request, a missing or extra document, or a response count other than ``n_trials``.
    """
    try:
        samples = read_lmms_samples(samples_path)
    except ValueError as exc:  # InputError: the log itself is unusable
        raise LmmsEvalError(str(exc)) from None
    by_doc = {s.doc_id: s for s in samples}
    failed = [s for s in samples if s.failed_request]
    if failed:
        first = failed[0]
        raise LmmsEvalError(f"{samples_path}: {len(failed)} of {len(samples)} documents have failed requests "
                            f"(first: doc_id {first.doc_id}: {first.failed_request[:200]!r}); "
                            "lmms-eval exited 0 anyway")
    extra = sorted(set(by_doc) - set(range(len(candidates))))
    if extra:
        raise LmmsEvalError(f"{samples_path}: doc_id {extra[0]} is not one of the {len(candidates)} items")
    options = dict(grade_options or {})
    per_candidate = []
    for doc_id, candidate in enumerate(candidates):
        sample = by_doc.get(doc_id)
        if sample is None:
            raise LmmsEvalError(f"{samples_path}: no sample for doc_id {doc_id} (item {candidate.item_id!r})")
        if len(sample.responses) != n_trials:
            raise LmmsEvalError(f"{samples_path}: doc_id {doc_id} (item {candidate.item_id!r}) has "
                                f"{len(sample.responses)} responses, expected {n_trials} (take_first_k filter?)")
        per_candidate.append([Rollout(model_name, trial, int(grade(kind, text, candidate.answer, **options)), text)
                              for trial, text in enumerate(sample.responses)])
    return per_candidate


class LmmsRollouts:
    """Collect and grade the panel's responses through lmms-eval (same rows as ``DirectRollouts``).

    Parameters
    ----------
    models : sequence of PanelModel
    n_trials : int
    kind : str
        Grader kind (``math``, ``choice``, ``ifeval``).
    workdir : Path
        One sub-folder per model is written here (items, task, lmms-eval output and log).
    base_url : str, optional
        Overrides every model's resolved base URL.
    num_concurrent : int
        Requests lmms-eval keeps in flight (its ``num_concurrent`` model argument).
    """

    def __init__(self, models, n_trials: int, kind: str, workdir: Path, base_url: str | None = None,
                 grade_options: dict | None = None, executable: str | None = None, num_concurrent: int = 4):
        self.models = list(models)
        self.n_trials = n_trials
        self.kind = kind
        self.workdir = Path(workdir)
        self.base_url = base_url
        self.grade_options = grade_options
        self.executable = executable
        self.num_concurrent = num_concurrent

    def run(self, candidates) -> list:
        """One list of rollouts per candidate, models in panel order: the shape of ``DirectRollouts.for_candidate``.

        lmms-eval runs once per panel model (its sampling settings are per task).
        """
        per_model = []
        for model in self.models:
            done = run_lmms(candidates, model, self.kind, self.n_trials, self.workdir / model.name,
                            base_url=self.base_url, executable=self.executable,
                            num_concurrent=self.num_concurrent)
            per_model.append(rollouts_from_samples(done.samples, candidates, model.name, self.kind, self.n_trials,
                                                   self.grade_options))
        return [[rollout for part in per_model for rollout in part[k]] for k in range(len(candidates))]
