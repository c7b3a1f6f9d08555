"""lighteval details logs (parquet, one row per document).

Format, checked against lighteval 0.13.0 on logs it wrote (``tests/fixtures/harness_logs``):
``OUT/details/<model>/<date>/details_<task>|<few-shot>_<date>.parquet`` (the model name may
hold a ``/``, e.g. ``openai/x``) beside ``OUT/results/<model>/results_<date>.json``
(``config_general.model_name``); one row per document, NOT in document order, with the
columns ``doc`` (``id`` = the document's index as a string, ``choices``, ``gold_index``,
``num_samples``), ``metric`` (one value per metric, e.g. ``em``, ``avg@n:n=3``) and
``model_response`` (``text``: the ``num_samples`` responses; ``text_post_processed``). A
request that failed after its retries, or whose first sample came back empty, is logged as
the one response ``""``; a row whose response count is not ``num_samples`` is rejected.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.core.harness.formats import FORMATS
from benchmeasure.core.harness.records import HarnessLog, Sample, no_repeated_item, one_file

_LIGHTEVAL_DETAILS = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.parquet$")


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
    details = one_file(Path(path), _LIGHTEVAL_DETAILS, "lighteval")
    match = _LIGHTEVAL_DETAILS.match(details.name)
    rows = _read_parquet_rows(details, ("doc", "metric", "model_response"))
    samples = [_lighteval_sample(details, number, row) for number, row in enumerate(rows, 1)]
    no_repeated_item(details, samples, "row")
    return HarnessLog("lighteval", details, _lighteval_model(details, match.group("date")), match.group("task"),
                      samples)


@FORMATS.add("lighteval", package="lighteval", options=("metric",),
             repeats_hint=" (lighteval samples K responses only for a metric that asks for them, "
                          "e.g. avg@n with n = K)")
def read_lighteval(path, options):
    """``prepare --from lighteval``: the reader of the format registry (:mod:`benchmeasure.core.harness.formats`)."""
    return read_lighteval_log(path)
