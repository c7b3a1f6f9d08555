"""Tests of the IRT robustness analyses (Tables 6-10) and scripts/irt_robustness.py."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import comb

from benchmeasure.matrix import ResponseMatrix, write_matrix
from benchmeasure.robustness import bic, bic_comparison, correlation_summary, markdown, max_draw_log_likelihood
from benchmeasure.simulate import simulate_counts

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "irt_robustness.py"


def _direct_log_lik(y, k, theta, b, a=None):
    eta = theta[:, None] - b[None, :]
    if a is not None:
        eta = a[None, :] * eta
    p = 1 / (1 + np.exp(-eta))
    return float(np.sum(np.log(comb(k, y)) + y * np.log(p) + (k - y) * np.log1p(-p)))


def test_max_draw_log_likelihood_by_direct_formula():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, size=(3, 4))
    theta, b, a = rng.normal(size=(7, 3)), rng.normal(size=(7, 4)), np.exp(rng.normal(size=(7, 4)))
    expected_1pl = max(_direct_log_lik(y, 4, theta[s], b[s]) for s in range(7))
    expected_2pl = max(_direct_log_lik(y, 4, theta[s], b[s], a[s]) for s in range(7))
    assert max_draw_log_likelihood(y, 4, theta, b) == pytest.approx(expected_1pl)
    assert max_draw_log_likelihood(y, 4, theta, b, a=a) == pytest.approx(expected_2pl)
    # a 2PL with every discrimination 1 is the 1PL
    assert max_draw_log_likelihood(y, 4, theta, b, a=np.ones_like(b)) == pytest.approx(expected_1pl)


def test_bic_by_hand():
    assert bic(-100.0, 5, 20) == pytest.approx(5 * np.log(20) + 200)
    row = bic_comparison(-100.0, -95.0, n_models=2, n_items=3)
    # k = 5 and 8, n = 6: ΔBIC = 3 ln 6 − 2·5
    assert row["delta_bic"] == pytest.approx(3 * np.log(6) - 10)
    assert row["selected"] == "2PL" and row["n"] == 6 and (row["k_1pl"], row["k_2pl"]) == (5, 8)
    assert bic_comparison(-100.0, -99.0, 2, 3)["selected"] == "1PL"


def test_correlation_summary():
    full = np.array([0.0, 1.0, 2.0, 3.0])
    row = correlation_summary(full, [full * 2 + 1, np.array([0.0, 2.0, 1.0, 3.0])])
    assert row["pearson"][0] == pytest.approx(1.0) and row["spearman"][1] == pytest.approx(0.8)
    assert row["spearman_min"] == pytest.approx(0.8) and row["spearman_mean"] == pytest.approx(0.9)
    assert row["pearson_min"] == pytest.approx(0.8)


def test_markdown_layout():
    diag = {"max_rhat": 1.014, "min_ess_bulk": 333.7, "divergences": 0}
    record = {"diagnostics_1pl": diag, "diagnostics_2pl": {"max_rhat": 1.06, "min_ess_bulk": 63, "divergences": 983},
              "bic": bic_comparison(-100.0, -99.0, 2, 3),
              "mirt": {"2": diag, "3": {"max_rhat": None, "min_ess_bulk": None, "divergences": 0}}}
    text = markdown(record, "AIME24")
    assert "| AIME24 | 1.01 | 334 | 0 |" in text
    assert "| AIME24 | 1.01 | 334 | 0 | 1.06 | 63 | 983 |" in text
    assert "| AIME24 | 1.01 | 334 | 0 | — | — | 0 |" in text
    assert "Table 7" not in text


def _matrix_file(tmp_path, models=4, items=10):
    y = simulate_counts(np.linspace(-1.5, 1.5, models), np.linspace(-2, 2, items), 8, seed=0)
    path = tmp_path / "tiny" / "response_matrix.csv"
    write_matrix(ResponseMatrix([f"m{j}" for j in range(models)], [f"q{i}" for i in range(items)], y, 8), path)
    return path


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


@pytest.mark.slow
def test_cli_end_to_end_tiny(tmp_path):
    path = _matrix_file(tmp_path)
    out_dir = tmp_path / "out"
    out = _run(path, "--n-trials", 8, "--output-dir", out_dir, "--loo", "--bic", "--mirt", 2,
               "--chains", 2, "--draws", 100, "--tune", 100, "--workers", 2, "--seed", 3)
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads((out_dir / "robustness.json").read_text())
    assert record["benchmark"] == "tiny" and record["models"] == 4 and record["items"] == 10
    for section in ("diagnostics_1pl", "diagnostics_2pl"):
        assert set(record[section]) >= {"max_rhat", "min_ess_bulk", "divergences"}
    loo = record["leave_one_model_out"]
    assert len(loo["pearson"]) == 4 and loo["dropped_models"] == ["m0", "m1", "m2", "m3"]
    assert loo["pearson_min"] > 0.8          # difficulties spread over [-2, 2] survive dropping a model
    assert record["bic"]["n"] == 40 and record["bic"]["k_2pl"] == 24
    assert np.isfinite(record["bic"]["delta_bic"])
    assert set(record["mirt"]) == {"2"}
    assert len(record["input_sha256"]) == 64
    assert "## Table 10" in (out_dir / "robustness.md").read_text()
    assert (out_dir / "loo.csv").read_text().splitlines()[0] == "dropped_model,pearson,spearman"


@pytest.mark.parametrize("extra, fragment", [
    (["--mirt", "1"], "--mirt dimensions must be at least 2"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--target-accept", "1.2"], "--target-accept"),
    (["--n-trials", "2"], "outside [0, 2]"),
])
def test_cli_rejects_before_fitting(tmp_path, extra, fragment):
    path = _matrix_file(tmp_path)
    args = [path, "--output-dir", tmp_path / "out", *extra]
    if "--n-trials" not in extra:
        args += ["--n-trials", 8]
    out = _run(*args)
    assert out.returncode == 2 and not (tmp_path / "out").exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], out.stderr


def test_cli_loo_needs_three_models(tmp_path):
    path = _matrix_file(tmp_path, models=2)
    out = _run(path, "--n-trials", 8, "--output-dir", tmp_path / "out", "--loo")
    assert out.returncode == 2 and "at least 3 models" in out.stderr
