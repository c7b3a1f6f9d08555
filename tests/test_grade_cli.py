"""verifier/grade.py through its real command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "verifier" / "grade.py"


def run(*args, stdin=None):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, input=stdin, timeout=120
    )


@pytest.mark.parametrize(
    ("args", "last"),
    [
        (["--kind", "math", "--reference", r"\frac{1}{2}", "--response", r"so \boxed{\dfrac{2}{4}}"], "1"),
        (["--kind", "math", "--reference", "3", "--response", "The answer is 4."], "0"),
        (["--kind", "choice", "--reference", "(B)", "--response", "The answer is (B)."], "1"),
        (
            ["--kind", "choice", "--reference", "(C)", "--choices", '["x", "y", "zed"]', "--response", "Answer: zed"],
            "1",
        ),
        (["--kind", "ifeval", "--instructions", '[{"id": "punctuation:no_comma"}]', "--response", "a, b"], "0"),
        (["--kind", "ifeval", "--reference", '[{"id": "punctuation:no_comma"}]', "--response", "a b"], "1"),
        # issue 15: near-miss integers are wrong; a 400-digit boxed integer is graded, not a traceback
        (["--kind", "math", "--reference", "1396202", "--response", r"\boxed{1396203}"], "0"),
        (["--kind", "math", "--reference", "999999", "--response", r"\boxed{1000000}"], "0"),
        (["--kind", "math", "--reference", "7", "--response", "\\boxed{" + "9" * 400 + "}"], "0"),
        (["--kind", "math", "--reference", "9" * 400, "--response", "\\boxed{" + "9" * 400 + "}"], "1"),
        (["--kind", "math", "--reference", "3", "--response", "\\boxed{" + "9" * 5000 + ".5}"], "0"),
    ],
)
def test_verdicts(args, last):
    result = run(*args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == last


def test_response_from_file_and_stdin(tmp_path):
    reply = tmp_path / "reply.txt"
    reply.write_text("Thus $\\boxed{12\\text{ cm}}$.")
    result = run("--kind", "math", "--reference", "12", "--response-file", str(reply), "--explain")
    assert result.stdout.splitlines() == ["extracted: '12\\\\text{ cm}'", "1"]
    result = run("--kind", "math", "--reference", "12", "--response-file", "-", stdin="Answer: 12")
    assert result.stdout.strip() == "1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "math", "--response", "1"], "needs --reference"),
        (["--kind", "ifeval", "--response", "1"], "needs --instructions"),
        (["--kind", "ifeval", "--response", "1", "--instructions", "[{"], "not valid JSON"),
        (["--kind", "choice", "--reference", "A", "--response", "A", "--choices", "{}"], "non-empty JSON list"),
        (["--kind", "choice", "--reference", "A", "--response", "A", "--choices", "[,"], "--choices is not valid"),
        (["--kind", "math", "--reference", "1", "--response-file", "/nonexistent/r.txt"], "cannot read"),
    ],
)
def test_rejected_input(args, message):
    result = run(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_usage_errors_exit_2():
    result = run("--kind", "essay", "--reference", "x", "--response", "y")
    assert result.returncode == 2 and "invalid choice" in result.stderr
