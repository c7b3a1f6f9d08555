"""A pull against a real model: generate an instance, ask the model through the project's
OpenAI-compatible client (:mod:`benchmeasure.verifier.llm_client`: concurrency limit, retries, key from the
environment, journal), grade the reply."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

from benchmeasure.base.errors import fail
from benchmeasure.scope.generators import generate
from benchmeasure.scope.runner import instance_seed
from benchmeasure.verifier.llm_client import KEY_HEADER, LLMCallError


def check_endpoint(base_url: str, timeout: float = 10.0) -> None:
    """InputError when nothing answers at ``base_url`` (``GET /models``), before any pull is spent."""
    url = base_url.rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return  # it answers; the key is checked by the first call
        fail(f"--endpoint {base_url}: GET /models answered HTTP {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        fail(f"--endpoint {base_url}: unreachable ({reason})")


class ModelEvaluator:
    """``await evaluator(pulls)`` → one error flag per pull (see :func:`benchmeasure.scope.runner.search`)."""

    def __init__(self, function, spec: str, endpoints: list, client, seed: int, sampling: dict):
        self.function = function
        self.spec = spec
        self.endpoints = endpoints  # a panel: the arm's i-th pull goes to endpoints[i mod M], same instance per round
        self.client = client
        self.seed = seed
        self.sampling = sampling

    async def _one(self, config: dict, key: str, index: int, total: int) -> bool:
        endpoint = self.endpoints[index % len(self.endpoints)]
        seed = instance_seed(self.seed, key, index // len(self.endpoints))
        question, grader = generate(self.function, self.spec, config, seed)
        call_key = f"pull/{total}/{key}/{seed}/{endpoint.model}"
        try:
            result = await self.client.chat(endpoint, [{"role": "user", "content": question}], key=call_key,
                                            extra_headers={KEY_HEADER: call_key}, **self.sampling)
        except LLMCallError as exc:
            fail(f"--endpoint {endpoint.base_url}: {exc} (finished pulls are in the journal; rerun to resume)")
        try:
            return not bool(grader(result.texts[0]))
        except Exception as exc:
            fail(f"generator {self.spec}: its grader raised {type(exc).__name__}: {exc} (configuration {config})")

    async def __call__(self, pulls) -> list:
        tasks = [asyncio.ensure_future(self._one(*pull)) for pull in pulls]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # let journaled calls finish writing
            raise
