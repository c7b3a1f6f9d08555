"""verifier/fit_ability.py (the panel's abilities for online calibration, fit once and cached): its rejected
inputs, through the real command line. The fit itself and the cache's reuse are tested by
tests/test_run_experiment.py (`run_experiment.sh sim`)."""

import os
import subprocess
import sys

from conftest import ROOT, assert_rejected

CLI = [sys.executable, str(ROOT / "verifier" / "fit_ability.py")]


def fit_ability(*args, env=None):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, env=env)


def test_bad_matrix_is_one_error_line_and_caches_nothing(tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("model,q0,q1\nm1,5,0\nm2,1,1\n")
    done = fit_ability(matrix, "--n-trials", 2, "--cache", tmp_path / "cache")
    assert_rejected(done, "count 5 is outside [0, 2]")
    assert not (tmp_path / "cache").exists() and not done.stdout
    done = fit_ability(tmp_path / "none.csv", "--n-trials", 2, "--cache", tmp_path / "cache")
    assert_rejected(done, "not found")
    good = tmp_path / "good.csv"
    good.write_text("model,q0,q1\nm1,2,0\nm2,1,1\n")
    assert_rejected(fit_ability(good, "--n-trials", 2, "--seed", -1, "--cache", tmp_path / "cache"), "seed")
    assert_rejected(fit_ability(good, "--n-trials", 0, "--cache", tmp_path / "cache"), "--n-trials")
    assert not (tmp_path / "cache").exists()


def test_failing_fit_names_its_error_once(tmp_path):
    fake = tmp_path / "fake_python"
    fake.write_text("#!/bin/sh\necho 'error: the fit broke' >&2\nexit 2\n")
    fake.chmod(0o755)
    good = tmp_path / "good.csv"
    good.write_text("model,q0,q1\nm1,2,0\nm2,1,1\n")
    env = {**os.environ, "BENCHMEASURE_IRT_PYTHON": str(fake)}
    done = fit_ability(good, "--n-trials", 2, "--cache", tmp_path / "cache", env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and last.count("error:") == 1 and "the fit broke" in last
    assert not list((tmp_path / "cache").glob("*/ability.csv"))
