"""Tests of Theorem 2.1's bound (benchmeasure.analyses.rank_flip) and scripts/rank_flip_bound.py."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from benchmeasure.analyses.rank_flip import rank_flip_bound, w1_to_uniform
from benchmeasure.base.errors import InputError
from benchmeasure.core.matrix import ResponseMatrix, write_matrix

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "rank_flip_bound.py"


def test_w1_by_hand():
    # one atom at 0.5: ∫|1{x ≥ .5} − x| = ∫_0^.5 x + ∫_.5^1 (1 − x) = 1/8 + 1/8
    assert w1_to_uniform([0.5]) == pytest.approx(0.25)
    # atoms at 0 and 1: ECDF 1/2 on (0, 1): ∫|1/2 − x| = 1/4
    assert w1_to_uniform([0.0, 1.0]) == pytest.approx(0.25)
    # the uniform grid (i − .5)/n is at distance 1/(4n)
    assert w1_to_uniform((np.arange(10) + 0.5) / 10) == pytest.approx(1 / 40)


def test_w1_matches_scipy_against_a_fine_uniform_sample():
    z = np.random.default_rng(1).beta(2, 5, 40)
    grid = np.linspace(0, 1, 400_001)
    assert w1_to_uniform(z) == pytest.approx(wasserstein_distance(z, grid), abs=1e-5)


def test_flip_decision():
    z = [0.0, 0.5, 1.0]
    w = w1_to_uniform(z)
    safe = rank_flip_bound([0.9, 0.9, 0.9], [0.3, 0.3, 0.3], z, lipschitz=1.0, model_a="A", model_b="B")
    assert safe.benchmark_gap == pytest.approx(0.6) and safe.bound == pytest.approx(w)
    assert not safe.flip_possible
    close = rank_flip_bound([0.5, 0.5, 0.5], [0.45, 0.45, 0.45], z, lipschitz=1.0)
    assert close.flip_possible
    assert close.as_dict()["target_gap_interval"] == pytest.approx([0.05 - w, 0.05 + w])
    assert rank_flip_bound([0.5] * 3, [0.45] * 3, z, lipschitz=0.0).flip_possible is False
    with pytest.raises(InputError):
        rank_flip_bound([0.5] * 3, [0.45] * 3, z, lipschitz=-1)


def test_bound_holds_for_a_lipschitz_difference():
    # Δ(z) = L·z is L-Lipschitz; D_μ under U[0, 1] is L/2 exactly
    rng = np.random.default_rng(4)
    z = rng.uniform(size=25)
    lip = 2.0
    result = rank_flip_bound(lip * z, np.zeros_like(z), z, lip)
    assert abs(result.benchmark_gap - lip / 2) <= result.bound + 1e-12


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


@pytest.fixture
def files(tmp_path):
    counts = np.array([[4, 4, 3], [1, 2, 1], [4, 3, 3]])
    write_matrix(ResponseMatrix(["a", "b", "c"], ["q0", "q1", "q2"], counts, 4), tmp_path / "m.csv")
    (tmp_path / "d.csv").write_text("item,b_mean\nq2,1.0\nq0,-1.0\nq1,0.0\n")
    return tmp_path


def test_cli(files):
    out = _run(files / "m.csv", files / "d.csv", "--n-trials", 4, "--lipschitz", 1, "--models", "a", "b", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["benchmark_gap"] == pytest.approx((3 + 2 + 2) / 4 / 3)
    assert r["w1_uniform"] == pytest.approx(w1_to_uniform([0.0, 0.5, 1.0]))
    assert r["flip_possible"] is False
    table = _run(files / "m.csv", files / "d.csv", "--n-trials", 4, "--lipschitz", 1)
    assert table.returncode == 0 and table.stdout.count("| a |") == 2 and "| a | c |" in table.stdout


@pytest.mark.parametrize("extra, difficulty, fragment", [
    (["--models", "a", "zz"], None, "no model 'zz'"),
    (["--models", "a", "a"], None, "two different models"),
    (["--lipschitz", "-1"], None, "--lipschitz: -1 is outside the allowed range"),
    ([], "item,b_mean\nq0,1\nq1,2\nq9,3\n", "item 'q2' of the matrix is not in"),
])
def test_cli_rejects(files, extra, difficulty, fragment):
    if difficulty:
        (files / "d.csv").write_text(difficulty)
    args = [files / "m.csv", files / "d.csv", "--n-trials", 4]
    if "--lipschitz" not in extra:
        args += ["--lipschitz", 1]
    out = _run(*args, *extra)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0]


def test_cli_output_dir_writes_json_and_markdown(files):
    out_dir = files / "out"
    args = [files / "m.csv", files / "d.csv", "--n-trials", 4, "--lipschitz", 1]
    out = _run(*args, "--output-dir", out_dir)
    assert out.returncode == 0, out.stderr
    assert out.stdout == _run(*args).stdout                     # stdout unchanged by --output-dir
    assert sorted(p.name for p in out_dir.iterdir()) == ["rank_flip.json", "rank_flip.md"]
    record = json.loads((out_dir / "rank_flip.json").read_text())
    assert [(p["model_a"], p["model_b"]) for p in record["pairs"]] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert record["pairs"][0]["benchmark_gap"] == pytest.approx(7 / 12)
    assert record["pairs"][0]["w1_uniform"] == pytest.approx(w1_to_uniform([0.0, 0.5, 1.0]))
    assert record["settings"] == {"n_trials": 4, "lipschitz": 1.0, "column": "b_mean", "normalized": False,
                                  "models": None}
    for name, file in (("matrix", "m.csv"), ("difficulty", "d.csv")):
        assert record["inputs"][name]["sha256"] == hashlib.sha256((files / file).read_bytes()).hexdigest()
    assert record["items"] == 3
    assert "rank_flip_bound.py" in record["command"]
    assert record["package_versions"]["numpy"] == np.__version__
    table = (out_dir / "rank_flip.md").read_text()
    assert "| Model A | Model B | D_B (A − B) | D_μ interval | Rank flip possible |" in table
    assert "| a | b | +0.5833 |" in table
    one = _run(*args, "--models", "b", "c", "--json", "--output-dir", files / "out2")
    assert one.returncode == 0 and json.loads(one.stdout)["model_a"] == "b"       # --json output unchanged
    assert json.loads((files / "out2" / "rank_flip.json").read_text())["settings"]["models"] == ["b", "c"]


@pytest.mark.parametrize("extra, difficulty, fragment", [
    (["--models", "a", "zz"], None, "no model 'zz'"),
    (["--models", "a", "a"], None, "two different models"),
    ([], "item,b_mean\nq0,1\nq1,2\nq9,3\n", "item 'q2' of the matrix is not in"),
    ([], "item,b\nq0,1\nq1,2\nq2,3\n", "no column 'b_mean'"),
])
def test_cli_failing_run_writes_nothing(files, extra, difficulty, fragment):
    if difficulty:
        (files / "d.csv").write_text(difficulty)
    out_dir = files / "out"
    out = _run(files / "m.csv", files / "d.csv", "--n-trials", 4, "--lipschitz", 1, "--output-dir", out_dir, *extra)
    assert out.returncode == 2 and out.stdout == "" and not out_dir.exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0]
