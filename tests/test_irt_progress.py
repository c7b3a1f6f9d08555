"""benchmeasure.irt.progress: a redrawn line on a terminal, plain lines at the configured interval in a log."""

from __future__ import annotations

import io
import time

from benchmeasure.irt.progress import DEFAULT_INTERVAL, INTERVAL_ENV, Progress, log_interval


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_log_lines_name_phase_counts_chains_and_time_left():
    stream = io.StringIO()
    with Progress("1PL fit", chains=4, stream=stream, interval=0.05) as progress:
        progress.update("NUTS draws", 0, 8000, divergences=0)
        time.sleep(1.2)
        progress.update("NUTS draws", 4000, 8000, divergences=1)
        deadline = time.monotonic() + 30
        while "4000/8000" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert len(lines) >= 3 and all(line.startswith("1PL fit: ") for line in lines)
    middle = [line for line in lines if "4000/8000 (50.0%)" in line]
    assert middle and "4 chains" in middle[0] and "1 divergences" in middle[0]
    assert "left in this phase" in middle[0] and "elapsed" in middle[0]
    assert lines[-1].startswith("1PL fit: done") and "left" not in lines[-1]


def test_terminal_line_is_redrawn_in_place_with_a_bar():
    stream = _Terminal()
    with Progress("1PL fit", chains=2, stream=stream) as progress:
        progress.update("drawing difficulties", 50, 100)
        time.sleep(0.5)
    text = stream.getvalue()
    assert text.count("\r") >= 2 and text.endswith("\n") and text.count("\n") == 1
    assert "1PL fit: [############------------] drawing difficulties" in text


def test_every_phase_is_drawn_on_a_terminal_however_short():
    # A phase that starts and ends between two 0.2 s redraws is still shown, with its bar.
    stream = _Terminal()
    with Progress("1PL fit", chains=2, stream=stream) as progress:
        progress.update("NUTS warm-up", 1, 10)
        progress.update("NUTS draws", 9, 10)
    text = stream.getvalue()
    assert "] NUTS warm-up, 1/10" in text and "] NUTS draws, 9/10" in text and "1PL fit: done" in text


def test_an_error_inside_is_reported_as_stopped():
    stream = io.StringIO()
    try:
        with Progress("1PL fit", stream=stream, interval=60):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert stream.getvalue().splitlines()[-1].startswith("1PL fit: stopped")


def test_interval_from_the_environment(monkeypatch):
    monkeypatch.setenv(INTERVAL_ENV, "2.5")
    assert log_interval() == 2.5
    for bad in ("zero", "-1", "0", ""):
        monkeypatch.setenv(INTERVAL_ENV, bad)
        assert log_interval() == DEFAULT_INTERVAL


class _Chain:
    def __init__(self, started, tuning, finished):
        self.started, self.tuning, self.finished_draws, self.divergences = started, tuning, finished, 0


def test_a_new_phase_is_written_to_a_log_at_once():
    # issue 22: 10–30 s of compilation showed nothing in a log (the first line came after the interval)
    stream = io.StringIO()
    with Progress("1PL fit", stream=stream, interval=60) as progress:
        progress.update("compiling", 0, 0)
        assert stream.getvalue().startswith("1PL fit: compiling")


def test_the_nuts_label_does_not_flip_back_to_warm_up():
    stream = io.StringIO()
    with Progress("1PL fit", chains=2, stream=stream, interval=60) as progress:
        callback = progress.nutpie_callback(20)
        callback([_Chain(True, True, 5), _Chain(False, False, 0)])      # chain 2 not started: warm-up
        callback([_Chain(True, False, 15), _Chain(False, False, 0)])    # still warm-up: chain 2 has not begun
        callback([_Chain(True, False, 20), _Chain(True, False, 12)])    # both past warm-up: draws
        callback([_Chain(True, False, 20), _Chain(True, True, 12)])     # a late report of tuning: no flip back
    phases = [line.split(":")[1].split(",")[0].strip() for line in stream.getvalue().splitlines()]
    assert phases == ["NUTS warm-up", "NUTS draws", "done"], phases
