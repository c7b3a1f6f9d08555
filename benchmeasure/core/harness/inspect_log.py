"""Inspect AI evaluation logs (``.eval`` and ``.json``), read through Inspect's own public reader.

A log is read with ``inspect_ai.log.read_eval_log`` (the header first, then the samples without their
messages and events), never by unpacking its files by hand, so
every log schema that the pinned ``inspect-ai`` reads — the ``.eval`` zip logs of current
versions and the ``.json`` logs of older ones — reads here. Fields used (checked against
inspect-ai 0.3.285, and 0.3.40 for an older ``.json`` log; ``tests/fixtures/harness_logs/inspect``):

- ``status``: only ``"success"`` is read; ``"error"``, ``"cancelled"`` and ``"started"`` are
  refused with the status (and the log's ``error.message``);
- ``eval.model`` (the model name, e.g. ``openai/x``) and ``eval.task``;
- per sample: ``id`` (the item), ``epoch`` (the trial: epochs in increasing order), ``scores``
  (scorer name → ``Score``; its ``value`` is used), ``target`` (str or list of str),
  ``output.completion`` (the response, for ``--grade``), ``error`` (a sample that ended in an
  error is refused).

Score values: ``"C"`` → 1 and ``"I"`` → 0 (Inspect's CORRECT/INCORRECT), booleans and the
numbers 0 and 1 as they are. ``"P"`` (partial), ``"N"`` (no answer) and any other value need an
explicit ``partial`` policy: ``"as-wrong"`` (0), ``"as-right"`` (1) or ``"reject"`` (the default:
an error naming the sample, epoch and value). A score that is a dict or list (several values) is
always refused. A log with several scorers needs ``scorer``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.core.harness.formats import FORMATS
from benchmeasure.core.harness.records import HarnessLog, Sample

PARTIAL_CHOICES = ("reject", "as-wrong", "as-right")
INSTALL = "pip install 'benchmeasure[harness]' (in a checkout: bash scripts/setup_env.sh harness)"
_LOG_NAME = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2}T[^_]+)_(?P<task>.+)_(?P<id>[A-Za-z0-9]+)\.(eval|json)$")
_VALUES = {"C": 1, "I": 0}


def _log_file(path: Path) -> Path:
    """The log ``path`` is, or the one Inspect log (``<date>_<task>_<id>.eval|.json``) a folder holds."""
    if path.is_file():
        return path
    if not path.is_dir():
        fail(f"{path}: no such file or folder")
    found = sorted(p for p in path.rglob("*") if p.is_file() and _LOG_NAME.match(p.name))
    if not found:
        fail(f"{path}: no Inspect log in it (looked for <date>_<task>_<id>.eval or .json)")
    if len(found) > 1:
        listed = ", ".join(str(f) for f in found[:4])
        fail(f"{path}: holds {len(found)} Inspect logs ({listed}); give one log per model")
    return found[0]


#: Sample fields the reader never uses, left unread (a long agent transcript can dwarf the scores)
UNUSED_FIELDS = {"messages", "events", "attachments", "store"}


def _reader(file: Path, what: str, call):
    """Run an inspect_ai.log reader call; any failure of it is one line naming the file."""
    try:
        return call()
    except ImportError:
        fail(f"reading Inspect logs needs the inspect-ai package: {INSTALL}")
    except Exception as exc:  # Inspect's reader raises many kinds (zip, JSON, pydantic); all mean "not a log"
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fail(f"{file}: not a readable Inspect log ({what}: {reason[:200]})")


def _header(file: Path):
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        fail(f"reading Inspect logs needs the inspect-ai package: {INSTALL}")
    return _reader(file, "header", lambda: read_eval_log(str(file), header_only=True))


def _samples(file: Path) -> list:
    """The log's samples, read by Inspect's reader without the fields this reader does not use."""
    from inspect_ai.log import read_eval_log

    return _reader(file, "samples", lambda: read_eval_log(str(file), exclude_fields=UNUSED_FIELDS).samples) or []


def score_value(value, partial: str, where: str) -> int:
    """One Inspect score value as 0/1 under the ``partial`` policy (see the module docstring)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value in _VALUES:
        return _VALUES[value]
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, (dict, list)):
        fail(f"{where}: score value {json.dumps(value)[:120]} holds several values; one value per sample is needed")
    if partial == "as-wrong":
        return 0
    if partial == "as-right":
        return 1
    meaning = {"P": "partial credit", "N": "no answer"}.get(value, "neither correct nor incorrect")
    fail(f"{where}: score {value!r} ({meaning}); choose --partial as-wrong or --partial as-right to count it")


