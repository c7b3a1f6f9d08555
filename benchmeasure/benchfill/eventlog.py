"""The run's event log (JSON Lines) and its lock: what makes a BenchFill run crash-safe.

Every model call's result, every round plan, every annotation and every finished gap is
appended to ``events.jsonl`` — written, flushed and fsynced — before the loop uses it. A
resumed run replays the file: recorded calls are answered from it, recorded plans and
annotations are reused, so nothing finished is repeated and item IDs (derived from the
plan position) are never issued twice. A kill during a write leaves at most one partial last
line; it is cut off when the log is reopened for writing.

The lock is an ``flock`` on ``run.lock``: the kernel drops it when the holder dies (even by
``kill -9``), so a stale lock cannot block a resume, while a second live ``run`` refuses.
Standard library only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import time
from pathlib import Path

from benchmeasure.base.durable_lines import DurableLines
from benchmeasure.base.errors import fail, file_errors
from benchmeasure.benchfill.records import Call, Record, event_from_dict

EVENTS = "events.jsonl"
LOCK = "run.lock"


def read_events(path: str | os.PathLike) -> list:
    """All complete events of a log as typed records (:mod:`.records`), oldest first, without modifying it.

    A line that is not JSON, not an object, of an unknown type or missing a field is an
    InputError naming the file and line (the log is damaged); only a torn last line is skipped.
    """
    path = Path(path)
    if not path.exists():
        return []
    events = []
    try:
        handle = open(path, "rb")
    except OSError as exc:
        fail(f"{path}: cannot be read ({exc.strerror})")
    with file_errors(path), handle:
        for line_number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                break  # an interrupted final write
            where = f"{path}: line {line_number}"
            try:
                data = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                fail(f"{where} is not valid JSON (the log is damaged; move it away to start the run afresh)")
            events.append(event_from_dict(data, where))
    return events


class EventLog:
    """Append-only, fsynced JSON Lines log of typed events with an index of recorded calls.

    Parameters
    ----------
    path : path-like
        ``<run>/events.jsonl``; created when missing.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.events = read_events(self.path)
        self._calls = {e.key: e.result for e in self.events if isinstance(e, Call)}
        self._file = DurableLines(self.path)   # cuts a torn last line

    def append(self, event: Record) -> Record:
        """Write one event durably, then remember it; returns the event (with its time)."""
        event, line = self._stamped(event)
        self._file.write(line)
        self._remember(event)
        return event

    def _stamped(self, event: Record) -> tuple:
        event = dataclasses.replace(event, time=round(time.time(), 3))
        return event, json.dumps(event.to_dict(), ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"

    def _remember(self, event: Record) -> None:
        self.events.append(event)
        if isinstance(event, Call):
            self._calls[event.key] = event.result

    def call_result(self, key: str):
        """The recorded result of the call ``key``, or None."""
        return self._calls.get(key)

    async def record_call_async(self, key: str, model: str, result: dict) -> None:
        """Record a call's result (once per key): durable when this returns, its fsync shared with the calls that
        finish beside it (:meth:`DurableLines.write_async`). The call is remembered as soon as it is written, so
        a second record of the same key is never written."""
        if key in self._calls:
            return
        event, line = self._stamped(Call(key, model, result))
        self._remember(event)
        await self._file.write_async(line)

    def find(self, kind: type, **match):
        """The first event of class ``kind`` whose attributes equal ``match``, or None."""
        return next(iter(select(self.events, kind, **match)), None)

    def of_type(self, kind: type, **match) -> list:
        """Every event of class ``kind`` whose attributes equal ``match``, oldest first."""
        return select(self.events, kind, **match)

    def close(self) -> None:
        self._file.close()


def select(events, kind: type, **match) -> list:
    """The events of class ``kind`` whose attributes equal ``match``."""
    return [e for e in events if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())]


@contextlib.contextmanager
def run_lock(folder: str | os.PathLike):
    """Hold ``<folder>/run.lock`` exclusively for the block; InputError if another process holds it."""
    path = Path(folder) / LOCK
    handle = open(path, "a+")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        fail(f"{folder}: a run is already in progress here (lock {path} held by pid {holder})")
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.truncate(0)
        handle.close()


def lock_holder(folder: str | os.PathLike) -> str | None:
    """The pid holding the run lock, or None when no run is active (probes without taking it)."""
    path = Path(folder) / LOCK
    if not path.exists():
        return None
    with open(path) as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "unknown"
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return None
