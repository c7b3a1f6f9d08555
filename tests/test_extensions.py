"""Extensions from another installed package: a toy package (tests/fixtures/toy_extension) declares one grader, log
format, BenchFill strategy, observation model and fit route as entry points; installed with pip into a folder on
PYTHONPATH, each is used through the command line (and the strategy in a BenchFill run, whose ability fit runs in
a child process). A broken entry point is skipped with a warning, never fatal."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from conftest import BENCHFILL_CLI, ROOT, assert_rejected, sim_run

TOY = ROOT / "tests" / "fixtures" / "toy_extension"


@pytest.fixture(scope="module")
def toy_env(tmp_path_factory):
    """The environment of a command line that has the toy package installed (pip install --target)."""
    pytest.importorskip("setuptools")
    import shutil

    site = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("build") / "toy_extension"   # a copy: the build leaves nothing in the checkout
    shutil.copytree(TOY, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--target", str(site), str(source)], capture_output=True, text=True, timeout=300,
                          cwd=source.parent)
    assert done.returncode == 0, done.stderr
    assert any(site.glob("benchmeasure_toy_extension-*.dist-info/entry_points.txt"))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}


def _cli(env, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "benchmeasure", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def _toy_logs(folder):
    for model, answers in (("m1", ["A", "b", "a", "C"]), ("m2", ["b", "B", "a", "c"]), ("m3", ["a", "a", "x", "c"])):
        (folder / f"{model}.jsonl").write_text("\n".join(
            json.dumps({"id": f"q{i}", "target": "a" if i != 3 else "c", "responses": [answers[i], answers[i].upper()]})
            for i in range(4)) + "\n")
    return [folder / f"m{k}.jsonl" for k in (1, 2, 3)]


def test_grader_and_log_format_from_a_package(toy_env, tmp_path):
    graded = _cli(toy_env, "grade", "--kind", "toy-casefold", "--reference", "Paris", "--response", "  pARIS")
    assert graded.returncode == 0, graded.stderr
    assert graded.stdout.strip().splitlines()[-1] == "1"
    listed = _cli(toy_env, "prepare", "--help")
    assert "toy-jsonl" in listed.stdout and "toy-casefold" in listed.stdout
    out = tmp_path / "m.csv"
    made = _cli(toy_env, "prepare", "--from", "toy-jsonl", *_toy_logs(tmp_path), "--n-trials", "2", "--grade",
                "toy-casefold", "--output", out)
    assert made.returncode == 0, made.stderr
    rows = {row["model"]: row for row in csv.DictReader(open(out))}
    assert rows["m1"]["q0"] == "2" and rows["m2"]["q0"] == "0" and rows["m3"]["q3"] == "2"
    plain = _cli({**os.environ, "PYTHONPATH": str(ROOT)}, "grade", "--kind", "toy-casefold", "--reference", "a",
                 "--response", "a")
    assert plain.returncode == 2 and "toy-casefold" in plain.stderr   # without the package: an unknown choice


def test_a_decorated_grader_from_a_package_gets_its_option(toy_env):
    """The entry point names a module whose ``@GRADERS.add`` registers a grader; ``--option`` sets its option."""
    common = ["grade", "--kind", "toy-tolerant", "--reference", "1.0", "--response", "1.04"]
    strict = _cli(toy_env, *common)
    assert strict.returncode == 0 and strict.stdout.strip().splitlines()[-1] == "0", strict.stderr
    assert "could not be loaded" not in strict.stderr
    loose = _cli(toy_env, *common, "--option", "tolerance=0.05")
    assert loose.returncode == 0 and loose.stdout.strip().splitlines()[-1] == "1", loose.stderr
    assert_rejected(_cli(toy_env, *common, "--option", "tol=0.05"), "--option tol", "accepted: tolerance")


@pytest.mark.slow
def test_route_and_observation_model_from_a_package(toy_env, tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("model,q0,q1,q2,q3,q4\na,2,1,0,2,1\nb,1,1,0,2,0\nc,2,2,1,2,1\nd,0,1,0,1,0\n")
    common = ["--n-trials", 2, "--chains", 2, "--tune", 200, "--draws", 200, "--seed", 1, "--quiet"]
    routed = _cli(toy_env, "fit", matrix, "--route", "toy-direct", "--output-dir", tmp_path / "r", *common)
    assert routed.returncode == 0, routed.stderr
    settings = json.loads((tmp_path / "r" / "diagnostics.json").read_text())["settings"]
    assert settings["route"] == "toy-direct" and settings["sampler"] == "nutpie"
    observed = _cli(toy_env, "fit", matrix, "--observation", "toy-logit", "--output-dir", tmp_path / "o", *common)
    assert observed.returncode == 0, observed.stderr
    settings = json.loads((tmp_path / "o" / "diagnostics.json").read_text())["settings"]
    assert settings["observation"] == "toy-logit" and settings["route"] == "joint"
    refused = _cli(toy_env, "fit", matrix, "--observation", "toy-logit", "--route", "collapsed", "--output-dir",
                   tmp_path / "x", *common)
    assert refused.returncode == 2 and "runs on the joint or toy-direct route" in refused.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_strategy_from_a_package_runs_in_a_benchfill_run(toy_env, tmp_path):
    folder, env, server = sim_run(tmp_path, 4, search={"gaps": 1, "rounds": 1})
    try:
        done = subprocess.run([*BENCHFILL_CLI, "run", str(folder)], env={**env, "PYTHONPATH": toy_env["PYTHONPATH"]},
                              capture_output=True, text=True, timeout=900)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["toy_nearest"]["gaps"] == 1 and {"benchfill", "baseline"} <= set(summary)
    assert (folder / "toy_nearest_item_records.csv").is_file()


def test_a_broken_extension_is_skipped_with_a_warning(tmp_path):
    site = tmp_path / "site"
    info = site / "broken_ext-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-ext\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[benchmeasure.graders]\nbroken = no_such_module_here:GRADER\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    graded = _cli(env, "grade", "--kind", "math", "--reference", "2", "--response", "\\boxed{2}")
    assert graded.returncode == 0 and graded.stdout.strip().splitlines()[-1] == "1"
    assert "broken" in graded.stderr and "could not be loaded" in graded.stderr and "Traceback" not in graded.stderr
