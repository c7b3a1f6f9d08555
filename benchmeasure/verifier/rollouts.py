"""The direct rollout backend: every candidate × every panel model through the shared client.

For each candidate item and panel model the backend asks for ``n_trials`` samples (one
request with ``n`` where the model's server supports it, else one request per trial, see
:class:`benchmeasure.verifier.llm_client.LLMClient`), grades each reply with the project's grader
(:func:`benchmeasure.grading.grade`) and returns :class:`~benchmeasure.verifier.base.Rollout`
rows — the ``model,item_id,trial,correct`` rows that ``prepare_response_matrix.py`` and the
online calibration read (paper, Section 4 and Appendix C). The user turn is rendered from
``verifier/prompts/rollout_<kind>.txt`` (``$question``). Each (item, model) call has the journal
key ``rollout/<item_id>/<model>``, so a resumed run does not repeat it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from string import Template

from benchmeasure.base.errors import fail
from benchmeasure.base.resources import package_file
from benchmeasure.grading import KINDS, grade
from benchmeasure.verifier.base import Rollout
from benchmeasure.verifier.llm_client import Endpoint

PROMPTS = package_file("verifier", "templates")  # verifier/prompts/ in a checkout links here


def rollout_template(kind: str, folder: str | Path = PROMPTS) -> Template:
    """The user-turn template for grader ``kind``."""
    if kind not in KINDS:
        fail(f"unknown grader kind {kind!r} (choose from {', '.join(KINDS)})")
    path = Path(folder) / KINDS[kind].template_name  # an absolute template path replaces the folder
    if not path.is_file():
        fail(f"{path}: rollout prompt template not found")
    return Template(path.read_text(encoding="utf-8"))


class DirectRollouts:
    """Collect and grade the panel's responses to candidate items.

    Parameters
    ----------
    client : LLMClient
    models : sequence of PanelModel
        The verifier panel (``benchmeasure.verifier.panel``).
    n_trials : int
        Samples per item and model (K).
    kind : str
        Grader kind (``math``, ``choice``, ``ifeval``).
    grade_options : dict or None
        Passed to :func:`grade` (e.g. ``{"symbolic": False}``).
    """

    def __init__(self, client, models, n_trials: int, kind: str, grade_options: dict | None = None):
        if n_trials < 1:
            fail(f"n_trials must be >= 1, got {n_trials}")
        self.client = client
        self.models = list(models)
        self.endpoints = [Endpoint.from_panel_model(m) for m in self.models]
        self.n_trials = n_trials
        self.kind = kind
        self.template = rollout_template(kind)
        self.grade_options = dict(grade_options or {})

    def messages(self, question: str) -> list:
        return [{"role": "user", "content": self.template.substitute(question=question)}]

    async def for_model(self, candidate, endpoint: Endpoint, n_trials: int | None = None, key_prefix: str = "rollout",
                        key_header: str | None = None) -> list:
        """``n_trials`` (default: the panel's) graded rollouts of one model on one candidate.

        The call's journal key is ``<key_prefix>/<item_id>/<model>``; ``key_header`` also sends it as
        that request header (a server that seeds per request then tells fresh rollouts apart).
        """
        key = f"{key_prefix}/{candidate.item_id}/{endpoint.model}"
        headers = {"extra_headers": {key_header: key}} if key_header else {}
        result = await self.client.chat(endpoint, self.messages(candidate.question), n=n_trials or self.n_trials,
                                        key=key, **headers)
        # Grading may start a SymPy worker and block; keep the event loop free for other calls. A grader is a
        # function of (text, reference): samples that repeat a text (often, at a low temperature) are graded once.
        verdicts = await asyncio.to_thread(self._grade_texts, result.texts, candidate.answer)
        return [Rollout(endpoint.model, trial, int(ok), text)
                for trial, (text, ok) in enumerate(zip(result.texts, verdicts))]

    def _grade_texts(self, texts: list, answer: str) -> list:
        verdict = {}
        for text in texts:
            if text not in verdict:
                verdict[text] = grade(self.kind, text, answer, **self.grade_options)
        return [verdict[text] for text in texts]

    async def for_candidate(self, candidate, **options) -> list:
        """Every panel model's rollouts on ``candidate``, models in panel order (``options``: :meth:`for_model`)."""
        parts = await asyncio.gather(*(self.for_model(candidate, e, **options) for e in self.endpoints))
        return [rollout for part in parts for rollout in part]
