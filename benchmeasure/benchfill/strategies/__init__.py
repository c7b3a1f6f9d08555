"""The BenchFill search-strategy registry: one :class:`Strategy` per method a run compares on every gap.

A run fills each target gap once per registered strategy, in registration order (:meth:`Loop.fill_gap
<benchmeasure.benchfill.loop.Loop.fill_gap>`): the paper's difficulty-aware search ``benchfill``
(:mod:`.difficulty_aware`), then its budget-matched ``baseline`` (:mod:`.uniform`, paper Table 2). A
strategy says which parents and references a round uses (``plan``), how the rewriter is prompted
(``prompt``), which earlier children its decisions may see (``visible``), when a gap stops early
(``stop``), how many rewrites it may spend given the strategies that ran before it on the same gap
(``budget``), whether its rounds run in step across gaps (``in_step``) and where its selected items are
reported (``records_file``; ``summary.json`` and ``table2.txt`` get one row per strategy).

Each built-in registers itself beside its code: :meth:`STRATEGIES.add <benchmeasure.base.registry.Registry.add>`
decorates a class whose static methods are the strategy's ``plan``, ``prompt``, ``visible``, ``stop`` and
``budget``; the other fields are the decorator's keywords::

    @STRATEGIES.add("baseline", records_file="baseline_item_records.csv", table_rank=0)
    class Uniform:
        @staticmethod
        def plan(loop, target, round_no, n_parents): ...

The built-in modules are imported when the registry is first read (in the order above), then the strategies of
other packages (entry-point group ``benchmeasure.strategies``); adding one is one module (ARCHITECTURE.md,
"Adding an extension").

A strategy's name is the ``mode`` of its journal events and the first part of its children's IDs
(``<mode>-g<gap>-r<round>-p<parent>-c<child>``), so it is letters, digits and ``_`` only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from benchmeasure.base.registry import GROUPS, Registry, lazy

NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Strategy:
    """A search strategy (module docstring).

    Fields
    ------
    name : str
    plan : callable ``(loop, target, round_no, n_parents) -> (parents, references)``
        Items (:class:`~benchmeasure.benchfill.gaps.Item`) to rewrite and to show as references.
    prompt : callable ``(loop, target, parent, references) -> str``
        The rewriter's user turn for one parent.
    visible : callable ``(loop, gap, round_no) -> list``
        The valid annotated children a decision of that round may see (and a candidate must not duplicate).
    stop : callable ``(loop, target, best) -> bool``
        Whether a gap stops after a round whose closest valid child is ``best`` (None: no valid child).
    budget : callable ``(search, done) -> int | None``
        Rewrites for one gap, given ``done`` (``{name: GapDone}`` of the strategies run before on that gap);
        None: ``rounds × parents × children``.
    in_step : bool
        Round r of a gap starts only when every gap has finished round r − 1 (so memory is shared fairly).
    records_file : str
        The CSV of its selected items in the run folder.
    table_rank : int
        Its row's place in ``table2.txt`` (ascending; the paper prints the baseline above BenchFill).
    certifies : bool
        Under ``[search] keep = "certified"`` its gaps keep only a certified child, racing extra rollouts
        (:mod:`benchmeasure.benchfill.certify`); otherwise (and for the others) the valid child closest to z*.
    """

    name: str
    plan: object
    prompt: object
    visible: object
    stop: object
    budget: object
    in_step: bool = False
    records_file: str = ""
    table_rank: int = 100
    certifies: bool = False

    DECORATES: ClassVar[tuple] = ("plan", "prompt", "visible", "stop", "budget")   # a class holding them

    def __post_init__(self):
        for field in ("plan", "prompt", "visible", "stop", "budget"):   # each may be "module:function"
            object.__setattr__(self, field, lazy(getattr(self, field)))
        if not NAME.match(self.name):
            raise ValueError(f"strategy name {self.name!r} must be lower-case letters, digits and '_'")
        if not self.records_file:
            object.__setattr__(self, "records_file", f"{self.name}_item_records.csv")


STRATEGIES = Registry("search strategy", GROUPS["strategy"], entry=Strategy,
                      builtins=("benchmeasure.benchfill.strategies.difficulty_aware",
                                "benchmeasure.benchfill.strategies.uniform"))


def table_order(names) -> list:
    """``names`` (strategies) in their Table 2 order: by ``table_rank``, then registration order."""
    position = {name: i for i, name in enumerate(STRATEGIES)}
    return sorted((n for n in names if n in position), key=lambda n: (STRATEGIES[n].table_rank, position[n]))

