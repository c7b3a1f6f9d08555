"""The records every harness-log reader produces, and the helpers they share.

A reader turns one model's log of one task into a :class:`HarnessLog`: a list of
:class:`Sample` records, one per item, each holding that item's trials (responses and/or
per-trial metric values). :mod:`benchmeasure.core.harness.assemble` turns several such logs into
the paper's response rows and count matrix.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.base.files import read_jsonl_objects


@dataclass(frozen=True)
class Sample:
    """One item of a log, with all its trials.

    Attributes
    ----------
    doc_id : int or str
        The item's ID in the log (lm-eval/lmms-eval/lighteval ``doc_id``, Inspect sample ``id``,
        HELM ``instance_id``, OpenCompass detail key, evalscope ``index``).
    target : str
        The reference answer as the log records it ("" when it records none).
    responses : tuple of str or None
        The (filtered) responses, one per trial; None when the log keeps no response text
        (then ``values`` must hold one list per metric with one value per trial).
    values : dict of str to object
        Per-sample metric values (a list holds one value per trial).
    line : int
        Where the item is in the file (line, row or entry number), 1-based.
    failed_request : str or None
        The first response that marks a failed request.
    """

    doc_id: int | str
    target: str
    responses: tuple | None
    values: dict = field(repr=False)
    line: int = 0
    failed_request: str | None = None

    @property
    def n_trials(self) -> int:
        """Trials logged for this item: its responses, else the length of its per-trial values."""
        if self.responses is not None:
            return len(self.responses)
        lengths = [len(v) for v in self.values.values() if isinstance(v, list)]
        return max(lengths, default=0)


@dataclass(frozen=True)
class HarnessLog:
    """One model's log of one task.

    ``item_label`` names the item ID in messages (``doc_id``, ``sample id``…); ``metric`` is the
    per-sample value used when the user names none (a reader that resolves the score itself,
    such as Inspect's scorer, sets it).
    """

    harness: str
    path: Path
    model: str
    task: str
    samples: list
    item_label: str = "doc_id"
    metric: str | None = None


@dataclass
class Rows:
    """Long response rows with where each came from (parallel lists, length R)."""

    model: list = field(default_factory=list)
    item: list = field(default_factory=list)
    trial: list = field(default_factory=list)
    correct: list = field(default_factory=list)
    where: list = field(default_factory=list)


def binarize(value, threshold: float, where: str) -> int:
    """A per-sample metric value as 0/1: booleans and 0/1 as they are, other numbers ``>= threshold``."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        if value in (0, 1):
            return int(value)
        return int(value >= threshold)
    if isinstance(value, float):  # JSON's NaN / Infinity: no verdict can be read from it
        fail(f"{where}: metric value {value!r} is not a finite number")
    fail(f"{where}: metric value {value!r} is not a number")


def read_json(file: Path):
    """The content of one JSON log file; a file that is unreadable, not UTF-8 or not JSON is one error line."""
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        fail(f"{file}: not UTF-8 text")
    except ValueError as exc:
        fail(f"{file}: not valid JSON ({str(exc).splitlines()[0]})")
    except OSError as exc:
        fail(f"{file}: cannot read ({exc.strerror or exc})")


def read_jsonl(path: Path) -> list:
    """``(line number, object)`` of a non-empty JSON Lines log."""
    records = read_jsonl_objects(path)
    if not records:
        fail(f"{path}: no samples (empty log)")
    return records


def pick(path: Path, pattern: re.Pattern, task: str | None) -> list:
    """Log files of a folder (searched recursively) whose name matches ``pattern``, or the one file given."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        fail(f"{path}: no such file or folder")
    return sorted(p for p in path.rglob("*") if p.is_file() and pattern.match(p.name)
                  and (task is None or pattern.match(p.name).group("task") == task))


def one_file(path: Path, pattern: re.Pattern, harness: str) -> Path:
    """The one log file ``path`` is or holds; an error when it holds none or several."""
    files = pick(path, pattern, None)
    if len(files) == 1 and not pattern.match(files[0].name):
        fail(f"{files[0]}: not named like a {harness} sample log ({pattern.pattern}); the name carries the task")
    if not files:
        fail(f"{path}: no {harness} sample log in it (looked for {pattern.pattern})")
    if len(files) > 1:
        listed = ", ".join(str(f) for f in files[:4])
        tasks = {pattern.match(f.name).group("task") for f in files}
        fail(f"{path}: holds {len(files)} {harness} sample logs ({listed}); give one file per model "
             f"({len(tasks)} task{'s' if len(tasks) > 1 else ''})")
    return files[0]


def no_repeated_item(path: Path, samples: list, unit: str = "line", label: str = "doc_id") -> None:
    """Refuse a log that holds an item twice, naming both places."""
    seen: dict = {}
    for sample in samples:
        if sample.doc_id in seen:
            fail(f"{path} {unit} {sample.line}: {label} {sample.doc_id} appears twice (also {unit} "
                 f"{seen[sample.doc_id]})")
        seen[sample.doc_id] = sample.line
