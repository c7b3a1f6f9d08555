"""Harness logs → long response rows → the model × item count matrix.

Several logs (one per model, one task) are turned into the paper's ``model,item_id,trial,correct``
rows and counted by :func:`benchmeasure.core.responses.assemble_matrix`, the same checks and messages as
the CSV path (every model covers the same items with ``--n-trials`` trials each). Per-trial
correctness comes from a per-sample metric (a list of per-trial values is used entry by entry) or,
with ``grade_kind``, from grading every logged response against the logged target with the
project's graders; one value for K responses is never copied to every trial.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.base.errors import InputError, fail
from benchmeasure.core.harness.records import HarnessLog, Rows, Sample, binarize
from benchmeasure.core.matrix import ResponseMatrix, check_n_trials
from benchmeasure.core.responses import assemble_matrix, factorize

REPEATS_HINT = {
    "lmms-eval": " (lmms-eval logs every repeat only when the task has a take_first_k filter with k = repeats)",
    "lm-eval": " (log all repeats with a take_first_k filter)",
    "lighteval": " (lighteval samples K responses only for a metric that asks for them, e.g. avg@n with n = K)",
    "inspect": " (run the evaluation with --epochs K)",
    "helm": " (run HELM with num_train_trials K)",
    "opencompass": " (repeat each prompt with the dataset's n = K)",
    "evalscope": " (run evalscope with --repeats K)",
}


def item_order(samples: list) -> list:
    """Integer item IDs (document positions) in numeric order; other IDs in the log's order."""
    if all(isinstance(s.doc_id, int) for s in samples):
        return sorted(samples, key=lambda s: s.doc_id)
    return list(samples)


def metric_verdicts(sample: Sample, metric: str | None, threshold: float, where: str) -> list:
    """Per-trial 0/1 of one sample from its metric value (a list: one value per trial)."""
    if not metric:
        fail("give --metric NAME (a per-sample metric key of the log) or --grade KIND")
    if metric not in sample.values:
        known = sorted(k for k, v in sample.values.items() if isinstance(v, (int, float, bool, list))
                       and k not in ("doc_id",))
        fail(f"{where}: no metric {metric!r} (per-sample values here: {', '.join(known) or 'none'})")
    value = sample.values[metric]
    if isinstance(value, list):
        if sample.responses is not None and len(value) != len(sample.responses):
            fail(f"{where}: metric {metric!r} has {len(value)} values for {len(sample.responses)} responses")
        return [binarize(v, threshold, where) for v in value]
    if sample.n_trials > 1:
        fail(f"{where}: {sample.n_trials} responses but one {metric!r} value; per-trial "
             "correctness needs --grade KIND (the value is never copied to every trial)")
    return [binarize(value, threshold, where)]


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
        Grade every response against ``target`` with :func:`benchmeasure.grading.grade`.
    """
    rows = Rows() if rows is None else rows
    if grade_kind is not None:
        from benchmeasure.grading import grade  # imported only when grading (SymPy worker)
        if any(s.responses is None for s in log.samples):
            fail(f"{log.path}: a {log.harness} log keeps no response text to grade; choose a logged value "
                 "with --metric NAME instead of --grade")
    if n_trials > 1 and log.samples and all(s.n_trials == 1 for s in log.samples):
        fail(f"{log.path}: every document has one response but --n-trials is {n_trials}"
             f"{REPEATS_HINT.get(log.harness, '')}")
    metric = metric or log.metric
    for sample in item_order(log.samples):
        where = f"{log.path} {log.item_label} {sample.doc_id}"
        if sample.failed_request is not None:
            fail(f"{where}: failed request in the log ({sample.failed_request[:120]!r}); the harness exited "
                 "0 anyway — rerun it")
        if grade_kind is not None:
            verdicts = [int(grade(grade_kind, text, sample.target)) for text in sample.responses]
        else:
            verdicts = metric_verdicts(sample, metric, threshold, where)
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
    """Validate and count the logs' rows (:func:`benchmeasure.core.responses.assemble_matrix`).

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
        fail(f"{log.path} (model {log.model}): no response for {log.item_label} {doc_id} "
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
