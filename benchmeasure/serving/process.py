"""Start, wait for and stop a model server process: one implementation for the shell scripts
(``scripts/setup_server.sh`` and ``run_experiment.sh sim``, through ``benchmeasure serve``) and for
Python (:mod:`.cpu_server`).

A server runs in its own session (process group), so stopping it reaches the API server and every
worker it forked: SIGTERM to the group, then SIGKILL after a grace period. Readiness is the
OpenAI-compatible ``/models`` endpoint answering. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmeasure.base.lifetime import alive


class ServerExited(RuntimeError):
    """The server process ended before it answered."""


class ServerTimeout(RuntimeError):
    """The server did not answer within the time limit."""


def start_detached(argv: Sequence[str], log_path: Path, env: dict | None = None) -> subprocess.Popen:
    """Start ``argv`` in a new session with stdout and stderr to ``log_path`` and no stdin."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log:
        return subprocess.Popen(list(argv), env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def answers(url: str, timeout: float = 5.0) -> bool:
    """Whether ``url`` answers with a 2xx status (``curl -sf``)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            reply.read()
            return 200 <= reply.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_until_serving(url: str, exited: Callable[[], bool], timeout: float, poll: float = 1.0) -> float:
    """Poll ``url`` until it answers; return the seconds waited.

    Raises :class:`ServerExited` when ``exited()`` turns true first, :class:`ServerTimeout` after ``timeout`` s.
    """
    start = time.monotonic()
    while not answers(url):
        if exited():
            raise ServerExited(url)
        if time.monotonic() - start >= timeout:
            raise ServerTimeout(url)
        time.sleep(poll)
    return time.monotonic() - start


def announced_url(log_path: Path, prefix: str) -> str | None:
    """The URL a server printed on a log line ``PREFIX URL`` (the first such line), or None before it has.

    For servers that pick their own port (``--port 0``) and announce it, such as the simulated panel's
    ``listening on http://127.0.0.1:PORT/v1``.
    """
    try:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            for line in log:
                if line.startswith(prefix) and line.endswith("\n"):
                    return line[len(prefix):].strip() or None
    except FileNotFoundError:
        return None
    return None


def wait_for_announcement(log_path: Path, prefix: str, exited: Callable[[], bool], timeout: float,
                          poll: float = 0.1) -> str:
    """Poll ``log_path`` until the server announces its URL there; return it.

    Raises :class:`ServerExited` when ``exited()`` turns true first, :class:`ServerTimeout` after ``timeout`` s.
    """
    start = time.monotonic()
    while (url := announced_url(log_path, prefix)) is None:
        if exited():
            raise ServerExited(str(log_path))
        if time.monotonic() - start >= timeout:
            raise ServerTimeout(str(log_path))
        time.sleep(poll)
    return url


def stop_group(pid: int, grace: float, is_alive: Callable[[], bool] | None = None,
               on_kill: Callable[[], None] | None = None) -> None:
    """SIGTERM the process group of ``pid`` (the process alone if it leads none); SIGKILL after ``grace`` s."""
    is_alive = is_alive or (lambda: alive(pid))
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while is_alive() and time.monotonic() < deadline:
        time.sleep(min(1.0, grace / 20 or 0.05))
    if is_alive():
        if on_kill is not None:
            on_kill()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def tail(log_path: Path | None, lines: int) -> list[str]:
    """The last ``lines`` lines of a log file (none when it is missing)."""
    if log_path is None or not log_path.exists():
        return []
    return log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
