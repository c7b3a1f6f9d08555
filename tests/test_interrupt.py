"""Ctrl-C stops a fit at once in every phase (start-up, compiling, sampling): exit status 130, one line on
stderr, no traceback and no output folder. The signal is sent the way a terminal sends it, to a child whose
SIGINT handler is the default (a shell's background job would ignore it)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import ROOT


def matrix(path, items=40):
    rng = np.random.default_rng(3)
    theta, b = rng.normal(size=8), rng.normal(size=items)
    y = rng.random((8, items)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    lines = ["model," + ",".join(f"q{j}" for j in range(items))]
    lines += [f"m{i}," + ",".join(str(int(v)) for v in row) for i, row in enumerate(y)]
    path.write_text("\n".join(lines) + "\n")
    return path


def interrupt_when(tmp_path, marker: str | None, env=None, delay: float = 0.0, draws: int = 400000, items: int = 40,
                   extra: tuple = ()):
    """Start a long fit, send SIGINT once ``marker`` appears on stderr (or after ``delay`` s); return the result."""
    out = tmp_path / "fit" / "nested"   # two folders the fit would create: neither may be left
    command = [sys.executable, str(ROOT / "scripts" / "fit_irt.py"), str(matrix(tmp_path / "m.csv", items)),
               "--n-trials", "1", "--draws", str(draws), "--output-dir", str(out), *extra]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen, lines = threading.Event(), []

    def read():
        for line in proc.stderr:
            lines.append(line)
            if marker and marker in line:
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if marker:
        assert seen.wait(120), "".join(lines)
    else:
        time.sleep(delay)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        reader.join(10)
        pytest.fail("still running 60 s after Ctrl-C; its stderr:\n" + "".join(lines))
    reader.join(10)
    return proc.returncode, "".join(lines), time.monotonic() - sent, out


def assert_stopped(code, stderr, took, out):
    assert code == 130, (code, stderr)
    assert "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1] == "interrupted", stderr
    assert not out.parent.exists(), "an interrupted fit must leave nothing it created"
    assert took < 10, f"stopped {took:.1f} s after Ctrl-C"


def test_ctrl_c_during_sampling_stops_the_fit(tmp_path):
    assert_stopped(*interrupt_when(tmp_path, "NUTS"))


def test_ctrl_c_during_start_up_stops_the_fit(tmp_path):
    assert_stopped(*interrupt_when(tmp_path, None, delay=0.5))


@pytest.mark.slow
def test_ctrl_c_while_compiling_stops_the_fit(tmp_path):
    import os
    # NUMBA_CACHE_DIR would win over the empty cache (this process sets it once a kernel module is imported)
    env = {**{k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"},
           "BENCHMEASURE_CACHE_DIR": str(tmp_path / "empty-cache")}
    assert_stopped(*interrupt_when(tmp_path, "note: compiling", env=env))


@pytest.mark.slow
@pytest.mark.parametrize("marker", ["drawing difficulties", "summarizing", "calibrating the intervals",
                                    "fit folder: writing"])
def test_ctrl_c_after_sampling_stops_the_fit(tmp_path, marker):
    """The phases after sampling (a progress line every 0.1 s names each): no output, no created folder."""
    import os
    env = {**os.environ, "BENCHMEASURE_PROGRESS_INTERVAL": "0.1"}
    assert_stopped(*interrupt_when(tmp_path, marker, env=env, draws=10000, items=400, extra=("--save-posterior",)))


STUCK = """
import threading, time
from benchmeasure.base.interrupt import command_started, exit_on_interrupt
exit_on_interrupt()
command_started()
try:
    print("ready", flush=True)
    time.sleep(600)
finally:  # a clean-up that waits for something that never comes
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()
"""


def test_ctrl_c_ends_a_command_whose_clean_up_never_finishes(tmp_path):
    """The backstop (base/interrupt.py): a command stuck after Ctrl-C is ended GRACE_S later, status 130."""
    from benchmeasure.base.interrupt import GRACE_S

    proc = subprocess.Popen([sys.executable, "-c", STUCK], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "ready"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=GRACE_S + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the backstop did not end a stuck command")
    took = time.monotonic() - sent
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "interrupted", stderr
    assert "Ctrl-C" in stderr and "Traceback" not in stderr, stderr
    assert GRACE_S - 0.5 < took < GRACE_S + 5, took
