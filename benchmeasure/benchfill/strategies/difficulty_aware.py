"""The paper's BenchFill search (Section 4, Figure 4): difficulty-aware parents and references, early stop.

Parents are the valid known items (originals and the run's memory of valid BenchFill children) closest to
z*, skipping those used before on the gap; references are the nearest known items sorted by difficulty
(:mod:`benchmeasure.benchfill.retrieval`). A gap stops once a valid child lands within ``[search]
tolerance`` of z*. Rounds run in step across gaps, and a decision sees every valid child of earlier rounds
of the gaps in step (and of finished gaps), never one of its own round. Under ``[search] keep = "certified"`` (the
default) a gap instead stops at its first certified child and keeps only such a child
(:mod:`benchmeasure.benchfill.certify`).
"""

from __future__ import annotations

from benchmeasure.benchfill import retrieval
from benchmeasure.benchfill.strategies import STRATEGIES

NAME = "benchfill"


@STRATEGIES.add(NAME, in_step=True, records_file="new_item_records.csv", table_rank=1, certifies=True)
class DifficultyAware:
    """The paper's search (module docstring): its ``plan``, ``prompt``, ``visible``, ``stop`` and ``budget``."""

    @staticmethod
    def plan(loop, target, round_no: int, n_parents: int):
        from benchmeasure.benchfill.records import Plan

        known = list(loop.benchmark.items) + loop.memory(target.rank, round_no)
        used = {p for e in loop.journal.of_type(Plan, mode=NAME, gap=target.rank) for p in e.parents}
        parents = retrieval.benchfill_parents(known, target.midpoint, n_parents, used)
        references = retrieval.reference_list(known, target.midpoint, loop.search.references)
        return parents, references

    @staticmethod
    def prompt(loop, target, parent, references) -> str:
        fmt = loop.config.benchmark.answer_format
        return loop.prompts.rewrite(loop.benchmark.name, target.midpoint, parent, references, fmt)

    @staticmethod
    def visible(loop, gap: int, round_no: int) -> list:
        return [c for c in loop.children(NAME) if c.valid
                and not ((c.gap == gap or c.gap in loop.barrier) and c.round >= round_no)]

    @staticmethod
    def stop(loop, target, best) -> bool:
        return best is not None and abs(best.z - target.midpoint) <= loop.search.tolerance

    @staticmethod
    def budget(search, done: dict):
        return None
