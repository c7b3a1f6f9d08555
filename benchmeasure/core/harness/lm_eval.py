"""lmms-eval and lm-evaluation-harness sample logs (JSON Lines, one line per document).

Formats, checked against lmms-eval 0.7.3 and lm-evaluation-harness (``lm-eval``) 0.4.13 on
logs they wrote (``tests/fixtures/harness_logs``):

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

``item_id`` is the harness's ``doc_id`` (the position in the evaluated item pool), ``trial``
the repeat index.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.core.harness.formats import FORMATS
from benchmeasure.core.harness.records import HarnessLog, Sample, no_repeated_item, one_file, pick, read_jsonl

FAILED_MARK = "[LMMS_EVAL_REQUEST_FAILED"
_LMMS_SAMPLES = re.compile(r"^(?P<date>.+?)_samples_(?P<task>.+)\.jsonl$")
_LM_EVAL_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")


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


def find_lmms_samples(folder: Path, task: str | None = None) -> list:
    """lmms-eval sample files (``<date>_samples_<task>.jsonl``) under ``folder``, oldest first."""
    folder = Path(folder)
    return pick(folder, _LMMS_SAMPLES, task) if folder.exists() else []


def read_lmms_samples(path: Path) -> list:
    """The :class:`Sample` records of one lmms-eval samples file, in file order."""
    path = Path(path)
    return [_sample(path, number, record) for number, record in read_jsonl(path)]


def _model_from_results(sample_file: Path, results_glob: str, fallback: str) -> str:
    """The model name recorded in the results file beside the samples, else ``fallback``."""
    for results in sorted(sample_file.parent.glob(results_glob), reverse=True):
        try:
            data = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        config = data.get("config")
        args = config.get("model_args") if isinstance(config, dict) else None
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
    sample_file = one_file(Path(path), _LMMS_SAMPLES, "lmms-eval")
    task = _LMMS_SAMPLES.match(sample_file.name).group("task")
    model = _model_from_results(sample_file, "*_results.json", sample_file.parent.name)
    samples = read_lmms_samples(sample_file)
    no_repeated_item(sample_file, samples)
    return HarnessLog("lmms-eval", sample_file, model, task, samples)


def read_lm_eval_log(path: Path, filter_name: str | None = None) -> HarnessLog:
    """One lm-evaluation-harness sample log, keeping the lines of one filter (default: the first)."""
    sample_file = one_file(Path(path), _LM_EVAL_SAMPLES, "lm-eval")
    task = _LM_EVAL_SAMPLES.match(sample_file.name).group("task")
    model = _model_from_results(sample_file, "results_*.json", sample_file.parent.name)
    records = read_jsonl(sample_file)
    filters = list(dict.fromkeys(str(record.get("filter", "none")) for _, record in records))
    chosen = filters[0] if filter_name is None else filter_name
    if chosen not in filters:
        fail(f"{sample_file}: no filter {chosen!r} (the log has {', '.join(filters)})")
    samples = [_sample(sample_file, n, r) for n, r in records if str(r.get("filter", "none")) == chosen]
    no_repeated_item(sample_file, samples)
    return HarnessLog("lm-eval", sample_file, model, task, samples)


@FORMATS.add("lmms-eval", package="lmms_eval", options=("metric",),
             repeats_hint=" (lmms-eval logs every repeat only when the task has a take_first_k filter "
                          "with k = repeats)")
def read_lmms(path, options):
    """``prepare --from lmms-eval``: the reader of the format registry (:mod:`benchmeasure.core.harness.formats`)."""
    return read_lmms_log(path)


@FORMATS.add("lm-eval", package="lm_eval", options=("filter_name", "metric"),
             repeats_hint=" (log all repeats with a take_first_k filter)")
def read_lm_eval(path, options):
    """``prepare --from lm-eval``: the reader of the format registry (:mod:`benchmeasure.core.harness.formats`)."""
    return read_lm_eval_log(path, options.filter_name)
