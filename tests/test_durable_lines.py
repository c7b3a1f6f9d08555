"""benchmeasure/base/durable_lines.py: every journal line is on disk before its writer goes on; concurrent writers
share fsyncs (group commit) without losing that guarantee; a torn last line is cut."""

import asyncio
import os
import time

import pytest

from benchmeasure.base import durable_lines
from benchmeasure.base.durable_lines import DurableLines


def test_concurrent_writers_share_fsyncs_and_each_returns_only_after_its_line_is_synced(tmp_path, monkeypatch):
    syncs = []   # (lines in the file when the fsync started, when it ended)
    real_fsync = os.fsync

    def slow_fsync(fd):
        size = os.fstat(fd).st_size
        time.sleep(0.02)   # a slow disk: writers pile up behind each fsync
        real_fsync(fd)
        syncs.append((size, time.monotonic()))

    monkeypatch.setattr(durable_lines.os, "fsync", slow_fsync)
    log = DurableLines(tmp_path / "j.jsonl")
    returned = {}

    async def writer(k):
        await asyncio.sleep(0.001 * (k % 7))
        line = f'{{"k": {k}}}\n'.encode()
        await log.write_async(line)
        # what this writer wrote lies inside the file as some fsync that has finished found it
        end = (tmp_path / "j.jsonl").read_bytes().index(line) + len(line)
        returned[k] = (end, time.monotonic())

    async def main():
        await asyncio.gather(*(writer(k) for k in range(60)))

    asyncio.run(main())
    log.close()
    assert sorted(returned) == list(range(60))
    for end, at in returned.values():
        assert any(size >= end and done <= at for size, done in syncs)
    assert len(syncs) < 30   # shared: far fewer fsyncs than lines
    lines = (tmp_path / "j.jsonl").read_bytes().splitlines()
    assert sorted(lines) == sorted(f'{{"k": {k}}}'.encode() for k in range(60))


def test_a_failed_fsync_reaches_every_writer_waiting_on_it(tmp_path, monkeypatch):
    def broken(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(durable_lines.os, "fsync", broken)
    log = DurableLines(tmp_path / "j.jsonl")

    async def main():
        return await asyncio.gather(*(log.write_async(b"x\n") for _ in range(3)), return_exceptions=True)

    assert all(isinstance(r, OSError) for r in asyncio.run(main()))


def test_torn_tail_is_cut_and_lines_must_be_single(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": ')
    log = DurableLines(path)
    log.write(b'{"c": 3}\n')
    with pytest.raises(ValueError):
        log.write(b"no newline")
    with pytest.raises(ValueError):
        log.write(b"two\nlines\n")
    log.close()
    assert path.read_bytes() == b'{"a": 1}\n{"c": 3}\n'


def test_sync_and_async_writes_interleave_in_order(tmp_path):
    log = DurableLines(tmp_path / "j.jsonl")

    async def main():
        log.write(b"1\n")
        await log.write_async(b"2\n")
        log.write(b"3\n")
        await asyncio.gather(log.write_async(b"4\n"), log.write_async(b"5\n"))

    asyncio.run(main())
    log.close()
    assert (tmp_path / "j.jsonl").read_bytes() == b"1\n2\n3\n4\n5\n"
