"""evalscope review logs (``reviews/<model>/<benchmark>_<subset>.jsonl``), read with the standard library.

Format, checked against evalscope 1.14.1 on logs it wrote (``tests/fixtures/harness_logs/evalscope``;
the fields are those of evalscope's ``ReviewResult`` / ``SampleScore`` / ``Score`` records):
one JSON object per line and per (item, repeat), in no particular order, with

- ``index``: the sample's index in the evaluated (repeated) list;
- ``target``: the accepted answers (a list of strings; older logs: a string);
- ``sample_score.group_id``: the item (the index of the original sample; with ``--repeats K``
  each item has K lines) and ``sample_score.generation_index``: the repeat (0…K−1). A log without
  them (older evalscope) has one line per item: the item is ``index``, one trial;
- ``sample_score.score.value``: the per-sample values (metric name → number, e.g.
  ``{"accuracy": 1.0}``), ``main_score_name`` (the value used unless ``--metric`` names another),
  ``status`` (``success`` and ``fallback`` carry a score; ``transport_error``, ``parse_error``,
  ``invalid_session``, ``degraded`` and ``excluded`` mean the score is unavailable, and such a log
  is refused) and ``prediction`` (the response, for ``--grade``).

The model is the ``<model>`` folder, the task the file name (``<benchmark>_<subset>``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.core.harness.formats import FORMATS
from benchmeasure.core.harness.records import HarnessLog, Sample, one_file, read_jsonl

_REVIEWS = re.compile(r"^(?P<task>.+)\.jsonl$")
USABLE = ("success", "fallback")


def _int(value, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        fail(f"{where}: {name} must be a non-negative integer, got {value!r}")
    return value


def _target(value) -> str:
    if isinstance(value, list):
        return str(value[0]) if len(value) == 1 else json.dumps(value)
    return "" if value is None else str(value)


def _trial(path: Path, number: int, record: dict, metric: str | None) -> tuple:
    """``(item, trial, target, prediction, values, metric)`` of one review line."""
    where = f"{path} line {number}"
    sample_score = record.get("sample_score")
    score = sample_score.get("score") if isinstance(sample_score, dict) else None
    if not isinstance(score, dict) or "index" not in record:
        fail(f"{where}: no 'index' and 'sample_score.score' (is this an evalscope review file?)")
    index = _int(record["index"], where, "index")
    group, repeat = sample_score.get("group_id"), sample_score.get("generation_index")
    item = index if group is None else _int(group, where, "sample_score.group_id")
    trial = 0 if repeat is None else _int(repeat, where, "sample_score.generation_index")
    where = f"{where} (item {item}, repeat {trial})"
    status = score.get("status", "success")
    if status not in USABLE:
        fail(f"{where}: score status {status!r}: evalscope could not score this sample (usable: "
             f"{', '.join(USABLE)}); rerun the review")
    values = score.get("value")
    if not isinstance(values, dict) or not values:
        fail(f"{where}: sample_score.score.value must be an object of metric values, got {values!r}")
    main = score.get("main_score_name")
    if main is not None and not isinstance(main, str):
        fail(f"{where}: sample_score.score.main_score_name must be a string, got {main!r}")
    name = metric or main or next(iter(values))
    if name not in values:
        fail(f"{where}: no metric {name!r} (per-sample values here: {', '.join(map(str, values))})")
    prediction = score.get("prediction")
    return item, trial, _target(record.get("target")), prediction if isinstance(prediction, str) else "", values, name


def read_evalscope_log(path: Path, metric: str | None = None) -> HarnessLog:
    """One model's evalscope review file (the ``.jsonl``, or a folder holding exactly one)."""
    file = one_file(Path(path), _REVIEWS, "evalscope")
    items: dict = {}
    names = set()
    for number, record in read_jsonl(file):
        item, trial, target, prediction, values, name = _trial(file, number, record, metric)
        names.add(name)
        entry = items.setdefault(item, {"line": number, "target": target, "trials": {}})
        if trial in entry["trials"]:
            fail(f"{file} line {number}: item {item} repeat {trial} appears twice (also line "
                 f"{entry['trials'][trial][2]})")
        entry["trials"][trial] = (prediction, values[name], number)
    if len(names) > 1:
        fail(f"{file}: the lines name different main scores ({', '.join(sorted(names))}); choose one with --metric")
    (name,) = names
    samples = []
    for item, entry in items.items():
        trials = [entry["trials"][t] for t in sorted(entry["trials"])]
        samples.append(Sample(item, entry["target"], tuple(t[0] for t in trials), {name: [t[1] for t in trials]},
                              entry["line"]))
    return HarnessLog("evalscope", file, file.parent.name, _REVIEWS.match(file.name).group("task"), samples,
                      "item", name)


@FORMATS.add("evalscope", package="evalscope", options=("metric",), repeats_hint=" (run evalscope with --repeats K)")
def read_evalscope(path, options):
    """``prepare --from evalscope``: the reader of the format registry (:mod:`benchmeasure.core.harness.formats`)."""
    return read_evalscope_log(path, options.metric)
