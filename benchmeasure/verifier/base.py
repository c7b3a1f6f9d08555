"""The narrow interface between the BenchFill loop and the verifier.

The loop hands the verifier a batch of :class:`Candidate` items and gets one
:class:`Verdict` per candidate: whether the item is valid and, if it is, every panel
model's graded rollouts. Online calibration then needs only ``Verdict.counts`` and the
panel's fixed abilities. Real runs and the simulation mode use the same implementations;
only the endpoints differ.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Candidate:
    """An item to verify.

    Attributes
    ----------
    item_id : str
        Unique within a run.
    question, answer : str
        The item text and its reference answer, in the benchmark's format.
    benchmark : str
        Benchmark key (``aime24``, ``bbh_3obj``, …); selects the grader and validity rules.
    parent_id : str or None
        The item it was rewritten from (None for originals).
    """

    item_id: str
    question: str
    answer: str
    benchmark: str
    parent_id: str | None = None


@dataclass(frozen=True)
class Rollout:
    """One graded response of one panel model."""

    model: str
    trial: int
    correct: int
    response: str = ""


@dataclass
class Verdict:
    """What the verifier concluded about one candidate.

    Attributes
    ----------
    item_id : str
    valid : bool
        False when the item failed a validity check; then ``rollouts`` is empty.
    reason : str
        Why it was rejected, or ``"ok"``.
    rollouts : list of Rollout
        Every panel model's graded trials (``n_trials`` per model).
    """

    item_id: str
    valid: bool
    reason: str = "ok"
    rollouts: list = field(default_factory=list)

    def counts(self) -> dict:
        """Correct count per panel model, ``{model: int}``."""
        totals: dict = {}
        for rollout in self.rollouts:
            totals[rollout.model] = totals.get(rollout.model, 0) + int(rollout.correct)
        return totals


class Verifier(abc.ABC):
    """Checks candidates and collects the panel's graded rollouts."""

    @abc.abstractmethod
    async def verify(self, candidates: list) -> list:
        """Return one :class:`Verdict` per candidate, in the same order."""
