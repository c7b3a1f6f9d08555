"""run_experiment.sh through its real command line: one 'error:' line for a missing run, an unusable interpreter
or a simulation server that dies; and `sim` end to end (ability fit, cached; Table 2)."""

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import ROOT, assert_rejected

SCRIPT = ROOT / "run_experiment.sh"
SETTINGS = ("BENCHFILL_PYTHON", "BENCHMEASURE_IRT_PYTHON", "BENCHFILL_RESULTS", "BENCHMARK", "PANEL_CONFIG")


def run_experiment(*args, script=SCRIPT, timeout=900, **env):
    environ = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    return subprocess.run(["bash", str(script), *map(str, args)], capture_output=True, text=True,
                          env={**environ, **env}, timeout=timeout)


@pytest.mark.parametrize("command", ["run", "status"])
def test_run_or_status_before_init_is_one_error_line(tmp_path, command):
    done = run_experiment(command, BENCHFILL_RESULTS=str(tmp_path), BENCHMARK="aime25")
    assert_rejected(done, "no run for aime25 yet", "init")
    assert not done.stdout


def test_without_a_benchfill_environment_it_names_the_setup_command(tmp_path):
    # A copy of the script in a folder with neither .venv-benchfill nor .venv-irt falls back to python3;
    # here that is a bare virtual environment, which cannot import numpy or openai.
    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(bare)
    shutil.copy(SCRIPT, tmp_path / "run_experiment.sh")
    path = f"{bare / 'bin'}{os.pathsep}{os.environ['PATH']}"
    for command in ("run", "status", "init", "sim"):
        done = run_experiment(command, script=tmp_path / "run_experiment.sh", PATH=path,
                              BENCHFILL_RESULTS=str(tmp_path / "results"))
        assert_rejected(done, "interpreter python3 lacks numpy, openai", "bash scripts/setup_env.sh dev")
    done = run_experiment("run", BENCHFILL_PYTHON=str(tmp_path / "no-such-python"), BENCHFILL_RESULTS=str(tmp_path))
    assert_rejected(done, "no-such-python does not start", "BENCHFILL_PYTHON")
    assert not (tmp_path / "results").exists()


def test_sim_rejects_a_bad_seed(tmp_path):
    assert_rejected(run_experiment("sim", "-3", BENCHFILL_RESULTS=str(tmp_path)), "non-negative integer")
    assert not list(tmp_path.iterdir())


def test_sim_server_that_exits_is_one_error_line(tmp_path):
    data = tmp_path / "math_sim" / "data-seed4"
    data.mkdir(parents=True)
    (data / "calibration.csv").write_text("item_id,b_mean,b_sd\n")  # the data set counts as written
    (data / "world.json").write_text("{not json")
    done = run_experiment("sim", 4, BENCHFILL_RESULTS=str(tmp_path))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the simulation server exited during start-up: ")
    assert "JSONDecodeError" in lines[0] and str(data / "server.log") in lines[0]


@pytest.mark.slow
def test_sim_end_to_end_reuses_the_ability_fit(tmp_path):
    results = tmp_path / "results"
    first = run_experiment("sim", 1, BENCHFILL_RESULTS=str(results), BENCHMEASURE_IRT_PYTHON=sys.executable)
    assert first.returncode == 0, first.stderr[-3000:]
    data = results / "math_sim" / "data-seed1"
    fits = list((data / "ability_cache").glob("*/ability.csv"))
    assert len(fits) == 1 and "fitting panel abilities once" in first.stderr
    diagnostics = json.loads((fits[0].parent / "diagnostics.json").read_text())
    assert diagnostics  # the NUTS fit's record, written by scripts/fit_irt.py
    runs = sorted(p for p in (results / "math_sim").iterdir() if p.name.startswith("sim-seed1-"))
    assert len(runs) == 1 and (results / "math_sim" / "LATEST").read_text().strip() == str(runs[0])
    table = (runs[0] / "table2.txt").read_text()
    assert table.startswith("Table 2 (math_sim)") and table.strip() in first.stdout
    for method in ("benchfill", "baseline", "oracle"):
        assert any(line.startswith(method) for line in table.splitlines())
    summary = json.loads((runs[0] / "summary.json").read_text())
    assert set(summary["inputs"]) == {"calibration", "pool", "matrix"}

    # A second call: the data set and its fit are reused. Any new fit would fail with this interpreter. The data set's
    # config is cut to one round on one gap first: the fit does not depend on the search, and a second whole run would
    # only cost time (a data set made again would have its config written afresh: checked below).
    config = data / "config.toml"
    text = config.read_text()
    assert text.count("[search]\n") == 1
    config.write_text(text.replace("[search]\n", "[search]\ngaps = 1\nrounds = 1\n"))
    fake = tmp_path / "no_fit_python"
    fake.write_text("#!/bin/sh\necho 'error: no fit expected' >&2\nexit 2\n")
    fake.chmod(0o755)
    before = fits[0].read_bytes(), fits[0].stat().st_mtime_ns
    second = run_experiment("sim", 1, BENCHFILL_RESULTS=str(results), BENCHMEASURE_IRT_PYTHON=str(fake))
    assert second.returncode == 0, second.stderr[-3000:]
    assert "fitting panel abilities" not in second.stdout + second.stderr and "Table 2 (math_sim)" in second.stdout
    assert (fits[0].read_bytes(), fits[0].stat().st_mtime_ns) == before
    assert len([p for p in (results / "math_sim").iterdir() if p.name.startswith("sim-seed1-")]) == 2
    assert "gaps = 1" in config.read_text()   # the data set was not made again

    # verifier/fit_ability.py finds the same cached fit without fitting.
    by_hand = subprocess.run([sys.executable, str(ROOT / "verifier" / "fit_ability.py"),
                              str(data / "response_matrix.csv"), "--n-trials", "32",
                              "--cache", str(data / "ability_cache"), "--seed", "1"],
                             capture_output=True, text=True, env={**os.environ, "BENCHMEASURE_IRT_PYTHON": str(fake)})
    assert by_hand.returncode == 0, by_hand.stderr
    assert Path(by_hand.stdout.strip()) == fits[0] and not by_hand.stderr
