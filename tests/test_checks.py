"""Tests of the pre-fit response-matrix checks (paper Table 5) and their command line."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmeasure.analyses.checks import check_matrix, inversion_rate, separation_reliability
from benchmeasure.analyses.checks_holes import warn_if_failing
from benchmeasure.core.matrix import ResponseMatrix, write_matrix

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_response_matrix.py"
WORKED = np.array([[2, 2, 1, 0], [2, 1, 0, 1], [1, 0, 1, 0]])


def _matrix(counts, k):
    counts = np.asarray(counts, dtype=np.int64)
    m, n = counts.shape
    return ResponseMatrix([f"m{j}" for j in range(m)], [f"q{i}" for i in range(n)], counts, k)


def _guttman(m=6, n=20, k=4):
    theta = np.arange(m) + 0.5            # distinct abilities
    b = np.linspace(-1, m + 1, n)          # distinct difficulties
    return (theta[:, None] > b[None, :]).astype(np.int64) * k


def test_worked_example_by_hand():
    # hand computations in the checks module docstring
    assert separation_reliability(WORKED, 2) == pytest.approx(0.232143, abs=1e-6)
    assert separation_reliability(WORKED.T, 2) == pytest.approx(0.614286, abs=1e-6)
    assert inversion_rate(WORKED) == pytest.approx(2 / 7)
    assert inversion_rate(WORKED.T) == pytest.approx(2 / 9)


def test_identical_rows_have_zero_model_information():
    row = np.array([3, 1, 4, 0, 2, 4, 1])
    result = check_matrix(_matrix(np.tile(row, (5, 1)), 4))
    assert result.model_information == 0.0
    assert result.model_inversion_rate is None      # no two models can be ordered
    assert not result.passed
    assert result.item_information > 0.9


def test_perfect_guttman_pattern_has_no_inversions():
    result = check_matrix(_matrix(_guttman(), 4))
    assert result.model_inversion_rate == 0.0
    assert result.item_inversion_rate == 0.0
    assert result.passed


def test_random_matrix_inversion_rates_near_half_and_little_information():
    counts = np.random.default_rng(3).binomial(4, 0.5, size=(12, 300))
    result = check_matrix(_matrix(counts, 4))
    assert result.model_inversion_rate == pytest.approx(0.5, abs=0.03)
    assert result.item_inversion_rate == pytest.approx(0.5, abs=0.03)
    assert result.model_information < 0.3 and result.item_information < 0.3
    assert not result.passed


def test_information_is_in_unit_interval_and_grows_with_separation():
    rng = np.random.default_rng(0)
    theta = np.linspace(-2, 2, 8)
    b = rng.normal(size=40)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    weak = rng.binomial(1, p)
    strong = rng.binomial(32, p)
    assert 0 <= separation_reliability(weak, 1) < separation_reliability(strong, 32) <= 1


def test_warning_goes_to_stderr_only_when_failing(capsys):
    assert warn_if_failing(_matrix(_guttman(), 4)) is True
    assert capsys.readouterr().err == ""
    assert warn_if_failing(_matrix(np.tile([1, 2, 3], (3, 1)), 4)) is False
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning:") and "model_information" in err[0]


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_cli_json(tmp_path):
    path = tmp_path / "m.csv"
    write_matrix(_matrix(WORKED, 2), path)
    out = _run(path, "--n-trials", 2, "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert set(record) == {"model_information", "item_information", "model_inversion_rate",
                           "item_inversion_rate", "passed"}
    assert record["model_inversion_rate"] == pytest.approx(2 / 7)
    assert record["passed"] is False
    text = _run(path, "--n-trials", 2)
    assert text.returncode == 0 and "| 0.232 | 0.614 | 0.286 | 0.222 | no |" in text.stdout


@pytest.mark.parametrize("content, k, fragment", [
    (None, 2, "no such file"),
    ("model,q0,q1\na,1,3\nb,0,1\n", 2, "outside [0, 2]"),
    ("item,q0\na,1\n", 2, "first header column"),
])
def test_cli_rejects_bad_input(tmp_path, content, k, fragment):
    path = tmp_path / "bad.csv"
    if content is not None:
        path.write_text(content)
    out = _run(path, "--n-trials", k)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0]


def test_fit_irt_warns_on_failing_matrix_and_still_fits(tmp_path):
    path = tmp_path / "m.csv"
    write_matrix(_matrix(np.tile([1, 2, 3], (3, 1)), 4), path)
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "fit_irt.py"), str(path), "--n-trials", "4",
                          "--output-dir", str(tmp_path / "fit"), "--method", "map", "--quiet"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "pre-fit checks" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning:")
    assert (tmp_path / "fit" / "difficulty.csv").is_file()


def test_cli_output_dir_writes_json_and_markdown(tmp_path):
    path = tmp_path / "m.csv"
    write_matrix(_matrix(WORKED, 2), path)
    out_dir = tmp_path / "out"
    out = _run(path, "--n-trials", 2, "--output-dir", out_dir)
    assert out.returncode == 0, out.stderr
    assert out.stdout == _run(path, "--n-trials", 2).stdout      # stdout unchanged by --output-dir
    assert sorted(p.name for p in out_dir.iterdir()) == ["checks.json", "checks.md"]
    record = json.loads((out_dir / "checks.json").read_text())
    assert record["model_information"] == pytest.approx(0.232143, abs=1e-6)
    assert record["item_inversion_rate"] == pytest.approx(2 / 9)
    assert record["passed"] is False and len(record["failures"]) == 1
    assert record["settings"] == {"n_trials": 2}
    assert record["input"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (record["input"]["models"], record["input"]["items"]) == (3, 4)
    assert record["thresholds"]["model_information"] == {"op": ">=", "limit": 0.3}
    assert "check_response_matrix.py" in record["command"] and "--output-dir" in record["command"]
    assert record["package_versions"]["numpy"] == np.__version__
    table = (out_dir / "checks.md").read_text()
    assert "| 0.232 | 0.614 | 0.286 | 0.222 | no |" in table and "- FAILS: model_information" in table
    # --json keeps printing only the five figures
    json_out = _run(path, "--n-trials", 2, "--json", "--output-dir", tmp_path / "out2")
    assert set(json.loads(json_out.stdout)) == {"model_information", "item_information", "model_inversion_rate",
                                                "item_inversion_rate", "passed"}
    assert (tmp_path / "out2" / "checks.json").is_file()


@pytest.mark.parametrize("content, fragment", [
    (None, "no such file"),
    ("model,q0,q1\na,1,3\nb,0,1\n", "outside [0, 2]"),
])
def test_cli_failing_run_writes_nothing(tmp_path, content, fragment):
    path = tmp_path / "bad.csv"
    if content is not None:
        path.write_text(content)
    out_dir = tmp_path / "out"
    out = _run(path, "--n-trials", 2, "--output-dir", out_dir)
    assert out.returncode == 2 and out.stdout == "" and not out_dir.exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0]


def test_cli_output_dir_that_is_a_file_is_rejected(tmp_path):
    path = tmp_path / "m.csv"
    write_matrix(_matrix(WORKED, 2), path)
    blocker = tmp_path / "out"
    blocker.write_text("keep me")
    out = _run(path, "--n-trials", 2, "--output-dir", blocker)
    assert out.returncode == 2 and out.stdout == "" and blocker.read_text() == "keep me"
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a folder" in lines[0]


def test_inversion_counts_with_many_rows_equal_the_pairwise_definition():
    """Above 512 rows the counts come from sorted keys; they must equal the all-pairs comparison."""
    from benchmeasure.analyses.checks import _strict_orders

    def all_pairs(counts):
        counts = np.asarray(counts, dtype=float)
        totals = counts.sum(axis=1)
        concordant = inverted = 0
        for s in range(counts.shape[1]):
            value, key = counts[:, s], totals - counts[:, s]
            product = np.sign(key[:, None] - key[None, :]) * np.sign(value[:, None] - value[None, :])
            concordant += int((product > 0).sum())
            inverted += int((product < 0).sum())
        return concordant // 2, inverted // 2

    rng = np.random.default_rng(11)
    for _ in range(6):
        rows, cols, k = int(rng.integers(513, 1200)), int(rng.integers(1, 5)), int(rng.integers(1, 9))
        counts = rng.integers(0, k + 1, size=(rows, cols))
        assert _strict_orders(counts) == all_pairs(counts), (rows, cols, k)
