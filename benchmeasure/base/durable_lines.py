"""An append-only file of lines, each durable before its writer goes on: the storage of every crash-safe journal.

BenchFill's event log (:mod:`benchmeasure.benchfill.eventlog`) and the search's journal
(:mod:`benchmeasure.scope.journal`) keep their records here. A line counts as written only once it is on disk:
written, flushed and fsynced. Opening the file cuts a torn last line (a kill during a write leaves at most one).

Model calls finish many at a time (16 in flight by default), and an fsync per call stalled the event loop for
each one in turn (about 1.2 ms apiece on the development machine's disk, far more on a network filesystem).
:meth:`DurableLines.write_async` keeps the guarantee and shares the fsyncs (group commit): each caller writes its
line at once, then waits until an fsync that started after its write has finished; an fsync runs on a thread, the
event loop stays free, and callers that wrote while one was running share the next. Because the file is only
ever appended to, an fsync makes every earlier line durable too, so what is on disk after a crash is always a
prefix of what was written. Standard library only.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path


class DurableLines:
    """Append lines to ``path`` durably (see the module docstring); the file is created when missing."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        cut_torn_tail(self.path)
        self._handle = open(self.path, "ab")
        self._written = 0      # lines written by this object
        self._durable = 0      # of which this many are known to be on disk
        self._syncing: asyncio.Future | None = None

    def write(self, line: bytes) -> None:
        """Append one line (ending in ``\\n``); on disk when this returns."""
        self._append(line)
        target = self._written
        os.fsync(self._handle.fileno())
        self._durable = max(self._durable, target)

    async def write_async(self, line: bytes) -> None:
        """Append one line; on disk when this returns, the fsync shared with concurrent writers."""
        self._append(line)
        mine = self._written
        while self._durable < mine:
            if self._syncing is None:
                self._syncing = asyncio.ensure_future(self._sync(self._written))
            await asyncio.shield(self._syncing)

    async def _sync(self, target: int) -> None:
        try:
            await asyncio.to_thread(os.fsync, self._handle.fileno())
            self._durable = max(self._durable, target)
        finally:
            self._syncing = None

    def _append(self, line: bytes) -> None:
        if not line.endswith(b"\n") or b"\n" in line[:-1]:
            raise ValueError("a journal line must end in one newline and hold no other")
        self._handle.write(line)
        self._handle.flush()
        self._written += 1

    def close(self) -> None:
        self._handle.close()


def cut_torn_tail(path: Path) -> None:
    """Cut an unfinished last line (no newline: a write interrupted by a kill) off ``path``, durably."""
    if not path.exists():
        return
    with open(path, "rb+") as handle:
        data = handle.read()
        end = data.rfind(b"\n") + 1
        if end != len(data):
            handle.truncate(end)
            handle.flush()
            os.fsync(handle.fileno())
