"""The budget-matched baseline of paper Table 2: parents drawn uniformly from the originals, no references.

It spends, per gap, as many rewrites as BenchFill spent there (``[search] baseline_budget = "matched"``) or
the full ``rounds × parents × children`` (``"full"``), never stops early, and a decision sees only the
valid children of its own gap's earlier rounds.
"""

from __future__ import annotations

import random

from benchmeasure.benchfill import retrieval
from benchmeasure.benchfill.strategies import STRATEGIES

NAME = "baseline"


@STRATEGIES.add(NAME, records_file="baseline_item_records.csv", table_rank=0)
class Uniform:
    """The budget-matched baseline (module docstring): ``plan``, ``prompt``, ``visible``, ``stop``, ``budget``."""

    @staticmethod
    def plan(loop, target, round_no: int, n_parents: int):
        rng = random.Random(f"{loop.search.seed}/{NAME}/{target.rank}/{round_no}")
        return retrieval.uniform_parents(loop.benchmark.items, n_parents, rng), []

    @staticmethod
    def prompt(loop, target, parent, references) -> str:
        fmt = loop.config.benchmark.answer_format
        return loop.prompts.rewrite_baseline(loop.benchmark.name, target.midpoint, parent, fmt)

    @staticmethod
    def visible(loop, gap: int, round_no: int) -> list:
        return [c for c in loop.children(NAME, gap) if c.valid and c.round < round_no]

    @staticmethod
    def stop(loop, target, best) -> bool:
        return False

    @staticmethod
    def budget(search, done: dict):
        full = search.rounds * search.parents * search.children
        return done["benchfill"].rewrites if search.baseline_budget == "matched" and "benchfill" in done else full
