"""OpenCompass result files with per-sample details (``results/<model>/<dataset>.json``), standard library.

Format, checked against OpenCompass 0.5.4 on results it wrote with ``--dump-eval-details``
(``tests/fixtures/harness_logs/opencompass``; the fields are those written by OpenCompass's
``BaseEvaluator.evaluate`` and its evaluators' ``score``): one JSON object per model and dataset,
its aggregate metrics beside ``details``, which is either

- a list with one entry per item (current OpenCompass, any ``n``): ``example_abbr`` =
  ``<dataset abbr>_<index>`` (the item is the index), and per replica (a dataset run with
  ``n = K`` repeats every prompt K times, the G-Pass@k setting) one entry in each of the lists
  ``correct`` (or ``is_correct`` / ``cascade_correct``), ``pred`` and ``answer``; or
- an object keyed by the item (``"0"``, ``"1"``…; evaluators called without the replica grouping),
  each value with a boolean ``correct`` (or ``is_correct``) and ``pred`` / ``answer``.

The per-replica ``correct`` values are the trials. An entry without any correctness field (an
evaluator that records none) can only be graded (``--grade``, on ``pred`` against ``answer``, also
read as ``gold`` or ``refr``). The model is the ``<model>`` folder (the model's ``abbr``), the task
the file name (the dataset's ``abbr``). A results file without ``details`` (written without
``--dump-eval-details``) is refused with that hint.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.core.harness.formats import FORMATS
from benchmeasure.core.harness.records import HarnessLog, Sample, one_file, read_json

_RESULTS = re.compile(r"^(?P<task>.+)\.json$")
CORRECT_KEYS = ("correct", "is_correct", "cascade_correct")  # OpenCompass's own order
ANSWER_KEYS = ("answer", "gold", "refr", "references")


def _load(file: Path) -> dict:
    data = read_json(file)
    if not isinstance(data, dict):
        fail(f"{file}: not an OpenCompass results file (a JSON object with 'details' is expected)")
    return data


def _entries(file: Path, details, task: str) -> list:
    """``(item, entry)`` pairs in file order."""
    if isinstance(details, dict):
        return list(details.items())
    pairs = []
    for number, entry in enumerate(details):
        abbr = entry.get("example_abbr") if isinstance(entry, dict) else None
        if not isinstance(abbr, str) or not abbr:
            fail(f"{file} details[{number}]: no 'example_abbr' (is this an OpenCompass results file?)")
        pairs.append((abbr[len(task) + 1:] if abbr.startswith(f"{task}_") else abbr, entry))
    return pairs


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def _target(value) -> str:
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, str) else json.dumps(value)


def _sample(file: Path, number: int, item: str, entry, metric: str | None) -> Sample:
    where = f"{file} details item {item}"
    if not isinstance(entry, dict):
        fail(f"{where}: a detail must be an object, got {json.dumps(entry)[:80]}")
    key = metric or next((k for k in CORRECT_KEYS if k in entry), None)
    values = {}
    if key is not None:
        if key not in entry:
            fail(f"{where}: no {key!r} (fields here: {', '.join(map(str, entry))})")
        trials = _as_list(entry[key])
        if not trials:
            fail(f"{where}: {key!r} is empty")
        values[key] = [v if isinstance(v, (bool, int, float)) else str(v) for v in trials]
    preds = entry.get("pred", entry.get("prediction"))
    responses = None
    if preds is not None:
        responses = tuple(str(p) for p in _as_list(preds))
        if key is not None and len(responses) != len(values[key]):
            responses = None  # a prediction list that does not pair with the trials is not used
    answer = next((entry[k] for k in ANSWER_KEYS if k in entry), "")
    if isinstance(answer, list) and responses is not None and len(answer) == len(responses) > 1:
        answer = answer[0]  # one copy of the reference per replica
    return Sample(item, _target(answer), responses, values, number)


def read_opencompass_log(path: Path, metric: str | None = None) -> HarnessLog:
    """One model's OpenCompass results file (the ``.json``, or a folder holding exactly one)."""
    file = one_file(Path(path), _RESULTS, "opencompass")
    task = _RESULTS.match(file.name).group("task")
    data = _load(file)
    if "details" not in data:
        fail(f"{file}: no 'details' (run OpenCompass with --dump-eval-details to keep per-sample results)")
    details = data["details"]
    if not isinstance(details, (dict, list)) or not details:
        fail(f"{file}: 'details' must be a non-empty list or object")
    samples, seen = [], {}
    for number, (item, entry) in enumerate(_entries(file, details, task), 1):
        item = str(item)
        if item in seen:
            fail(f"{file} details item {item} appears twice (entries {seen[item]} and {number})")
        seen[item] = number
        samples.append(_sample(file, number, item, entry, metric))
    keys = {k for s in samples for k in s.values}
    if len(keys) > 1:
        fail(f"{file}: the details mix correctness fields ({', '.join(sorted(keys))}); choose one with --metric")
    if samples[0].values == {} and any(s.values for s in samples):
        fail(f"{file}: some details have no correctness field ({', '.join(CORRECT_KEYS)})")
    if not keys and any(s.responses is None for s in samples):
        fail(f"{file}: the details record no correctness ({', '.join(CORRECT_KEYS)}) and no predictions to grade")
    samples = _numeric_order(samples)
    return HarnessLog("opencompass", file, file.parent.name, task, samples, "item", next(iter(keys), None))


def _numeric_order(samples: list) -> list:
    """Items that are all document indices ("0", "1"…) in numeric order, as integers; others as logged."""
    if all(isinstance(s.doc_id, str) and s.doc_id.isdigit() and str(int(s.doc_id)) == s.doc_id for s in samples):
        return [replace(s, doc_id=int(s.doc_id)) for s in samples]
    return samples


@FORMATS.add("opencompass", package="opencompass", options=("metric",),
             repeats_hint=" (repeat each prompt with the dataset's n = K)")
def read_opencompass(path, options):
    """``prepare --from opencompass``: the reader of the format registry (:mod:`benchmeasure.core.harness.formats`)."""
    return read_opencompass_log(path, options.metric)
