"""Run model-written code (HumanEval-style items) in a separate process with time and memory limits.

The program runs as ``python -I`` (isolated: no user site, no environment-driven imports) in a
fresh temporary folder, in its own session so a timeout kills everything it spawned, with
``RLIMIT_AS`` (memory), ``RLIMIT_CPU`` (CPU seconds), ``RLIMIT_FSIZE`` (file size) set
before it starts, and a minimal environment. This contains accidents and runaway programs; it
is not a security boundary against deliberately hostile code (no network or filesystem
isolation), so run untrusted generations inside a container as well.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one program: ``status`` is passed, failed, timeout or memory."""

    status: str
    returncode: int | None
    stderr_tail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def _limits(memory_mb: int, cpu_s: int, file_mb: int):
    def apply() -> None:
        import resource

        memory = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        size = file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def run_program(source: str, timeout_s: float = 10.0, memory_mb: int = 1024, file_mb: int = 16) -> ExecResult:
    """Run ``source`` with Python; passed when it exits 0 within the limits."""
    with tempfile.TemporaryDirectory(prefix="grade-exec-") as folder:
        path = os.path.join(folder, "program.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(source)
        env = {"PATH": "/usr/bin:/bin", "HOME": folder, "TMPDIR": folder, "PYTHONHASHSEED": "0", "LANG": "C.UTF-8"}
        process = subprocess.Popen(
            [sys.executable, "-I", path],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_limits(memory_mb, int(timeout_s) + 1, file_mb),
        )
        try:
            _, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return ExecResult("timeout", None)
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # anything the program left running
            except (ProcessLookupError, PermissionError):
                pass
    tail = stderr.decode("utf-8", "replace")[-2000:]
    if process.returncode == 0:
        return ExecResult("passed", 0, tail)
    if process.returncode == -signal.SIGXCPU:
        return ExecResult("timeout", process.returncode, tail)
    if "MemoryError" in tail:
        return ExecResult("memory", process.returncode, tail)
    return ExecResult("failed", process.returncode, tail)


def check_completion(program: str, test: str, entry_point: str, **limits) -> ExecResult:
    """HumanEval-style check: the model's ``program``, then the item's ``test`` defining ``check``."""
    return run_program(f"{program}\n\n{test}\n\ncheck({entry_point})\n", **limits)
