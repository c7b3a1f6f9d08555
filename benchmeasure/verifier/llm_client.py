"""The one client through which every model call of the project goes (rewriter and verifier panel).

It wraps the ``openai`` SDK's ``AsyncOpenAI`` for OpenAI-compatible servers (vLLM, a hosted
API, or the simulation server of :mod:`benchmeasure.serving.sim`) and adds what long runs need:

* bounded concurrency (one semaphore over all endpoints);
* a timeout per request and retries with exponential backoff and jitter on 429, 5xx,
  timeouts, connection errors and malformed replies (a body that is not a chat completion,
  or one the caller's ``parse`` rejects); a 4xx other than 429 is not retried;
* a clear :class:`LLMCallError` after the last attempt, naming model, endpoint and the last error;
* token counts per call, kept in :attr:`LLMClient.usage` and in the journal;
* an optional journal (:class:`benchmeasure.benchfill.eventlog.EventLog` or
  :class:`benchmeasure.scope.journal.Journal`): a call made under a ``key`` is looked up there first
  and its result is appended (flushed and fsynced, the fsync shared with the calls that finish beside
  it: :mod:`benchmeasure.base.durable_lines`) before it is returned, so a resumed run never repeats a
  finished call.

API keys are read from the environment variable an :class:`Endpoint` names, at call time;
they are never written to logs, journals or error messages.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the SDK takes most of a second to import, which a command that only
    import openai  # reads or refuses its inputs (``benchfill status``, a damaged run folder) should not pay

if importlib.util.find_spec("openai") is None:  # still refused here, as the import at the top was: the command
    raise ModuleNotFoundError("No module named 'openai'", name="openai")  # line names the extra that brings it

log = logging.getLogger("benchmeasure.llm")

#: Request header carrying a call's key (``extra_headers={KEY_HEADER: key}``). A server that seeds its sampling
#: per request (the simulation, :mod:`benchmeasure.serving.sim.server`) uses it to tell apart requests that share one
#: prompt, so a run's replies do not depend on the order in which concurrent requests arrive. Others ignore it.
KEY_HEADER = "X-BenchFill-Key"


class LLMCallError(RuntimeError):
    """A model call that failed for good (after the last retry, or on a non-retryable status)."""


class MalformedReply(ValueError):
    """A reply that arrived but cannot be used; raised by ``parse`` callbacks to request a retry."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call one model.

    Attributes
    ----------
    model : str
        Served model name sent as ``model``.
    base_url : str
        OpenAI-compatible base URL ending in ``/v1``.
    api_key_env : str
        Name of the environment variable holding the key (``"EMPTY"`` is sent when unset).
    sampling : dict
        Extra ``chat.completions.create`` arguments (temperature, top_p, max_tokens).
    supports_n : bool
        Whether one request may ask for ``n`` > 1 samples.
    """

    model: str
    base_url: str
    api_key_env: str = "OPENAI_API_KEY"
    sampling: dict = field(default_factory=dict, hash=False, compare=False)
    supports_n: bool = True

    @classmethod
    def from_panel_model(cls, entry) -> Endpoint:
        """From a :class:`benchmeasure.verifier.panel.PanelModel`."""
        return cls(entry.name, entry.resolve_base_url(), entry.api_key_env, entry.sampling(), entry.supports_n)


@dataclass
class ChatResult:
    """The texts of one call (``n`` choices) and its token counts."""

    texts: list
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_record(self) -> dict:
        return {"texts": list(self.texts), "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}

    @classmethod
    def from_record(cls, record: dict) -> ChatResult:
        return cls(list(record["texts"]), int(record.get("prompt_tokens", 0)), int(record.get("completion_tokens", 0)))


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                        openai.InternalServerError, MalformedReply, openai.APIResponseValidationError,
                        asyncio.TimeoutError, ValueError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def _count(value) -> int:
    """A token count from a reply's ``usage`` (0 where the server gives none, or not a whole number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _describe(exc: BaseException) -> str:
    import openai

    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class LLMClient:
    """Bounded-concurrency, retrying chat client over any number of OpenAI-compatible endpoints.

    Parameters
    ----------
    max_concurrency : int
        Requests in flight at once, over all endpoints.
    timeout : float
        Seconds per request.
    max_retries : int
        Retries after the first attempt (so ``max_retries + 1`` attempts in all).
    backoff : float
        First backoff in seconds; doubled per retry, capped at ``backoff_max``, with full jitter.
    journal : EventLog or None
        Where results of keyed calls are recorded and looked up.
    seed : int
        Seeds the jitter, so retry timing is reproducible in tests.
    """

    def __init__(self, max_concurrency: int = 16, timeout: float = 600.0, max_retries: int = 6,
                 backoff: float = 1.0, backoff_max: float = 30.0, journal=None, seed: int = 0):
        if max_concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise ValueError("max_concurrency >= 1, max_retries >= 0 and timeout > 0 are required")
        self.semaphore = asyncio.Semaphore(max_concurrency)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.journal = journal
        self.usage = {"calls": 0, "cached": 0, "retries": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._rng = random.Random(seed)
        self._clients: dict = {}

    def _client(self, endpoint: Endpoint) -> openai.AsyncOpenAI:
        import openai

        key = (endpoint.base_url, endpoint.api_key_env)
        if key not in self._clients:
            self._clients[key] = openai.AsyncOpenAI(
                base_url=endpoint.base_url, api_key=os.environ.get(endpoint.api_key_env) or "EMPTY",
                max_retries=0, timeout=self.timeout)
        return self._clients[key]

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()

    async def chat(self, endpoint: Endpoint, messages: list, n: int = 1, key: str | None = None,
                   parse: Callable | None = None, **overrides) -> ChatResult:
        """One chat completion with ``n`` choices (several requests when the endpoint refuses ``n``).

        Parameters
        ----------
        endpoint : Endpoint
        messages : list of dict
            Chat messages (``{"role": …, "content": …}``).
        n : int
            Samples wanted.
        key : str or None
            Journal key; a call already recorded under it is not repeated.
        parse : callable or None
            Called on each returned text; raising :class:`MalformedReply` (or ``ValueError``)
            retries the request.
        **overrides
            Replace entries of ``endpoint.sampling`` (e.g. ``temperature=0``).

        Returns
        -------
        ChatResult
            ``len(texts) == n``.
        """
        if key is not None and self.journal is not None:
            cached = self.journal.call_result(key)
            if cached is not None:
                self.usage["cached"] += 1
                return ChatResult.from_record(cached)
        if endpoint.supports_n or n == 1:
            result = await self._request(endpoint, messages, n, parse, overrides)
        else:
            parts = await asyncio.gather(*(self._request(endpoint, messages, 1, parse, overrides) for _ in range(n)))
            result = ChatResult([t for p in parts for t in p.texts], sum(p.prompt_tokens for p in parts),
                                sum(p.completion_tokens for p in parts))
        if key is not None and self.journal is not None:
            await self.journal.record_call_async(key, endpoint.model, result.as_record())
        return result

    async def _request(self, endpoint: Endpoint, messages: list, n: int, parse, overrides: dict) -> ChatResult:
        args = {**endpoint.sampling, **overrides}
        last = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.usage["retries"] += 1
                delay = min(self.backoff_max, self.backoff * 2 ** (attempt - 1))
                await asyncio.sleep(self._rng.uniform(0.5 * delay, delay))
            try:
                async with self.semaphore:
                    reply = await asyncio.wait_for(self._post(endpoint, messages, n, args), timeout=self.timeout + 5)
                result = self._unpack(reply, n)
                if parse is not None:
                    for text in result.texts:
                        parse(text)
            except Exception as exc:
                if not _retryable(exc):
                    raise LLMCallError(f"model {endpoint.model!r} at {endpoint.base_url}: {_describe(exc)} "
                                       "(not retried)") from exc
                last = exc
                log.info("model %s attempt %d failed: %s", endpoint.model, attempt + 1, _describe(exc))
                continue
            self.usage["calls"] += 1
            self.usage["prompt_tokens"] += result.prompt_tokens
            self.usage["completion_tokens"] += result.completion_tokens
            log.debug("model %s: %d prompt + %d completion tokens", endpoint.model, result.prompt_tokens,
                      result.completion_tokens)
            return result
        raise LLMCallError(f"model {endpoint.model!r} at {endpoint.base_url}: gave up after "
                           f"{self.max_retries + 1} attempts; last error {_describe(last)}")

    async def _post(self, endpoint: Endpoint, messages: list, n: int, args: dict):
        """POST one chat completion and return its JSON body, not an SDK object.

        The SDK's ``chat.completions.create`` builds a typed object of every reply, field by field: with
        ``n`` = 32 choices that took 15 ms of CPU per call (40 % of a simulated BenchFill run, 2026-12-05),
        more than the rest of the client. The SDK's documented ``post`` for endpoints it does not type keeps
        its transport (base URL, key, headers, status errors that :func:`_retryable` sorts) and hands back
        the body as text (``cast_to=str``: the same in every SDK version, whichever HTTP library it uses), read
        here as JSON (a body that is not JSON is a ``ValueError``, retried like a malformed reply).
        """
        args = dict(args)
        headers = args.pop("extra_headers", None)
        body = {"model": endpoint.model, "messages": messages, "n": n, **args}
        text = await self._client(endpoint).post("/chat/completions", cast_to=str, body=body,
                                                  options={"headers": headers} if headers else {})
        return json.loads(text)

    @staticmethod
    def _unpack(reply, n: int) -> ChatResult:
        """The texts and token counts of a chat-completion body (a dict); a body of another shape is a
        :class:`MalformedReply` (retried)."""
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not isinstance(choices, list) or len(choices) != n:
            raise MalformedReply(f"expected {n} choices, got {type(reply).__name__} "
                                 f"with {len(choices) if isinstance(choices, list) else 'no'} choices")
        texts = []
        for choice in choices:
            message = choice.get("message") if isinstance(choice, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, str):
                raise MalformedReply("a choice has no text content")
            texts.append(content)
        usage = reply.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return ChatResult(texts, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))
