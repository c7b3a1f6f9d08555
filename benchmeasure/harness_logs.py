"""Evaluation-harness sample logs → graded ``model,item_id,trial,correct`` rows → count matrix.

Most users already have per-sample logs from an evaluation harness. This module reads
them as the harnesses write them and turns them into the long response rows of the
paper's README (one row per model, item and trial), then into the model × item count
matrix through :func:`benchmeasure.responses.assemble_matrix`, the same checks and
messages as the CSV path. ``item_id`` is the harness's ``doc_id`` (the position in the
evaluated item pool), ``trial`` the repeat index.

Formats, checked against the installed versions lmms-eval 0.7.3, lm-evaluation-harness
(``lm-eval``) 0.4.13 and lighteval 0.13.0 on logs they wrote (``tests/fixtures/harness_logs``):

- lmms-eval: ``OUT/<model>/<date>_samples_<task>.jsonl`` beside ``<date>_results.json``;
  one line per document with ``doc_id``, ``target``, ``filtered_resps`` (a list: all
  repeats when the task keeps them with a ``take_first_k`` filter, else one response) and
  one value per metric. A request that failed after its retries is logged as a response
  starting ``[LMMS_EVAL_REQUEST_FAILED``; such a log is rejected.
- lm-evaluation-harness: ``OUT/<model>/samples_<task>_<date>.jsonl`` beside
  ``results_<date>.json``; one line per document *and filter* with ``doc_id``, ``doc``,
  ``target``, ``resps``, ``filtered_resps`` (``[[r1, …, rK]]`` under a ``take_first_k``
  filter), ``filter``, ``metrics`` (the metric names) and one value per metric. One filter
  is used (``filter_name``, default the first in the file), so no document counts twice.
- lighteval: ``OUT/details/<model>/<date>/details_<task>|<few-shot>_<date>.parquet`` (the model
  name may hold a ``/``, e.g. ``openai/x``) beside ``OUT/results/<model>/results_<date>.json``
  (``config_general.model_name``); one row per document, NOT in document order, with the
  columns ``doc`` (``id`` = the document's index as a string, ``choices``, ``gold_index``,
  ``num_samples``), ``metric`` (one value per metric, e.g. ``em``, ``avg@n:n=3``) and
  ``model_response`` (``text``: the ``num_samples`` responses; ``text_post_processed``). A
  request that failed after its retries, or whose first sample came back empty, is logged
  as the one response ``""``; a row whose response count is not ``num_samples`` is rejected.

Per-trial correctness: when a document holds K responses but a single metric value (lmms-eval
with repeats does exactly this), each response is graded against ``target`` with the project's
graders (``grade=``), never by copying the document's value to every trial; without ``grade``
such a log is an error.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import InputError, fail
from .files import read_jsonl_objects
from .matrix import ResponseMatrix, check_n_trials
from .responses import assemble_matrix, factorize

HARNESSES = ("lmms-eval", "lm-eval", "lighteval")
FAILED_MARK = "[LMMS_EVAL_REQUEST_FAILED"
_LMMS_SAMPLES = re.compile(r"^(?P<date>.+?)_samples_(?P<task>.+)\.jsonl$")
_LM_EVAL_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")
_LIGHTEVAL_DETAILS = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.parquet$")


@dataclass(frozen=True)
class Sample:
    """One document of a sample log.

    Attributes
    ----------
    doc_id : int
    target : str
        The reference answer as the harness logged it.
    responses : tuple of str
        The (filtered) responses, one per kept repeat.
    values : dict of str to object
        Every top-level key of the log line (metric values among them).
    line : int
        Line number in the samples file (row number of a parquet file), 1-based.
    failed_request : str or None
        The first response that marks a failed lmms-eval request.
    """

    doc_id: int
    target: str
    responses: tuple
    values: dict = field(repr=False)
    line: int = 0
    failed_request: str | None = None


@dataclass(frozen=True)
class HarnessLog:
    """One model's sample log of one task."""

    harness: str
    path: Path
    model: str
    task: str
    samples: list


