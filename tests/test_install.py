"""`pip install` of the project into a fresh virtual environment (issue 13): the `benchmeasure` command lists
every subcommand, and a stdlib-only command runs from outside the checkout, finding its package data
(the paper's Table 3 domains, data/paper_reported/ in the checkout) through importlib.resources.

The wheel is built from a copy of the package with this interpreter's setuptools (no network) and installed
with --no-index into a venv without system site packages, so nothing of the checkout is importable there.
"""

from __future__ import annotations

import subprocess

import pytest

from benchmeasure.cli import COMMANDS
from conftest import ROOT, wheel_and_venv


def _run(argv, cwd, **kw):
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("install")
    wheel, env_dir = wheel_and_venv(root)
    done = _run([env_dir / "bin" / "python", "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel], cwd=root)
    assert done.returncode == 0, done.stderr
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return env_dir / "bin", elsewhere


def test_building_leaves_no_build_folder_in_the_source(installed):
    # pip builds in the source tree; build_backend.py puts setuptools' build/ in a temporary folder instead
    source = installed[1].parent / "source"
    assert (source / "benchmeasure").is_dir() and not (source / "build").exists()


def test_help_lists_every_subcommand_with_examples(installed):
    bin_dir, elsewhere = installed
    done = _run([bin_dir / "benchmeasure", "--help"], cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ") and line.split()}
    assert set(COMMANDS) <= listed, set(COMMANDS) - listed
    assert "examples:" in done.stdout and "benchmeasure fit " in done.stdout
    module = _run([bin_dir / "python", "-m", "benchmeasure", "--help"], cwd=elsewhere)
    assert module.stdout == done.stdout


def test_a_stdlib_command_runs_outside_the_checkout_with_package_data(installed):
    bin_dir, elsewhere = installed
    bench = elsewhere / "suite" / "Gaokao2023en"
    bench.mkdir(parents=True)
    (bench / "difficulty.csv").write_text("item,b_mean\nq1,-1.0\nq2,0.5\nq3,2.0\nq4,0.1\n", encoding="utf-8")
    done = _run([bin_dir / "benchmeasure", "summarize", elsewhere / "suite"], cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    # the domain comes from the packaged Table 3 (benchmeasure/data/paper_reported/table3.csv)
    assert "| Gaokao2023en | Math |" in done.stdout, done.stdout
    where = _run([bin_dir / "python", "-c", "import benchmeasure; print(benchmeasure.__file__)"], cwd=elsewhere)
    assert str(ROOT) not in where.stdout and "site-packages" in where.stdout


def test_a_missing_extra_is_one_line_naming_the_extra(installed):
    bin_dir, elsewhere = installed
    (elsewhere / "m.csv").write_text("model,q1\na,1\nb,0\n", encoding="utf-8")
    done = _run([bin_dir / "benchmeasure", "fit", "m.csv", "--n-trials", "1", "--output-dir", "out"], cwd=elsewhere)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "benchmeasure[irt]" in done.stderr and not (elsewhere / "out").exists()


def test_shipped_panels_resolve_from_the_wheel_outside_the_checkout(installed):
    """The panels (and configs) ship as package data (issue 22): by name, or by the checkout path, from any folder."""
    bin_dir, elsewhere = installed
    done = _run([bin_dir / "benchmeasure", "panel-settings", "paper", "--rewriter"], cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "NAME=MiniMax-M2.7" in done.stdout
    done = _run([bin_dir / "benchmeasure", "panel-settings", "verifier/panels/cpu_smollm.toml", "--list"],
                cwd=elsewhere)
    assert done.returncode == 0 and "smollm2-greedy" in done.stdout, done.stderr
    done = _run([bin_dir / "python", "-c", "from benchmeasure.base.resources import shipped_examples as s; "
                 "print(s('config'), s('panel'))"], cwd=elsewhere)
    assert "'aime24'" in done.stdout and "'paper'" in done.stdout, done.stderr
