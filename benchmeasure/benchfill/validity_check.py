"""The validity gate the loop applies before rollouts, built on the project's grader.

A candidate is valid when (1) its question and reference answer are non-empty and the answer
is gradable in the benchmark's format (the grader accepts the reference as a response to
itself), (2) its question is not a duplicate of a known item (whitespace- and case-folded
text), and (3) an independent cold solve by the confirming model (the rewriter by default,
temperature 0) is graded correct against the reference answer — so an item with a wrong
reference is rejected rather than annotated as "very hard" (issue 6's policy). The reasons
are ``"format"``, ``"duplicate"`` and ``"unconfirmed"``.
"""

from __future__ import annotations

import asyncio

from benchmeasure.llm_client import Endpoint
from benchmeasure.verifier.grading import grade


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


class ValidityCheck:
    """Async callable ``(candidate) -> (valid, reason)`` for :class:`PanelVerifier`.

    Parameters
    ----------
    client : LLMClient
    solver : PanelModel
        The model that solves each candidate cold.
    rollouts : DirectRollouts
        Supplies the solve prompt (the same template the panel sees) and grader kind.
    known_questions : callable
        Returns the questions already in the benchmark and the run's memory.
    """

    def __init__(self, client, solver, rollouts, known_questions):
        self.client = client
        self.solver = Endpoint.from_panel_model(solver)
        self.rollouts = rollouts
        self.known_questions = known_questions

    async def __call__(self, candidate) -> tuple:
        question, answer = candidate.question.strip(), candidate.answer.strip()
        kind = self.rollouts.kind
        if not question or not answer:
            return False, "format"
        reference_ok = await asyncio.to_thread(grade, kind, f"\\boxed{{{answer}}}" if kind == "math" else answer,
                                               answer, **self.rollouts.grade_options)
        if not reference_ok:
            return False, "format"
        if _fold(question) in {_fold(q) for q in self.known_questions()}:
            return False, "duplicate"
        result = await self.client.chat(self.solver, self.rollouts.messages(question), n=1,
                                        key=f"solve/{candidate.item_id}", temperature=0.0)
        confirmed = await asyncio.to_thread(grade, kind, result.texts[0], answer, **self.rollouts.grade_options)
        return (True, "ok") if confirmed else (False, "unconfirmed")
