"""Shared helpers: run the project's scripts through their real command lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_script(script: str, *args, python: str | None = None, cwd=None, timeout: float = 600,
               flags: tuple = ()) -> subprocess.CompletedProcess:
    """Run ``scripts/<script>`` (or any repo-relative path) with ``args``; capture text output."""
    path = ROOT / script if "/" in script else ROOT / "scripts" / script
    command = [python or sys.executable, *flags, str(path), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=timeout)


def assert_rejected(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 2, exactly one line on stderr starting with 'error:', no traceback; returns the line."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def write_csv(tmp_path):
    """Write ``text`` (dedented lines) to a CSV in tmp_path and return its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text("\n".join(line.strip() for line in text.strip().splitlines()) + "\n", encoding="utf-8")
        return path

    return write
