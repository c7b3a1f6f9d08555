"""The shared LLM client: retries on 5xx/429/timeouts/malformed replies, a clear final error,
no retry on 4xx, journal look-up, token counts, keys never in errors."""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmeasure.benchfill.eventlog import EventLog
from benchmeasure.verifier.llm_client import Endpoint, LLMCallError, LLMClient, MalformedReply

OK_BODY = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
           "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hello"}}],
           "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


def scripted_server(script):
    """Replies from ``script`` in order (status or 'malformed'), then 200s; returns (server, url, hits)."""
    hits = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            step = script[len(hits)] if len(hits) < len(script) else 200
            hits.append(step)
            body = b"{broken" if step == "malformed" else json.dumps(
                OK_BODY if step == 200 else {"error": {"message": "no"}}).encode()
            self.send_response(200 if step == "malformed" else step)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1", hits


def call(url, tmp_path=None, key=None, parse=None, retries=4, monkeypatch=None):
    async def go():
        journal = EventLog(tmp_path / "events.jsonl") if tmp_path else None
        client = LLMClient(max_concurrency=2, timeout=5, max_retries=retries, backoff=0.01, journal=journal)
        try:
            return await client.chat(Endpoint("m", url, "TEST_SECRET_KEY"), [{"role": "user", "content": "hi"}],
                                     key=key, parse=parse), client.usage
        finally:
            await client.close()

    return asyncio.run(go())


def test_retries_then_succeeds():
    server, url, hits = scripted_server([500, 429, "malformed", 503])
    result, usage = call(url)
    server.shutdown()
    assert result.texts == ["hello"] and len(hits) == 5
    assert usage["retries"] == 4 and usage["prompt_tokens"] == 3 and usage["completion_tokens"] == 1


def test_clear_error_after_last_retry_without_key(monkeypatch):
    monkeypatch.setenv("TEST_SECRET_KEY", "sk-very-secret")
    server, url, hits = scripted_server([500] * 10)
    with pytest.raises(LLMCallError, match="gave up after 3 attempts; last error HTTP 500") as info:
        call(url, retries=2)
    server.shutdown()
    assert "sk-very-secret" not in str(info.value) and len(hits) == 3


def test_no_retry_on_client_error():
    server, url, hits = scripted_server([400])
    with pytest.raises(LLMCallError, match="not retried"):
        call(url)
    server.shutdown()
    assert len(hits) == 1


def test_parse_failure_is_retried():
    server, url, hits = scripted_server([])
    seen = []

    def parse(text):
        seen.append(text)
        if len(seen) < 3:
            raise MalformedReply("not yet")

    call(url, parse=parse)
    server.shutdown()
    assert len(hits) == 3


def test_journal_answers_recorded_calls(tmp_path):
    server, url, hits = scripted_server([])
    call(url, tmp_path, key="k1")
    result, usage = call(url, tmp_path, key="k1")
    server.shutdown()
    assert len(hits) == 1 and usage["cached"] == 1 and result.texts == ["hello"]
    assert "TEST_SECRET_KEY" not in (tmp_path / "events.jsonl").read_text()


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12)
CHOICE = st.fixed_dictionaries({"message": st.fixed_dictionaries({"content": st.one_of(st.text(max_size=5), JSON)})})
BODY = st.one_of(JSON, st.fixed_dictionaries({"choices": st.lists(st.one_of(CHOICE, JSON), max_size=3)},
                                             optional={"usage": st.one_of(JSON, st.dictionaries(
                                                 st.sampled_from(["prompt_tokens", "completion_tokens"]), JSON))}))


@settings(max_examples=300, deadline=None)
@given(BODY, st.integers(1, 3))
def test_any_json_body_is_read_or_a_malformed_reply(body, n):
    # the body of a reply is read as plain JSON (not through the SDK's types): any shape is either a result of
    # n texts with whole token counts or a MalformedReply, which the client retries; nothing else escapes
    try:
        result = LLMClient._unpack(body, n)
    except MalformedReply:
        return
    assert len(result.texts) == n and all(isinstance(t, str) for t in result.texts)
    assert all(type(c) is int and c >= 0 for c in (result.prompt_tokens, result.completion_tokens))
