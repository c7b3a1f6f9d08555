"""The validity gate the loop applies before rollouts: the verifier's policy, with its solve call.

The decisions are :mod:`benchmeasure.verifier.validity`'s (well-formed question, parseable
reference, near-duplicates, confirmation by an independent solve); this adapter makes the one
model call rule 4 needs — the confirming model (the rewriter, at temperature 0) solves the
candidate cold, ``solve_n`` times, prompted like the panel — and grades the answers with the
benchmark's grader — the config's ``grader``, never a guess from the benchmark's name. The solve
call is journaled under ``solve/<item_id>``.
"""

from __future__ import annotations

import asyncio

from benchmeasure.grading import grade
from benchmeasure.verifier.llm_client import Endpoint
from benchmeasure.verifier.validity import ValidityPolicy, confirmed_by_solve, static_checks


class ValidityCheck:
    """Async callable ``(candidate) -> (valid, reason)`` for :class:`PanelVerifier`.

    Parameters
    ----------
    client : LLMClient
    solver : PanelModel
        The model that solves each candidate cold.
    rollouts : DirectRollouts
        Supplies the solve prompt (the panel's template) and the grader kind and options.
    existing : callable
        ``existing(candidate)`` returns the ``(item_id, question, answer)`` the candidate must not
        duplicate: the benchmark's items and the accepted children its round may see
        (:meth:`benchmeasure.benchfill.loop.Loop.existing`).
    solve_n : int
        Cold solves per candidate.
    policy : ValidityPolicy
    """

    def __init__(self, client, solver, rollouts, existing, solve_n: int = 1, policy: ValidityPolicy | None = None):
        self.client = client
        self.solver = Endpoint.from_panel_model(solver)
        self.rollouts = rollouts
        self.existing = existing
        self.solve_n = solve_n
        self.policy = policy or ValidityPolicy()

    async def __call__(self, candidate) -> tuple:
        check = await asyncio.to_thread(static_checks, candidate, self.existing(candidate), self.policy,
                                        self.rollouts.kind)
        if not check.ok:
            return False, check.reason
        result = await self.client.chat(self.solver, self.rollouts.messages(candidate.question), n=self.solve_n,
                                        key=f"solve/{candidate.item_id}", temperature=0.0)
        kind, options = self.rollouts.kind, self.rollouts.grade_options
        correct = await asyncio.to_thread(lambda: [grade(kind, t, candidate.answer, **options) for t in result.texts])
        check = confirmed_by_solve(correct, None, self.policy)
        return check.ok, check.reason
