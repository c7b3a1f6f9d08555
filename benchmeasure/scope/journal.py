"""The search's journal: every model call's reply, appended (flushed, fsynced) before it is used.

``journal.jsonl`` holds one JSON object per finished call, ``{"key": …, "model": …, "result": …}``. The
search is deterministic given its settings and the outcomes (strategies draw from seeded generators;
instances are seeded per pull), so a resumed search replays from the start and every call already in
the journal is answered from it (:class:`benchmeasure.verifier.llm_client.LLMClient` looks keys up there): a
killed search loses no finished call and repeats none. A torn last line (a kill during a write) is cut
off when the journal is reopened; a damaged line elsewhere is an error. The run lock is an ``flock``,
which the kernel drops when its holder dies, even by ``kill -9``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from pathlib import Path

from benchmeasure.base.durable_lines import DurableLines
from benchmeasure.base.errors import fail

JOURNAL = "journal.jsonl"
LOCK = "scope.lock"


class Journal:
    """The calls of a search (``call_result`` and ``record_call_async``: the protocol
    :class:`benchmeasure.verifier.llm_client.LLMClient` uses), each line durable before the call returns."""

    def __init__(self, path):
        self.path = Path(path)
        self.calls: dict = {}
        if self.path.exists():
            self._load()
        self._file = DurableLines(self.path)   # cuts a torn last line

    def _load(self) -> None:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1          # a torn last line is ignored here and cut when the file is opened
        for number, raw in enumerate(data[:end].split(b"\n")[:-1], start=1):  # JSON Lines end at '\n' only
            try:
                entry = json.loads(raw)
                self.calls[str(entry["key"])] = entry["result"]
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
                fail(f"{self.path}: line {number} is damaged (move the journal away to start afresh)")

    def call_result(self, key: str):
        return self.calls.get(key)

    @staticmethod
    def _line(key: str, model: str, result: dict) -> bytes:
        return (json.dumps({"key": key, "model": model, "result": result}, ensure_ascii=False) + "\n").encode("utf-8")

    async def record_call_async(self, key: str, model: str, result: dict) -> None:
        """Record a call's result (once per key): durable when this returns, its fsync shared among the calls
        that finish together (group commit)."""
        if key in self.calls:
            return
        self.calls[key] = result
        await self._file.write_async(self._line(key, model, result))

    def close(self) -> None:
        self._file.close()


@contextlib.contextmanager
def search_lock(folder):
    """Hold ``<folder>/scope.lock`` for the block; InputError when another live search holds it."""
    path = Path(folder) / LOCK
    handle = open(path, "a+")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        fail(f"{folder}: a search is already running in this folder")
    try:
        yield
    finally:
        handle.close()
