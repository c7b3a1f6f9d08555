"""The :class:`~benchmeasure.verifier.base.Verifier` of real and simulated runs: validity, then rollouts.

Each candidate first goes through the validity policy (``benchmeasure.verifier.validity``:
format, near-duplicates, independent-solve confirmation of the reference answer), so no
rollouts are spent on an item that would be annotated from a wrong reference; a valid item
then gets every panel model's graded rollouts from the direct backend
(:class:`~benchmeasure.verifier.rollouts.DirectRollouts`). Candidates are processed
concurrently; the shared client bounds how many requests are in flight.
"""

from __future__ import annotations

import asyncio

from benchmeasure.verifier.base import Verdict, Verifier


class PanelVerifier(Verifier):
    """Validity check, then the panel's graded rollouts, for each candidate.

    Parameters
    ----------
    rollouts : DirectRollouts
    check : async callable ``(candidate) -> (bool, str)``
        The validity policy: whether the candidate is valid and why not.
    """

    def __init__(self, rollouts, check):
        self.rollouts = rollouts
        self.check = check

    async def one(self, candidate) -> Verdict:
        valid, reason = await self.check(candidate)
        if not valid:
            return Verdict(candidate.item_id, False, reason, [])
        return Verdict(candidate.item_id, True, "ok", await self.rollouts.for_candidate(candidate))

    async def verify(self, candidates: list) -> list:
        return list(await asyncio.gather(*(self.one(c) for c in candidates)))