def _flatten(value) -> list:
    """``filtered_resps`` as a flat list of strings (``"a"``, ``["a", "b"]`` and ``[["a", "b"]]`` occur)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], list):
            return _flatten(value[0])
        out = []
        for part in value:
            out += _flatten(part) if isinstance(part, list) else [part]
        return [str(x) for x in out]
    fail(f"unexpected filtered_resps value {value!r}")


def _read_jsonl(path: Path) -> list:
    records = read_jsonl_objects(path)
    if not records:
        fail(f"{path}: no samples (empty log)")
    return records


def _sample(path: Path, number: int, record: dict) -> Sample:
    for key in ("doc_id", "filtered_resps"):
        if key not in record:
            fail(f"{path} line {number}: no {key!r} key (is this a harness sample log?)")
    doc_id = record["doc_id"]
    if isinstance(doc_id, bool) or not isinstance(doc_id, int) or doc_id < 0:
        fail(f"{path} line {number}: doc_id must be a non-negative integer, got {doc_id!r}")
    try:
        responses = tuple(_flatten(record["filtered_resps"]))
    except ValueError as exc:
        fail(f"{path} line {number} (doc_id {doc_id}): {exc}")
    failed = next((r for r in responses if r.startswith(FAILED_MARK)), None)
    target = record.get("target", "")
    return Sample(doc_id, target if isinstance(target, str) else json.dumps(target), responses, record, number, failed)


def _pick(path: Path, pattern: re.Pattern, task: str | None) -> list:
    """Sample files of a folder (searched recursively) or the one file given."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        fail(f"{path}: no such file or folder")
    found = sorted(p for p in path.rglob("*") if p.is_file() and pattern.match(p.name)
                   and (task is None or pattern.match(p.name).group("task") == task))
    return found


def find_lmms_samples(folder: Path, task: str | None = None) -> list:
    """lmms-eval sample files (``<date>_samples_<task>.jsonl``) under ``folder``, oldest first."""
    folder = Path(folder)
    return _pick(folder, _LMMS_SAMPLES, task) if folder.exists() else []


def read_lmms_samples(path: Path) -> list:
    """The :class:`Sample` records of one lmms-eval samples file, in file order."""
    path = Path(path)
    return [_sample(path, number, record) for number, record in _read_jsonl(path)]


def _one_file(path: Path, pattern: re.Pattern, harness: str) -> Path:
    files = _pick(path, pattern, None)
    if not files:
        fail(f"{path}: no {harness} sample log in it (looked for {pattern.pattern})")
    tasks = {pattern.match(f.name).group("task") for f in files}
    if len(files) > 1:
        listed = ", ".join(str(f) for f in files[:4])
        fail(f"{path}: holds {len(files)} {harness} sample logs ({listed}); give one file per model "
             f"({len(tasks)} task{'s' if len(tasks) > 1 else ''})")
    return files[0]


def _model_from_results(sample_file: Path, results_glob: str, fallback: str) -> str:
    """The model name recorded in the results file beside the samples, else ``fallback``."""
    for results in sorted(sample_file.parent.glob(results_glob), reverse=True):
        try:
            data = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        args = (data.get("config") or {}).get("model_args")
        if isinstance(args, dict) and isinstance(args.get("model"), str):
            return args["model"]
        if isinstance(args, str):
            for part in args.split(","):
                key, _, value = part.partition("=")
                if key.strip() in ("model", "model_version", "pretrained") and value.strip():
                    return value.strip()
        if isinstance(data.get("model_name"), str) and data["model_name"]:
            return data["model_name"]
    return fallback


def read_lmms_log(path: Path) -> HarnessLog:
    """One lmms-eval sample log (the samples file, or a folder holding exactly one)."""
    sample_file = _one_file(Path(path), _LMMS_SAMPLES, "lmms-eval")
    task = _LMMS_SAMPLES.match(sample_file.name).group("task")
    model = _model_from_results(sample_file, "*_results.json", sample_file.parent.name)
    samples = read_lmms_samples(sample_file)
    _no_repeated_doc(sample_file, samples)
    return HarnessLog("lmms-eval", sample_file, model, task, samples)


