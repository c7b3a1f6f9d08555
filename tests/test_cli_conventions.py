"""Every command line: ``--help`` explains, a usage mistake is one ``error:`` line with exit status 2,
and a closed stdout pipe is not reported as success."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT, run_script

BENCHFILL_PYTHON = ROOT / ".venv-benchfill" / "bin" / "python"
# scripts that import vllm/torch tooling run in the BenchFill environment (CI creates it)
NEEDS_BENCHFILL = {"scripts/cpu_real_run.py", "scripts/prepare_cpu_model.py", "scripts/serve_cpu_panel.py"}
SCRIPTS = sorted(
    str(path.relative_to(ROOT))
    for folder in ("scripts", "propose", "verifier")
    for path in (ROOT / folder).rglob("*.py")
    if "__main__" in path.read_text(encoding="utf-8") and "prompts" not in path.parts
)


def python_for(script: str) -> str:
    if script in NEEDS_BENCHFILL:
        if not BENCHFILL_PYTHON.exists():
            pytest.skip(".venv-benchfill not set up")
        return str(BENCHFILL_PYTHON)
    return sys.executable


def test_every_command_line_is_covered():
    assert {"scripts/fit_irt.py", "scripts/prepare_response_matrix.py", "propose/benchfill.py",
            "verifier/grade.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_and_usage_errors(script):
    python = python_for(script)
    helped = run_script(script, "--help", python=python, timeout=120)
    assert helped.returncode == 0 and "usage:" in helped.stdout and len(helped.stdout.splitlines()) > 3, helped.stderr
    wrong = run_script(script, "--no-such-flag", python=python, timeout=120)
    assert wrong.returncode == 2, (wrong.stdout, wrong.stderr)
    assert wrong.stderr.startswith("error: ") and wrong.stderr.count("\n") == 1, wrong.stderr
    assert "see --help" in wrong.stderr


def test_closed_stdout_is_not_success():
    code = ("from benchmeasure.errors import run_cli\n"
            "def main(argv):\n    raise BrokenPipeError\n"
            "run_cli(main)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 141 and done.stderr == ""
