"""Model-written code runs in a separate process under time and memory limits."""

from __future__ import annotations

import time

from benchmeasure.grading.code_exec import check_completion, run_program

TEST = "def check(f):\n    assert f(2, 3) == 5\n    assert f(-1, 1) == 0\n"


def test_humaneval_style_pass_and_fail():
    assert check_completion("def add(a, b):\n    return a + b\n", TEST, "add").passed
    result = check_completion("def add(a, b):\n    return a - b\n", TEST, "add")
    assert result.status == "failed" and "AssertionError" in result.stderr_tail


def test_infinite_loop_is_cut_off():
    start = time.monotonic()
    assert run_program("while True:\n    pass\n", timeout_s=1.0).status == "timeout"
    assert time.monotonic() - start < 10


def test_memory_limit():
    assert run_program("x = bytearray(2 * 1024**3)\n", memory_mb=256).status == "memory"


def test_runs_in_a_fresh_folder_with_a_minimal_environment(monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "x")
    program = "import os\nassert os.listdir('.') == ['program.py']\nassert 'SECRET_TOKEN' not in os.environ\n"
    assert run_program(program).passed