def read_lm_eval_log(path: Path, filter_name: str | None = None) -> HarnessLog:
    """One lm-evaluation-harness sample log, keeping the lines of one filter (default: the first)."""
    sample_file = _one_file(Path(path), _LM_EVAL_SAMPLES, "lm-eval")
    task = _LM_EVAL_SAMPLES.match(sample_file.name).group("task")
    model = _model_from_results(sample_file, "results_*.json", sample_file.parent.name)
    records = _read_jsonl(sample_file)
    filters = list(dict.fromkeys(str(record.get("filter", "none")) for _, record in records))
    chosen = filters[0] if filter_name is None else filter_name
    if chosen not in filters:
        fail(f"{sample_file}: no filter {chosen!r} (the log has {', '.join(filters)})")
    samples = [_sample(sample_file, n, r) for n, r in records if str(r.get("filter", "none")) == chosen]
    _no_repeated_doc(sample_file, samples)
    return HarnessLog("lm-eval", sample_file, model, task, samples)


def _read_parquet_rows(path: Path, columns: tuple) -> list:
    """The rows of a parquet file as dicts (nested columns as dicts and lists); ``columns`` required."""
    import pyarrow.parquet as pq  # only lighteval logs need it

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError, ArrowIOError an OSError
        fail(f"{path}: not a readable parquet file ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
    missing = [name for name in columns if name not in table.column_names]
    if missing:
        fail(f"{path}: no {missing[0]!r} column (columns: {', '.join(table.column_names)}; "
             "is this a lighteval details file?)")
    rows = table.to_pylist()
    if not rows:
        fail(f"{path}: no samples (empty log)")
    return rows


def _lighteval_target(where: str, doc: dict) -> str:
    """``choices[gold_index]`` (several gold answers: their JSON list)."""
    choices, gold = doc.get("choices"), doc.get("gold_index")
    golds = gold if isinstance(gold, list) else [gold]
    if not isinstance(choices, list) or not all(isinstance(g, int) and 0 <= g < len(choices) for g in golds):
        fail(f"{where}: doc gold_index {gold!r} does not index its choices {choices!r}")
    answers = [choices[g] for g in golds]
    return answers[0] if len(answers) == 1 and isinstance(answers[0], str) else json.dumps(answers)


def _lighteval_sample(path: Path, number: int, row: dict) -> Sample:
    doc, metric, response = row.get("doc"), row.get("metric"), row.get("model_response")
    if not isinstance(doc, dict) or not isinstance(response, dict) or not isinstance(metric, dict):
        fail(f"{path} row {number}: doc, metric and model_response must be records")
    doc_id = doc.get("id")
    if not isinstance(doc_id, str) or not doc_id.isdigit():
        fail(f"{path} row {number}: doc id must be a document index, got {doc_id!r}")
    where = f"{path} row {number} (doc_id {int(doc_id)})"
    texts = response.get("text_post_processed") or response.get("text") or []
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        fail(f"{where}: model_response text must be a list of strings, got {texts!r}")
    wanted = doc.get("num_samples")
    if texts and isinstance(wanted, int) and len(texts) != wanted:
        fail(f"{where}: {len(texts)} response(s) logged for num_samples {wanted} (lighteval logs a request that "
             "failed after its retries, or whose first sample came back empty, as one empty response); rerun it")
    return Sample(int(doc_id), _lighteval_target(where, doc), tuple(texts), metric, number)


def _lighteval_model(details: Path, date: str) -> str:
    """``config_general.model_name`` of ``OUT/results/<model>/results_<date>.json``, else ``<model>`` of the path."""
    parts = details.parent.parent.parts  # .../details/<model…>; details.parent is the <date> folder
    if "details" not in parts:
        return details.parent.parent.name
    at = len(parts) - 1 - parts[::-1].index("details")
    model = "/".join(parts[at + 1:]) or details.parent.parent.name
    results = Path(*parts[:at]) / "results" / model / f"results_{date}.json"
    try:
        name = json.loads(results.read_text(encoding="utf-8"))["config_general"]["model_name"]
    except (OSError, ValueError, KeyError, TypeError):
        return model
    return name if isinstance(name, str) and name else model


def read_lighteval_log(path: Path) -> HarnessLog:
    """One lighteval details log (the parquet file, or a folder holding exactly one)."""
    details = _one_file(Path(path), _LIGHTEVAL_DETAILS, "lighteval")
    match = _LIGHTEVAL_DETAILS.match(details.name)
    rows = _read_parquet_rows(details, ("doc", "metric", "model_response"))
    samples = [_lighteval_sample(details, number, row) for number, row in enumerate(rows, 1)]
    _no_repeated_doc(details, samples, "row")
    return HarnessLog("lighteval", details, _lighteval_model(details, match.group("date")), match.group("task"),
                      samples)


def _no_repeated_doc(path: Path, samples: list, unit: str = "line") -> None:
    seen: dict = {}
    for sample in samples:
        if sample.doc_id in seen:
            fail(f"{path} {unit} {sample.line}: doc_id {sample.doc_id} appears twice (also {unit} "
                 f"{seen[sample.doc_id]})")
        seen[sample.doc_id] = sample.line


def read_log(harness: str, path: Path, filter_name: str | None = None) -> HarnessLog:
    """Dispatch on ``harness`` (``lmms-eval``, ``lm-eval`` or ``lighteval``)."""
    if harness == "lm-eval":
        return read_lm_eval_log(path, filter_name)
    if filter_name is not None and harness in HARNESSES:
        fail(f"--filter applies to lm-eval logs only (a {harness} log has one record per document)")
    if harness == "lmms-eval":
        return read_lmms_log(path)
    if harness == "lighteval":
        return read_lighteval_log(path)
    fail(f"unknown harness {harness!r} (choose from {', '.join(HARNESSES)})")


def binarize(value, threshold: float, where: str) -> int:
    """A per-sample metric value as 0/1: booleans and 0/1 as they are, other numbers ``>= threshold``."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and not math.isnan(value):
        if value in (0, 1):
            return int(value)
        return int(value >= threshold)
    fail(f"{where}: metric value {value!r} is not a number")


@dataclass
class Rows:
    """Long response rows with where each came from (parallel lists, length R)."""

    model: list = field(default_factory=list)
    item: list = field(default_factory=list)
    trial: list = field(default_factory=list)
    correct: list = field(default_factory=list)
    where: list = field(default_factory=list)


def log_rows(log: HarnessLog, metric: str | None, n_trials: int, threshold: float = 0.5,
             grade_kind: str | None = None, rows: Rows | None = None) -> Rows:
    """Append one log's rows to ``rows`` (a new :class:`Rows` when None).

    Parameters
    ----------
    log : HarnessLog
    metric : str or None
        Per-sample metric key (``exact_match``, ``acc``…); ignored when ``grade_kind`` is given.
    n_trials : int
        Expected responses per document (K).
    threshold : float
        Binarization cut for metric values other than 0/1.
    grade_kind : str or None
        Grade every response against ``target`` with :func:`benchmeasure.verifier.grading.grade`.
    """
    rows = Rows() if rows is None else rows
    if grade_kind is not None:
        from .verifier.grading import grade  # imported only when grading (SymPy worker)
    single = [s for s in log.samples if len(s.responses) == 1]
    if n_trials > 1 and len(single) == len(log.samples):
        hint = {"lmms-eval": " (lmms-eval logs every repeat only when the task has a take_first_k filter with "
                             "k = repeats)",
                "lm-eval": " (log all repeats with a take_first_k filter)",
                "lighteval": " (lighteval samples K responses only for a metric that asks for them, e.g. "
                             "avg@n with n = K)"}[log.harness]
        fail(f"{log.path}: every document has one response but --n-trials is {n_trials}{hint}")
    for sample in sorted(log.samples, key=lambda s: s.doc_id):  # item order = the pool's order
        where = f"{log.path} doc_id {sample.doc_id}"
        if sample.failed_request is not None:
            fail(f"{where}: failed request in the log ({sample.failed_request[:120]!r}); the harness exited "
                 "0 anyway — rerun it")
        if grade_kind is not None:
            verdicts = [int(grade(grade_kind, text, sample.target)) for text in sample.responses]
        else:
            if not metric:
                fail("give --metric NAME (a per-sample metric key of the log) or --grade KIND")
            if metric not in sample.values:
                known = sorted(k for k, v in sample.values.items() if isinstance(v, (int, float, bool, list))
                               and k not in ("doc_id",))
                fail(f"{where}: no metric {metric!r} (per-sample values here: {', '.join(known) or 'none'})")
            value = sample.values[metric]
            if isinstance(value, list):
                if len(value) != len(sample.responses):
                    fail(f"{where}: metric {metric!r} has {len(value)} values for {len(sample.responses)} responses")
                verdicts = [binarize(v, threshold, where) for v in value]
            elif len(sample.responses) > 1:
                fail(f"{where}: {len(sample.responses)} responses but one {metric!r} value; per-trial "
                     "correctness needs --grade KIND (the value is never copied to every trial)")
            else:
                verdicts = [binarize(value, threshold, where)]
        for trial, ok in enumerate(verdicts):
            rows.model.append(log.model)
            rows.item.append(str(sample.doc_id))
            rows.trial.append(str(trial))
            rows.correct.append(ok)
            rows.where.append(where)
    return rows


def check_logs(logs: list) -> None:
    """Several logs make one matrix: one task, each model once."""
    first = logs[0]
    seen: dict = {}
    for log in logs:
        if log.task != first.task:
            fail(f"{log.path}: task {log.task!r} differs from {first.task!r} in {first.path}")
        if log.model in seen:
            fail(f"{log.path}: model {log.model!r} already comes from {seen[log.model]} "
                 "(the same model twice; use --model to rename a single log)")
        seen[log.model] = log.path


def logs_to_matrix(logs: list, metric: str | None, n_trials: int, threshold: float = 0.5,
                   grade_kind: str | None = None) -> tuple[ResponseMatrix, Rows]:
    """Validate and count the logs' rows (:func:`benchmeasure.responses.assemble_matrix`).

    Returns
    -------
    (ResponseMatrix, Rows)
        Counts of shape (models, items) and the long rows behind them.
    """
    check_n_trials(n_trials)
    if not logs:
        fail("no logs given")
    check_logs(logs)
    rows = Rows()
    for log in logs:
        log_rows(log, metric, n_trials, threshold, grade_kind, rows)
    model_codes, model_names = factorize(rows.model)
    item_codes, item_names = factorize(rows.item)
    trial_codes, trial_names = factorize(rows.trial)
    listing = ", ".join(f"{log.path} ({log.model})" for log in logs)
    whole_input = []  # set when assemble_matrix reports a problem of no single row (a missing document)

    def locate(r: int) -> str:
        if r < 0:
            whole_input.append(r)
            return f"logs {listing}"
        return rows.where[r]

    try:
        matrix = assemble_matrix(model_codes, model_names, item_codes, item_names, trial_codes, trial_names,
                                 np.asarray(rows.correct, dtype=np.int64), n_trials, locate)
    except InputError:
        # assemble_matrix (shared with the CSV path) is the check; here its message is said in the
        # logs' terms: the log that lacks the document, and one log that has it
        gap = first_missing_document(logs, rows) if whole_input else None
        if gap is None:
            raise
        log, doc_id, holder = gap
        fail(f"{log.path} (model {log.model}): no response for doc_id {doc_id} "
             f"(present in {holder.path}, model {holder.model})")
    return matrix, rows


def first_missing_document(logs: list, rows: Rows):
    """``(log, doc_id, holder)`` for the first document (in the order models, then documents, first
    appear in ``rows``) that ``log`` has no row for while ``holder`` has; ``None`` when every log
    has every document. Model names are unique across ``logs`` (:func:`check_logs`)."""
    by_model = {log.model: log for log in logs}
    present: dict = {}
    for model, item in zip(rows.model, rows.item):
        present.setdefault(model, set()).add(item)
    items = list(dict.fromkeys(rows.item))
    for model in present:
        for item in items:
            if item not in present[model]:
                holder = next(m for m in present if item in present[m])
                return by_model[model], item, by_model[holder]
    return None
