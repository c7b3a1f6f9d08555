"""scripts/setup_env.sh: interpreter discovery and idempotence."""

from __future__ import annotations

import os
import subprocess

from conftest import ROOT

SETUP = str(ROOT / "scripts" / "setup_env.sh")


def test_without_python_312_it_stops_and_says_what_to_install(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("bash", "sha256sum", "cat", "cut", "ls", "sort", "dirname", "env"):
        for folder in ("/usr/bin", "/bin"):
            if os.path.exists(f"{folder}/{tool}"):
                os.symlink(f"{folder}/{tool}", bare / tool)
                break
    env = {"PATH": str(bare), "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "no-pyenv")}
    result = subprocess.run(["/bin/bash", SETUP, "irt"], capture_output=True, text=True, env=env)
    assert result.returncode == 2, result.stderr
    assert "no Python >= 3.12 found" in result.stderr and "IRT_PYTHON" in result.stderr


def test_up_to_date_environment_is_left_alone():
    # run_tests.sh has just set up `dev` (requirements_irt.txt + requirements-dev.txt); `irt`, a subset,
    # (which the demo asks for) must not install again
    for target in ("dev", "irt", "dev"):
        result = subprocess.run(["bash", SETUP, target], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert "is up to date" in result.stderr and "installing" not in result.stderr, (target, result.stderr)


def test_unknown_target_is_rejected():
    result = subprocess.run(["bash", SETUP, "nonsense"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.startswith("error: unknown environment")
