"""Progress of a long fit on stderr: a redrawn line on a terminal, a plain line every ~10 s in a log.

A :class:`Progress` holds the current phase (e.g. ``warm-up``, ``draws``, ``difficulties``),
how much of it is done, the chains and the divergences so far; the code doing the work
calls :meth:`Progress.update`. A background thread writes the state:

* on a terminal (``stream.isatty()``) one line redrawn in place every 0.2 s, and at once
  whenever a new phase starts, with a bar, percentage, elapsed time and estimated time
  remaining (so every phase is shown, however short);
* otherwise (stderr redirected to a file) one full line at the start of every phase and then
  one every ``interval`` seconds (default 10; the environment variable
  ``BENCHMEASURE_PROGRESS_INTERVAL`` overrides it), so a log shows the fit is alive, however
  long one step takes — the 10–30 s of model compilation included.

A phase label never flips back: NUTS is in ``warm-up`` until every chain has started and none is
tuning any more, and in ``draws`` from then on, whatever order the chains report in.

The remaining time is estimated from the phase's own rate (done per second so far).
"""

from __future__ import annotations

import os
import sys
import threading
import time

INTERVAL_ENV = "BENCHMEASURE_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 10.0
TTY_REFRESH = 0.2


def log_interval() -> float:
    """Seconds between progress lines in a log: $BENCHMEASURE_PROGRESS_INTERVAL or 10."""
    text = os.environ.get(INTERVAL_ENV)
    if text:
        try:
            value = float(text)
        except ValueError:
            value = DEFAULT_INTERVAL
        if value > 0:
            return value
    return DEFAULT_INTERVAL


def _clock(seconds: float) -> str:
    seconds = max(round(seconds), 0)
    minutes, sec = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{sec:02d}" if hours else f"{minutes}:{sec:02d}"


class Progress:
    """Thread-backed progress display; use as a context manager (``with Progress(...) as p: p.update(...)``)."""

    def __init__(self, label: str, chains: int | None = None, stream=None, interval: float | None = None):
        self.label = label
        self.chains = chains
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = TTY_REFRESH if self.tty else (interval or log_interval())
        self.start = time.perf_counter()
        self.phase = "starting"
        self.phase_start = self.start
        self.done = 0
        self.total = 0
        self.divergences = None
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._last = ""

    # -- state -------------------------------------------------------------------------------
    def update(self, phase: str, done: int, total: int, divergences: int | None = None) -> None:
        with self._lock:
            new_phase = phase != self.phase
            if new_phase:
                self.phase, self.phase_start = phase, time.perf_counter()
            self.done, self.total = int(done), int(total)
            if divergences is not None:
                self.divergences = int(divergences)
        if new_phase and self._thread is not None:
            self._write()

    def line(self) -> str:
        with self._lock:
            now = time.perf_counter()
            elapsed = now - self.start
            parts = [f"{self.label}: {self.phase}"]
            if self.total:
                frac = min(self.done / self.total, 1.0)
                parts.append(f"{self.done}/{self.total} ({100 * frac:.1f}%)")
                if self.tty:
                    width = 24
                    filled = int(frac * width)
                    parts[0] = f"{self.label}: [{'#' * filled}{'-' * (width - filled)}] {self.phase}"
            if self.chains:
                parts.append(f"{self.chains} chains")
            if self.divergences is not None:
                parts.append(f"{self.divergences} divergences")
            parts.append(f"elapsed {_clock(elapsed)}" if self.tty else f"elapsed {elapsed:.1f} s")
            phase_elapsed = now - self.phase_start
            if self.total and 0 < self.done < self.total and phase_elapsed > 1.0:
                remaining = phase_elapsed * (self.total - self.done) / self.done
                parts.append(f"~{_clock(remaining)} left in this phase")
            return ", ".join(parts)

    # -- output ------------------------------------------------------------------------------
    def _write(self, final: bool = False) -> None:
        with self._write_lock:
            text = self.line()
            if self.tty:
                padded = text.ljust(len(self._last))
                self.stream.write("\r" + padded + ("\n" if final else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
            self._last = text

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._write()

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, name="fit-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self.phase = "done" if exc[0] is None else "stopped"
            self.total = 0  # the last line: no counts and no time left
        self._write(final=True)
        return False

    # -- nutpie --------------------------------------------------------------------------------
    def nutpie_callback(self, draws_per_chain: int):
        """A callable for ``nutpie.sample(progress_callback=...)`` feeding this display."""
        total = draws_per_chain * (self.chains or 1)
        drawing = [False]  # once every chain is past warm-up the label stays "NUTS draws"

        def callback(progress) -> None:
            done = sum(int(p.finished_draws) for p in progress)
            if not drawing[0]:
                drawing[0] = bool(progress) and all(bool(p.started) and not bool(p.tuning) for p in progress)
            divergences = sum(int(p.divergences) for p in progress)
            self.update("NUTS draws" if drawing[0] else "NUTS warm-up", done, total, divergences)

        return callback
