"""A child process that ends with the process that started it, even when that one is killed with ``kill -9``.

BenchFill's first use fits the panel's abilities in a child (``python -m benchmeasure fit``, see
:mod:`benchmeasure.benchfill.abilities`); a ``kill -9`` of the run must not leave that fit running. Two
mechanisms, both set up by the parent:

* :func:`die_with_parent` — a ``preexec_fn`` that asks the Linux kernel to SIGKILL the child the moment its
  parent dies (``prctl(PR_SET_PDEATHSIG)``); a no-op elsewhere;
* :data:`PARENT_PID_ENV` in the child's environment — the child's :func:`exit_with_parent` then checks every
  second that the parent still exists and exits when it does not: the portable fallback (macOS, BSD) and a
  second guard on Linux. The parent need not be the child's direct parent (an interpreter wrapper may sit
  between them).

Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading

PARENT_PID_ENV = "BENCHMEASURE_PARENT_PID"
POLL_S = 1.0


def die_with_parent(parent: int):
    """``preexec_fn`` for a child of ``parent``: SIGKILL it when the parent dies (Linux ``PR_SET_PDEATHSIG``)."""
    def arm() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):  # not Linux: exit_with_parent's check covers it
            return
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)
    return arm


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (``kill -0``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def exit_with_parent(environ=os.environ, poll: float = POLL_S) -> threading.Thread | None:
    """When :data:`PARENT_PID_ENV` names a process, end this one (exit status 1) once that process is gone.

    Returns the watching thread (a daemon), or None when the variable is unset or not a process ID.
    """
    text = environ.get(PARENT_PID_ENV, "")
    if not text.isdigit() or int(text) <= 1:
        return None
    parent = int(text)

    def watch() -> None:
        while alive(parent):
            threading.Event().wait(poll)
        os._exit(1)

    thread = threading.Thread(target=watch, name="exit-with-parent", daemon=True)
    thread.start()
    return thread
