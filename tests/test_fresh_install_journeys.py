"""The pip user's path (issue 22): the wheel, installed into a fresh virtual environment with its `benchfill`
extra (which includes `irt`), walks the README's journeys with the `benchmeasure` command only, from a folder
outside the checkout — real data in, fit, diagnose, explore, score, a BenchFill simulation
(sim-data → serve start → init → run → status → serve stop), and a shipped config and panel by name.

The venv has no system site packages and no checkout on its path; the packages come from the index pip is
configured with, held to the tested pins by requirements_irt.txt and requirements-dev.txt as constraints.
Installing takes minutes the first time (measured in docs/pip_user.md), so the test is marked slow; CI
(`.ci/run` → scripts/run_tests.sh) runs the whole suite, so it runs there once per CI run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, wheel_and_venv

pytestmark = pytest.mark.slow


def _run(argv, cwd, env=None, timeout=900):
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """(bin folder of the venv, a working folder outside the checkout, the environment to run in)."""
    root = tmp_path_factory.mktemp("fresh")
    wheel, env_dir = wheel_and_venv(root)
    # Python writes the .pyc of what the journeys import (pip --no-compile would otherwise leave every command to
    # compile its imports from source where PYTHONDONTWRITEBYTECODE is set); the same packages either way
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # an empty kernel cache of its own, as on a new machine (the install's kernels are its own entries anyway:
    # Numba keys them by the source file's path)
    env["BENCHMEASURE_CACHE_DIR"] = str(root / "cache")
    env.pop("NUMBA_CACHE_DIR", None)
    done = _run([env_dir / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile", f"{wheel}[benchfill]",
                 "-c", ROOT / "requirements_irt.txt", "-c", ROOT / "requirements-dev.txt"],
                cwd=root, env=env, timeout=1800)
    if done.returncode != 0 and "No matching distribution" in done.stderr:
        pytest.skip(f"the package index cannot serve the pinned packages here: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    where = _run([env_dir / "bin" / "python", "-c", "import benchmeasure; print(benchmeasure.__file__)"],
                 cwd=elsewhere, env=env)
    assert str(ROOT) not in where.stdout and "site-packages" in where.stdout
    return env_dir / "bin", elsewhere, env


def bm(fresh, *args, ok=True, timeout=900):
    bin_dir, elsewhere, env = fresh
    done = _run([bin_dir / "benchmeasure", *args], cwd=elsewhere, env=env, timeout=timeout)
    if ok:
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr, done.stderr
    return done


def test_simulated_example_fit_diagnose_explore_score(fresh):
    _, elsewhere, _ = fresh
    bm(fresh, "make-example", "--output-dir", "example", "--models", "8", "--items", "30", "--n-trials", "4")
    bm(fresh, "prepare", "example/responses.csv", "--n-trials", "4", "--output", "mine/response_matrix.csv")
    fit = bm(fresh, "fit", "mine/response_matrix.csv", "--n-trials", "4", "--output-dir", "mine", "--chains", "2",
             "--tune", "200", "--draws", "200", "--seed", "1", "--save-posterior", "--name", "my_benchmark")
    assert "compiling" in fit.stderr  # the compilation phase is announced (issue 22, item 6)
    done = bm(fresh, "diagnose", "mine/difficulty.csv", "--json")
    assert json.loads(done.stdout)["benchmark"] == "my_benchmark"
    bm(fresh, "posterior-metrics", "mine", "--hdi-prob", "0.9", "--top-k", "3")
    bm(fresh, "explore", "mine/difficulty.csv", "--output", "explorer.html", "--quiet")
    assert (elsewhere / "explorer.html").stat().st_size > 1000
    rows = (elsewhere / "mine" / "response_matrix.csv").read_text(encoding="utf-8").splitlines()
    (elsewhere / "new_model.csv").write_text("\n".join([rows[0], rows[-1].replace(rows[-1].split(",")[0], "new", 1)])
                                             + "\n", encoding="utf-8")
    bm(fresh, "score", "new_model.csv", "--difficulty", "mine/difficulty.csv", "--n-trials", "4", "--output",
       "scores.csv")
    assert "new" in (elsewhere / "scores.csv").read_text(encoding="utf-8")
    # the README's other steps on the same fit: anchored scales, comparison with the truth, the figure
    bm(fresh, "calibrate", "mine/response_matrix.csv", "--abilities", "mine/ability.csv", "--n-trials", "4",
       "--output", "new_difficulty.csv")
    bm(fresh, "select-anchors", "mine/difficulty.csv", "--k", "5", "--strategy", "stratified", "--output",
       "anchors.csv")
    compared = bm(fresh, "compare", "mine/difficulty.csv", "example/true_difficulty.csv", "--reference-column",
                  "b_true").stdout
    assert "Items compared: 30" in compared, compared
    bm(fresh, "plot", "mine/difficulty.csv", "--output", "fig.svg")
    assert (elsewhere / "fig.svg").is_file() and not (elsewhere / "fig.pdf").exists()


def test_real_data_in_fit_diagnose(fresh):
    _, elsewhere, _ = fresh
    shutil.copy(ROOT / "data" / "chembench" / "binary_matrix.csv", elsewhere / "binary_matrix.csv")
    bm(fresh, "prepare", "--from", "wide", "binary_matrix.csv", "--items-as-rows", "--n-trials", "1",
       "--output", "chembench/response_matrix.csv")
    bm(fresh, "fit", "chembench/response_matrix.csv", "--n-trials", "1", "--output-dir", "chembench",
       "--method", "map", "--quiet")
    done = bm(fresh, "diagnose", "chembench/difficulty.csv", "--json")
    record = json.loads(done.stdout)
    assert record["benchmark"] == "chembench" and record["items"] == 2854
    assert 0 < record["ddm"] < 1


def test_benchfill_simulation_init_run_status(fresh):
    _, elsewhere, env = fresh
    bm(fresh, "benchfill", "sim-data", "--folder", "sim", "--seed", "0", timeout=1200)
    bin_dir = fresh[0]
    bm(fresh, "serve", "start", "--name", "sim", "--pid-file", "sim/server.pid", "--log", "sim/server.log", "--",
       bin_dir / "python", "-m", "benchmeasure.serving.sim.server", "--world", "sim/world.json", "--port", "0",
       "--seed", "0")
    try:
        url = bm(fresh, "serve", "wait", "--name", "sim", "--pid-file", "sim/server.pid", "--log", "sim/server.log",
                 "--url-from-log", "listening on ", "--timeout", "120", "--log-lines", "0").stdout.strip()
        assert url.startswith("http://127.0.0.1:"), url
        env["BENCHFILL_SIM_URL"] = url
        folder = bm(fresh, "benchfill", "init", "--config", "sim/config.toml", "--results", "results",
                    "--name", "first").stdout.strip()
        assert str(elsewhere) in folder
        bm(fresh, "benchfill", "run", folder, timeout=1200)
        status = bm(fresh, "benchfill", "status", folder).stdout
        assert "gap" in status.lower(), status
        where = bm(fresh, "benchfill", "where", "--benchmark", "math_sim", "--results", "results").stdout.strip()
        assert where == folder
    finally:
        bm(fresh, "serve", "stop", "--name", "sim", "--pid-file", "sim/server.pid", "--grace", "5", ok=False)


def test_a_shipped_config_and_panel_by_name(fresh):
    """`benchfill init --config aime24` outside a checkout: the shipped config and its shipped panel; the data paths
    are the user's, under the working folder — first refused naming that, then found."""
    _, elsewhere, env = fresh
    env.pop("PANEL_CONFIG", None)
    refused = bm(fresh, "benchfill", "init", "--config", "aime24", "--results", "shipped", ok=False)
    assert refused.returncode == 2 and "supply the file there" in refused.stderr, refused.stderr
    assert str(elsewhere / "data" / "benchfill" / "aime24" / "calibration.csv") in refused.stderr
    for relative, text in (("data/benchfill/aime24/calibration.csv", "item_id,b_mean,b_sd\n0,-1.0,0.2\n1,1.0,0.2\n"),
                           ("data/benchmarks/aime24/test.jsonl", '{"item_id": 0, "problem": "1+1?", "answer": "2"}\n'
                                                                 '{"item_id": 1, "problem": "2+2?", "answer": "4"}\n'),
                           ("data/matrix/aime24_response_matrix.csv", "model,0,1\nQwQ-32B,30,2\n")):
        (elsewhere / relative).parent.mkdir(parents=True, exist_ok=True)
        (elsewhere / relative).write_text(text, encoding="utf-8")
    folder = bm(fresh, "benchfill", "init", "--config", "aime24", "--results", "shipped", "--name", "first")
    record = json.loads((elsewhere / "shipped" / "aime24" / "first" / "config.json").read_text(encoding="utf-8"))
    assert folder.stdout.strip().endswith("first")
    assert record["panel"]["path"].endswith("benchmeasure/verifier/panels/paper.toml")
    assert "site-packages" in record["panel"]["path"] and "site-packages" in record["source"]
    assert "NAME=MiniMax-M2.7" in bm(fresh, "panel-settings", "paper", "--rewriter").stdout