def _scorer(file: Path, samples, scorer: str | None) -> str:
    names = list(dict.fromkeys(name for sample in samples for name in (sample.scores or {})))
    if not names:
        fail(f"{file}: no scores in the log (was it scored? `inspect score` adds them)")
    if scorer is None:
        if len(names) > 1:
            fail(f"{file}: the log has {len(names)} scorers ({', '.join(names)}); choose one with --scorer NAME")
        return names[0]
    if scorer not in names:
        fail(f"{file}: no scorer {scorer!r} (the log has {', '.join(names)})")
    return scorer


def _target(target) -> str:
    if isinstance(target, list):
        return target[0] if len(target) == 1 else json.dumps(target)
    return str(target)


def read_inspect_log(path: Path, scorer: str | None = None, partial: str = "reject") -> HarnessLog:
    """One Inspect log (the ``.eval``/``.json`` file, or a folder holding exactly one)."""
    if partial not in PARTIAL_CHOICES:
        fail(f"--partial must be one of {', '.join(PARTIAL_CHOICES)}, got {partial!r}")
    file = _log_file(Path(path))
    log = _header(file)
    if log.status != "success":
        error = getattr(log.error, "message", None) if log.error is not None else None
        detail = f": {str(error).strip().splitlines()[0][:160]}" if error and str(error).strip() else ""
        fail(f"{file}: the evaluation's status is {log.status!r}{detail}; only a log with status 'success' "
             "is read (rerun or resume it with `inspect eval-retry`)")
    samples = _samples(file)
    if not samples:
        fail(f"{file}: no samples in the log (was it written with --no-log-samples?)")
    name = _scorer(file, samples, scorer)
    by_id: dict = {}
    for number, sample in enumerate(samples, 1):
        where = f"{file} sample id {sample.id!r} epoch {sample.epoch}"
        if sample.error is not None:
            message = str(getattr(sample.error, "message", sample.error)).strip().splitlines()
            fail(f"{where}: the sample ended in an error ({(message or ['?'])[0][:160]})")
        score = (sample.scores or {}).get(name)
        if score is None:
            fail(f"{where}: no {name!r} score")
        entry = by_id.setdefault(sample.id, {"line": number, "target": _target(sample.target), "trials": {}})
        if sample.epoch in entry["trials"]:
            fail(f"{where}: epoch {sample.epoch} appears twice for this sample")
        completion = sample.output.completion if sample.output is not None else ""
        entry["trials"][sample.epoch] = (completion, score_value(score.value, partial, f"{where} scorer {name!r}"))
    samples = []
    for item, entry in by_id.items():
        trials = [entry["trials"][epoch] for epoch in sorted(entry["trials"])]
        samples.append(Sample(item, entry["target"], tuple(t[0] for t in trials), {name: [t[1] for t in trials]},
                              entry["line"]))
    return HarnessLog("inspect", file, str(log.eval.model), str(log.eval.task), samples, "sample id", name)


@FORMATS.add("inspect", package="inspect_ai", options=("scorer", "partial"),
             repeats_hint=" (run the evaluation with --epochs K)")
def read_inspect(path, options):
    """``prepare --from inspect``: the reader of the format registry (:mod:`benchmeasure.core.harness.formats`)."""
    return read_inspect_log(path, options.scorer, options.partial or "reject")
