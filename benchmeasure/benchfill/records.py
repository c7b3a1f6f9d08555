"""Typed records of a BenchFill run: the journal's events and the item record of the outputs.

Each line of ``events.jsonl`` (:mod:`.eventlog`) is one event, a JSON object whose ``type`` names
its class here; :func:`event_from_dict` checks every field (name and JSON type) and builds the
dataclass, so a damaged journal is one error naming its line and field, never a ``KeyError``
later. ``to_dict`` gives the object written back. The names are the ones used everywhere — in
the code, the journal, ``summary.json`` and the CSV outputs — and a gap's endpoints are ``left`` /
``right`` as in :class:`benchmeasure.core.metrics.Gap`. Journals written before the renames are still
read (``z_L`` / ``z_R`` → ``left`` / ``right``; see CHANGELOG.md).

Events (paper, Section 4, Figure 4: plan a round, rewrite, verify, annotate, select):

* :class:`Plan` — a round's parents and reference list for one gap and mode;
* :class:`Call` — one model call's result, keyed (a resumed run answers it from the journal);
* :class:`Annotation` — one child: its text, validity, online calibration (the run's memory) and item fit;
* :class:`GapDone` — a gap's final item, rounds and rewrites spent, the children dropped because they misfit;
* :class:`Reannotation` — the independent calibration of a gap's final item from fresh rollouts;
* :class:`RaceBatch` — one more batch of rollouts on a child racing for a certified keep (:mod:`.certify`);
* :class:`Resolution` — extra rollouts on an original item at the edge of an unresolved target gap (:mod:`.resolve`);
* :class:`Keep` — a gap's certified keep (or that its budget ran out without one), with interval and calls;
* :class:`MassStep` / :class:`MassResult` — mass fill's choice of a gap and its outcome.
"""

from __future__ import annotations

import math
import typing
from dataclasses import MISSING, asdict, dataclass, fields
from typing import ClassVar

from benchmeasure.base.errors import fail
from benchmeasure.base.files import RENAMED_FIELDS
from benchmeasure.benchfill.gaps import Item

_KINDS = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "list": (list,), "dict": (dict,)}


def _check(value, hint: str, where: str, name: str):
    """``value`` if it has the JSON type ``hint`` (``"float | None"`` style), converted; else InputError."""
    options = [h.strip() for h in hint.split("|")]
    if value is None:
        if "None" in options:
            return None
        fail(f"{where}: field {name!r} is null, expected {hint}")
    for option in options:
        kinds = _KINDS.get(option)
        if kinds is None or (isinstance(value, bool) and option != "bool"):
            continue
        if isinstance(value, kinds):
            if option == "float":
                value = float(value)
                if not math.isfinite(value):
                    fail(f"{where}: field {name!r} is not finite")
            return value
    fail(f"{where}: field {name!r} is {type(value).__name__} {str(value)[:40]!r}, expected {hint}")


class Record:
    """Shared ``to_dict`` / ``from_dict`` of the records below (dataclasses of JSON values)."""

    TYPE: ClassVar[str] = ""

    def to_dict(self) -> dict:
        data = asdict(self)
        if "time" in data and data["time"] is None:
            del data["time"]
        return {"type": self.TYPE, **data} if self.TYPE else data

    @classmethod
    def from_dict(cls, data: dict, where: str = "record"):
        if not isinstance(data, dict):
            fail(f"{where}: expected a JSON object, got {type(data).__name__}")
        data = {RENAMED_FIELDS.get(k, k): v for k, v in data.items()}  # journals written before the rename
        hints = typing.get_type_hints(cls)
        values = {}
        for spec in fields(cls):
            if spec.name not in data:
                if spec.default is not MISSING:   # time, and fields added since (journals written before)
                    continue
                fail(f"{where}: {cls.TYPE or cls.__name__} lacks field {spec.name!r}")
            values[spec.name] = _check(data[spec.name], _hint_text(hints[spec.name]), where, spec.name)
        return cls(**values)


def _hint_text(hint) -> str:
    text = str(hint).replace("typing.", "").replace("<class '", "").replace("'>", "")
    return text.replace("Optional[", "None | ").rstrip("]").replace("NoneType", "None")


@dataclass(frozen=True)
class Plan(Record):
    """A round's plan: the parents to rewrite and the reference list, for one gap (``gap`` = its rank)."""

    TYPE: ClassVar[str] = "plan"
    mode: str
    gap: int
    round: int
    target: float
    parents: list
    references: list
    time: float | None = None


@dataclass(frozen=True)
class Call(Record):
    """One model call's result (texts and token counts), under its journal key."""

    TYPE: ClassVar[str] = "call"
    key: str
    model: str
    result: dict
    time: float | None = None


@dataclass(frozen=True)
class Annotation(Record):
    """One rewrite (child) after the verifier: validity and, when valid, its online calibration."""

    TYPE: ClassVar[str] = "annotation"
    item_id: str
    mode: str
    gap: int
    round: int
    parent_id: str
    question: str
    answer: str
    valid: bool
    reason: str
    counts: dict
    b_mean: float | None
    b_sd: float | None
    z: float | None
    target: float
    # check-fit's item test against the panel's fixed abilities (calibration.item_fit; [search] misfit_p); None when
    # the check is off or the child is invalid. A child whose record says "misfit" is never kept.
    fit: dict | None = None
    time: float | None = None

    @property
    def misfits(self) -> bool:
        return bool(self.fit and self.fit.get("misfit"))

    def as_item(self) -> Item:
        return Item(self.item_id, self.question, self.answer, self.z, self.b_mean, self.b_sd, self.mode)


