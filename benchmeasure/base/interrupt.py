"""Ctrl-C in every phase of a command: exit status 130, the one line ``interrupted``, nothing partial.

A command's life has three phases, each with its own answer to SIGINT:

* **start-up**, from the first line the package runs (``scripts/_bootstrap.py``, ``python -m benchmeasure``, the
  ``benchmeasure`` entry point) until the command's ``main`` is called: nothing has been created yet, so Ctrl-C
  ends the process at once. (Python's own handler raised ``KeyboardInterrupt`` inside the imports, before
  :func:`~benchmeasure.base.errors.run_cli` could catch it: a traceback, and death by SIGINT, status −2.)
* **the command**: Python's own handler (``KeyboardInterrupt``), so every ``finally``, ``all_or_nothing`` and
  run-folder lock undoes what the command started, and ``asyncio.run`` (which takes over only that handler)
  cancels its tasks. A ``KeyboardInterrupt`` that Python swallows — raised inside a weakref callback, a
  ``__del__`` or a garbage collection during an import, printed as "Exception ignored" — is raised again in the
  main thread (:func:`sys.unraisablehook`): the command ran on and exited 0 with its outputs written.
* **after**, once the command's outcome is decided (its outputs written, or its error or ``interrupted`` line
  printed): a Ctrl-C while the interpreter shuts down ends it at once.

A backstop covers every phase: the C-level signal handler also writes the signal's number to a pipe
(:func:`signal.set_wakeup_fd`) that a watcher thread reads, so a Ctrl-C is seen at once even when the main thread
is stuck (in native code that never returns to Python, or in a clean-up that waits on something that will not
come). If the process still runs :data:`GRACE_S` seconds after a Ctrl-C while this module's handlers are in
charge, the watcher writes a note and ``interrupted`` and ends it with status 130. The outputs are safe either way:
each is written to a temporary file and renamed into place (``base/files.py``), so a cut clean-up can leave a
temporary file behind, never a partial output.

A process started with SIGINT ignored (a shell's background job, ``nohup``) keeps ignoring it: nothing here
installs a handler then. Standard library only.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import NoReturn

EXIT_INTERRUPTED = 130
GRACE_S = 5.0   # how long a command may take to undo its work after Ctrl-C before the backstop ends it
_installed = False


def _exit_now(signum=None, frame=None) -> None:
    """Write ``interrupted`` and end the process at once (nothing the command created is open)."""
    try:
        sys.stdout.flush()
    except Exception:
        pass
    try:
        os.write(2, b"interrupted\n")
    finally:
        os._exit(EXIT_INTERRUPTED)


def exit_interrupted() -> NoReturn:
    """The command stopped on Ctrl-C and has undone what it started: ``interrupted``, exit status 130.

    Run as a program, the exit skips the interpreter's teardown after the exit handlers (``atexit``: temporary
    folders, pools, logging) have run: a sampler's threads, cancelled but not yet gone, made that teardown crash
    (SIGSEGV, status −11, after ``interrupted`` was printed: ``posterior-metrics --calibrate`` mid-fit).
    """
    print("interrupted", file=sys.stderr)
    if not _installed:  # a command called from Python: the caller's process goes on
        sys.exit(EXIT_INTERRUPTED)
    signal.signal(signal.SIGINT, _exit_now)  # a second Ctrl-C while the exit handlers run: at once
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(EXIT_INTERRUPTED)


def _unraisable(unraisable, previous=sys.unraisablehook) -> None:
    if isinstance(unraisable.exc_value, KeyboardInterrupt) or unraisable.exc_type is KeyboardInterrupt:
        # swallowed where it was raised: raise it again where it stops the command. A real SIGINT to the main
        # thread, from another thread a moment later: interrupt_main() called here raised it inside this hook,
        # which swallowed it again, and from elsewhere it does not wake a sleeping system call
        timer = threading.Timer(0.01, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
        timer.daemon = True
        timer.start()
        return
    previous(unraisable)


def _backstop() -> None:
    """Start the watcher thread of the module docstring (main thread only; silently not where it cannot run)."""
    try:
        read, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except (ValueError, OSError):
        return

    def watch() -> None:
        while True:
            try:
                data = os.read(read, 64)
            except OSError:
                return
            if not data:
                return
            if signal.SIGINT in data and _handled():
                deadline = time.monotonic() + GRACE_S
                while time.monotonic() < deadline:
                    time.sleep(0.05)
                # no flush of sys.stdout here: the stuck main thread may hold its lock
                os.write(2, f"note: still running {GRACE_S:g} s after Ctrl-C; ending it now (an output is "
                            f"either complete or absent)\ninterrupted\n".encode())
                os._exit(EXIT_INTERRUPTED)

    threading.Thread(target=watch, name="interrupt-backstop", daemon=True).start()


def _handled() -> bool:
    """Whether this module's handlers are in charge of SIGINT (not ignored, not someone else's)."""
    return _installed and signal.getsignal(signal.SIGINT) in (_exit_now, signal.default_int_handler)


def exit_on_interrupt() -> None:
    """Start-up (and after): Ctrl-C ends the process at once with ``interrupted`` and status 130.

    Called first by every front end; idempotent. Left alone when SIGINT is ignored or has another handler.
    """
    global _installed
    if not _installed:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return  # ignored (a background job) or handled by the embedding program: theirs
        _installed = True
        sys.unraisablehook = _unraisable
        _backstop()
    if _handled():
        signal.signal(signal.SIGINT, _exit_now)


def command_started() -> None:
    """While the command runs: Ctrl-C raises ``KeyboardInterrupt``, so what the command started is undone.

    Acts only when a front end called :func:`exit_on_interrupt` (a command called from Python, as the tests do,
    keeps its caller's handler)."""
    if _handled():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def command_ended() -> None:
    """The command's outcome is decided: Ctrl-C from here on ends the process at once."""
    if _handled():
        signal.signal(signal.SIGINT, _exit_now)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold Ctrl-C while the block runs (a few renames that must happen all or none), then act on it.

    In a thread other than the main one (where no signal handler can be changed) the block just runs.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list = []
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.SIG_IGN, None):
        yield
        return
    signal.signal(signal.SIGINT, lambda signum, frame: pending.append((signum, frame)))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        if callable(previous):
            previous(*pending[0])
        else:  # SIG_DFL: end as the signal would have
            signal.raise_signal(signal.SIGINT)
