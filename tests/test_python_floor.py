"""The Python floor pyproject.toml states is the one the package needs (issue 53).

``requires-python`` was ``>=3.9`` while ``benchmeasure prepare --help`` crashed on 3.9 (the entry-point loader
calls ``importlib.metadata.entry_points(group=...)``, Python 3.10). The floor is now 3.10: every module parses as
3.10 syntax, and on a 3.10 interpreter (pyenv or PATH) the command list and every subcommand's ``--help`` run
from the checkout; below the floor at least one of them fails, so the floor is not set lower than it can be.
The stdlib-only scripts (``diagnose_benchmark.py``) still run on 3.9 from a checkout (tests/test_diagnose_cli.py),
which is why ruff's target-version stays py39.
"""

from __future__ import annotations

import ast
import re
import subprocess

import pytest
from test_diagnose_cli import PYTHONS

from benchmeasure.cli import COMMANDS
from conftest import ROOT


def _floor() -> tuple[int, int]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^requires-python = ">=(\d+)\.(\d+)"$', text, re.MULTILINE)
    assert match, "pyproject.toml: requires-python is not of the form >=X.Y"
    return int(match.group(1)), int(match.group(2))


FLOOR = _floor()


def _help_failures(python: str, tmp_path) -> list:
    """The commands whose --help does not exit 0 on ``python`` (run from outside the checkout)."""
    failed = []
    for argv in ([], *([name] for name in COMMANDS)):
        done = subprocess.run([python, "-m", "benchmeasure", *argv, "--help"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        if done.returncode != 0:
            failed.append((argv, (done.stderr.strip().splitlines() or [""])[-1]))
    return failed


def test_the_floor_is_3_10():
    assert FLOOR == (3, 10)


def test_every_module_parses_as_the_floor_version():
    for path in sorted((ROOT / "benchmeasure").rglob("*.py")):
        ast.parse(path.read_text(encoding="utf-8"), str(path), feature_version=FLOOR)


def test_every_help_runs_on_the_floor_python(tmp_path):
    version = f"{FLOOR[0]}.{FLOOR[1]}"
    if version not in PYTHONS:
        pytest.skip(f"Python {version} not installed here")
    assert _help_failures(PYTHONS[version], tmp_path) == []


def test_below_the_floor_something_fails(tmp_path):
    version = f"{FLOOR[0]}.{FLOOR[1] - 1}"
    if version not in PYTHONS:
        pytest.skip(f"Python {version} not installed here")
    assert _help_failures(PYTHONS[version], tmp_path), f"everything runs on {version}: lower requires-python"