@dataclass(frozen=True)
class GapDone(Record):
    """A finished gap of one mode: rounds and rewrites spent, early stop, final item and its deviation."""

    TYPE: ClassVar[str] = "gap_done"
    mode: str
    gap: int
    rounds: int
    rewrites: int
    stopped_early: bool
    final: str | None
    deviation: float | None
    # the gap's valid children not kept because they misfit ({item_id, p_value, reason, trials}); journals written
    # before the item-fit keep criterion have none
    misfits: list | None = None
    time: float | None = None


@dataclass(frozen=True)
class Reannotation(Record):
    """The independent calibration of a gap's final item: ``trials`` fresh rollouts per panel model."""

    TYPE: ClassVar[str] = "reannotation"
    mode: str
    gap: int
    item_id: str
    trials: int
    counts: dict
    b_mean: float
    b_sd: float
    z: float
    z_sd: float
    target: float
    time: float | None = None

    @property
    def deviation(self) -> float:
        return abs(self.z - self.target)


@dataclass(frozen=True)
class RaceBatch(Record):
    """One race batch on a child (``[search] keep = "certified"``, :mod:`.certify`): ``trials`` fresh rollouts per
    panel model under the journal keys ``race<batch>/<item_id>/<model>``, and the correct counts they gave."""

    TYPE: ClassVar[str] = "race_batch"
    mode: str
    gap: int
    item_id: str
    batch: int
    trials: int
    counts: dict
    time: float | None = None


@dataclass(frozen=True)
class Keep(Record):
    """A gap's outcome under the certified keep rule: the kept child and its pooled posterior (``certified``), or
    the best uncertified candidate when the budget ran out (``certified`` false, ``item_id`` may be null); the
    interval ``[z_low, z_high]`` at credible mass ``level`` against the band ``[band_low, band_high]``, the trials
    per model behind it, and the model calls the gap cost (rewrites, solves, rollouts, race batches)."""

    TYPE: ClassVar[str] = "keep"
    mode: str
    gap: int
    item_id: str | None
    certified: bool
    b_mean: float | None
    b_sd: float | None
    z: float | None
    z_sd: float | None
    z_low: float | None
    z_high: float | None
    band_low: float
    band_high: float
    level: float
    trials: int
    batches: int
    race_batches: int
    calls: int
    target: float
    time: float | None = None


@dataclass(frozen=True)
class Resolution(Record):
    """Extra rollouts on an original item at the edge of an unresolved target gap (``[search] unresolved =
    "resolve"``, :mod:`.resolve`) in resolve round ``round``: ``trials`` per panel model under the journal keys
    ``resolve<round>/<item_id>/<model>``, and the correct counts they gave."""

    TYPE: ClassVar[str] = "resolution"
    item_id: str
    round: int
    trials: int
    counts: dict
    time: float | None = None


@dataclass(frozen=True)
class MassStep(Record):
    """Mass fill's choice for one step: the gap [left, right], its target and rewrite budget."""

    TYPE: ClassVar[str] = "mass_step"
    step: int
    left: float
    right: float
    target: float
    width: float
    budget: int
    max_gap_before: float
    time: float | None = None


@dataclass(frozen=True)
class MassResult(Record):
    """Mass fill's outcome of one step: the final item, and whether it was inserted (inside the gap)."""

    TYPE: ClassVar[str] = "mass_result"
    step: int
    left: float
    right: float
    target: float
    item_id: str | None
    z: float | None
    deviation: float | None
    accepted: bool
    reason: str
    rounds: int
    rewrites: int
    time: float | None = None


EVENT_TYPES = {cls.TYPE: cls for cls in (Plan, Call, Annotation, GapDone, Reannotation, RaceBatch, Keep, Resolution,
                                         MassStep, MassResult)}


def event_from_dict(data, where: str):
    """The typed event of one journal line; InputError naming ``where`` when it is not a known, whole event."""
    if not isinstance(data, dict):
        fail(f"{where}: expected a JSON object, got {type(data).__name__} (the journal is damaged)")
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        fail(f"{where}: unknown event type {kind!r} (the journal is damaged; known: {', '.join(EVENT_TYPES)})")
    return cls.from_dict(data, where)


@dataclass(frozen=True)
class ItemRecord(Record):
    """One selected item as the outputs list it (``new_item_records.csv``, ``baseline_item_records.csv``,
    mass fill's ``mass_fill_records.csv``): the gap it fills and its calibration and lineage."""

    benchmark: str
    gap: int
    left: float
    right: float
    target: float
    item_id: str
    question: str
    answer: str
    parent_id: str
    round: int
    b_mean: float
    b_sd: float
    z: float
    deviation: float
    lineage: str

    @classmethod
    def of(cls, benchmark: str, gap: int, left: float, right: float, target: float, child: Annotation,
           lineage: list) -> ItemRecord:
        return cls(benchmark, gap, left, right, target, child.item_id, child.question, child.answer,
                   child.parent_id, child.round, child.b_mean, child.b_sd, child.z, abs(child.z - target),
                   " > ".join(lineage))

    @classmethod
    def columns(cls) -> list:
        return [f.name for f in fields(cls)]


RECORD_COLUMNS = ItemRecord.columns()
