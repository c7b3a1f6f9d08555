"""Every command line: ``--help`` explains, a usage mistake is one ``error:`` line with exit status 2,
and a closed stdout pipe is not reported as success."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmeasure.cli import COMMANDS
from conftest import ROOT, run_script

BENCHFILL_PYTHON = ROOT / ".venv-benchfill" / "bin" / "python"
# scripts that import vllm/torch tooling run in the BenchFill environment (CI creates it)
NEEDS_BENCHFILL = {"scripts/cpu_real_run.py", "scripts/prepare_cpu_model.py", "scripts/serve_cpu_panel.py"}
SCRIPTS = sorted(
    str(path.relative_to(ROOT))
    for folder in ("scripts", "propose", "verifier")
    for path in (ROOT / folder).rglob("*.py")
    if '_bootstrap.py"))["run"]' in path.read_text(encoding="utf-8")
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
    # every documented script is a thin wrapper of a registered subcommand, and every subcommand has one
    assert sorted(command.wrapper for command in COMMANDS.values()) == SCRIPTS
    for name, command in COMMANDS.items():
        text = (ROOT / command.wrapper).read_text(encoding="utf-8")
        assert f'["run"]("{name}")' in text and len(text.splitlines()) <= 12, command.wrapper
        assert (ROOT / "benchmeasure" / "commands" / f"{command.module}.py").exists()


def test_benchmeasure_lists_every_subcommand():
    listed = subprocess.run([sys.executable, "-m", "benchmeasure", "--help"], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert listed.returncode == 0 and "examples:" in listed.stdout
    for name, command in COMMANDS.items():
        assert f"  {name} " in listed.stdout and command.wrapper in listed.stdout
    wrong = subprocess.run([sys.executable, "-m", "benchmeasure", "no-such-command"], capture_output=True,
                           text=True, cwd=ROOT, timeout=60)
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: benchmeasure: unknown subcommand")


@pytest.mark.parametrize("name", ["diagnose", "fit", "benchfill"])
def test_subcommand_and_script_are_one_command(name):
    """`benchmeasure NAME` and its script run the same parser; each names itself in usage lines."""
    script = COMMANDS[name].wrapper
    via_script = run_script(script, "--help", timeout=120)
    via_module = subprocess.run([sys.executable, "-m", "benchmeasure", name, "--help"], capture_output=True,
                                text=True, cwd=ROOT, timeout=120)
    assert via_module.returncode == via_script.returncode == 0
    assert via_module.stdout.startswith(f"usage: benchmeasure {name}")
    assert via_script.stdout.startswith(f"usage: {script.rsplit('/', 1)[1]}")
    strip = lambda text, prog: text.split("example")[0].replace(prog, "PROG").split()  # noqa: E731
    assert strip(via_module.stdout, f"benchmeasure {name}") == strip(via_script.stdout, script.rsplit("/", 1)[1])


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
    code = ("from benchmeasure.base.errors import run_cli\n"
            "def main(argv):\n    raise BrokenPipeError\n"
            "run_cli(main)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 141 and done.stderr == ""


# what a command's --help must not load: each costs 0.3–4 s of imports (the openai SDK alone about 1.5 s)
HEAVY = ("openai", "matplotlib", "pandas", "numba", "pymc", "pytensor", "nutpie", "torch", "vllm", "scipy",
         "xarray", "arviz_base", "reasoning_gym", "bm25s", "onnxruntime", "inspect_ai", "sympy")


def test_help_loads_no_heavy_package():
    """Every subcommand's --help answers from the parser alone: heavy packages are imported after parsing."""
    code = ("import contextlib, io, json, sys\n"
            "from benchmeasure.cli import COMMANDS, main\n"
            f"heavy = {HEAVY!r}\n"
            "loaded = {}\n"
            "for name in COMMANDS:\n"
            "    before = {m for m in heavy if m in sys.modules}\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        try:\n            main([name, '--help'])\n"
            "        except SystemExit:\n            pass\n"
            "    new = sorted({m for m in heavy if m in sys.modules} - before)\n"
            "    if new:\n        loaded[name] = new\n"
            "print(json.dumps(loaded))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{}", f"--help imported heavy packages: {done.stdout}"
