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

import contextlib
import json
import os
import shutil
import signal
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
    return run_lmms_many(candidates, [model], kind, n_trials, [workdir], base_url=base_url, executable=executable,
                         num_concurrent=num_concurrent, timeout_s=timeout_s)[0]


def run_lmms_many(candidates, models, kind: str, n_trials: int, workdirs, base_url: str | None = None,
                  executable: str | None = None, num_concurrent: int = 4, timeout_s: float = 1800.0,
                  processes: int = 1) -> list:
    """lmms-eval for each model (``workdirs[k]`` for ``models[k]``), ``processes`` of them running at once.

    Each run is its own lmms-eval process (its sampling settings are per task), most of whose time alone is
    starting up (importing torch and lmms-eval: 11 s on an idle 2-core machine, 30 s beside other work); runs
    side by side overlap that start-up and send the server their requests together. The processes are started
    and waited for from this thread, so Ctrl-C (or any error) stops every one of them at once. Returns one
    :class:`LmmsRun` per model, in model order.

    Raises
    ------
    LmmsEvalError
        The first run (in model order) that exited non-zero, ran past ``timeout_s`` or wrote no sample log.
    """
    import time

    if processes < 1:
        raise ValueError(f"processes must be >= 1, got {processes}")
    results, running = [None] * len(models), []
    try:
        for batch in range(0, len(models), processes):
            running = []   # filled one by one: a start that fails still leaves the earlier ones to stop
            for k in range(batch, min(batch + processes, len(models))):
                started = _start_lmms(candidates, models[k], kind, n_trials, workdirs[k], base_url, executable,
                                      num_concurrent)
                running.append((*started, k))
            deadline = time.monotonic() + timeout_s
            while [proc.poll() for proc, *_ in running].count(None):
                if any(proc.returncode not in (None, 0) for proc, *_ in running):
                    break   # one failed: its error is raised below, and the others are stopped (finally)
                if time.monotonic() > deadline:
                    late = next(k for proc, *_, k in running if proc.returncode is None)
                    raise LmmsEvalError(f"lmms-eval ran past {timeout_s:.0f} s for {models[late].name}"
                                        f"{_tail(_log_of(running, late))}")
                time.sleep(0.05)
            for proc, _, log_path, _, k in running:
                if proc.returncode is None:
                    continue
                if proc.returncode != 0:
                    raise LmmsEvalError(f"lmms-eval exited with {proc.returncode} for {models[k].name}"
                                        f"{_tail(log_path)}")
            for _, log, log_path, out, k in running:
                log.close()
                found = find_lmms_samples(out, TASK)
                if not found:
                    raise LmmsEvalError(f"lmms-eval exited 0 but wrote no samples_{TASK}.jsonl under {out}"
                                        f"{_tail(log_path)}")
                results[k] = LmmsRun(log_path.parent, found[-1])
            running = []
    finally:
        for proc, log, *_ in running:   # an error or Ctrl-C: no lmms-eval (nor a child of it) is left running
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            log.close()
    return results


def _log_of(running, k) -> Path:
    """The log of model ``k``'s running lmms-eval."""
    return next(log_path for _, _, log_path, _, index in running if index == k)


def _start_lmms(candidates, model, kind, n_trials, workdir, base_url, executable, num_concurrent):
    """Write one model's task and start its lmms-eval: (process, open log, log path, output folder)."""
    workdir = Path(workdir).resolve()  # lmms-eval runs with cwd=workdir: the paths it gets must be absolute
    tasks = write_task(workdir, item_documents(candidates, kind), model, n_trials)
    out = workdir / "out"
    argv = lmms_command(executable or default_executable(), tasks, model.name, base_url or model.resolve_base_url(),
                        out, num_concurrent=num_concurrent)
    env = lmms_environment(model, workdir)
    log_path = workdir / "lmms-eval.log"
    log = open(log_path, "w", encoding="utf-8")
    try:
        # its own process group, so that stopping it stops whatever it started too
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                cwd=workdir, start_new_session=True)
    except BaseException:
        log.close()
        raise
    return proc, log, log_path, out


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
    processes : int
        lmms-eval processes (one per model) running at once (:func:`run_lmms_many`).
    """

    def __init__(self, models, n_trials: int, kind: str, workdir: Path, base_url: str | None = None,
                 grade_options: dict | None = None, executable: str | None = None, num_concurrent: int = 4,
                 processes: int = 1):
        self.models = list(models)
        self.n_trials = n_trials
        self.kind = kind
        self.workdir = Path(workdir)
        self.base_url = base_url
        self.grade_options = grade_options
        self.executable = executable
        self.num_concurrent = num_concurrent
        self.processes = processes

    def run(self, candidates) -> list:
        """One list of rollouts per candidate, models in panel order: the shape of ``DirectRollouts.for_candidate``.

        lmms-eval runs once per panel model (its sampling settings are per task), ``processes`` at a time.
        """
        runs = run_lmms_many(candidates, self.models, self.kind, self.n_trials,
                             [self.workdir / model.name for model in self.models], base_url=self.base_url,
                             executable=self.executable, num_concurrent=self.num_concurrent,
                             processes=self.processes)
        per_model = [rollouts_from_samples(done.samples, candidates, model.name, self.kind, self.n_trials,
                                           self.grade_options) for model, done in zip(self.models, runs)]
        return [[rollout for part in per_model for rollout in part[k]] for k in range(len(candidates))]
