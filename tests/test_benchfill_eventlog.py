"""The run journal: durable appends, a torn last line cut on reopen, the lock."""

import subprocess
import sys
from pathlib import Path

import pytest

from benchmeasure.base.errors import InputError
from benchmeasure.benchfill.eventlog import EventLog, lock_holder, read_events, run_lock
from benchmeasure.benchfill.records import Call, Plan

REPO = str(Path(__file__).resolve().parents[1])


def test_torn_tail_is_dropped_and_truncated(tmp_path):
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append(Call("a", "m", {"texts": ["x"]}))
    log.close()
    with open(path, "ab") as handle:
        handle.write(b'{"type": "call", "key": "b"')
    assert [e.key for e in read_events(path)] == ["a"]
    log = EventLog(path)
    assert log.call_result("a") == {"texts": ["x"]} and log.call_result("b") is None
    log.append(Plan("benchfill", 1, 1, 0.5, ["3"], []))
    log.close()
    assert [type(e) for e in read_events(path)] == [Call, Plan]


def test_lock_refuses_second_holder(tmp_path):
    code = (f"import sys, time; sys.path.insert(0, {REPO!r});"
            "from benchmeasure.benchfill.eventlog import run_lock\n"
            f"with run_lock({str(tmp_path)!r}):\n    print('held', flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    assert lock_holder(tmp_path) == str(holder.pid)
    with pytest.raises(InputError, match="already in progress"):
        with run_lock(tmp_path):
            pass
    holder.kill()
    holder.wait()
    assert lock_holder(tmp_path) is None  # the kernel released it with the killed holder
    with run_lock(tmp_path):  # free again after the holder died
        pass
