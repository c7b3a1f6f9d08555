"""Tests of the IRT robustness analyses (Tables 6-10) and scripts/irt_robustness.py."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import comb

from benchmeasure.analyses.robustness import bic, bic_comparison, correlation_summary, markdown, max_draw_log_likelihood
from benchmeasure.core.matrix import ResponseMatrix, write_matrix
from benchmeasure.irt.simulate import simulate_counts

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
    diag = {"max_r_hat": 1.014, "min_ess_bulk": 333.7, "divergences": 0}
    record = {"diagnostics_1pl": diag, "diagnostics_2pl": {"max_r_hat": 1.06, "min_ess_bulk": 63, "divergences": 983},
              "bic": bic_comparison(-100.0, -99.0, 2, 3),
              "mirt": {"2": diag, "3": {"max_r_hat": None, "min_ess_bulk": None, "divergences": 0}}}
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
        assert set(record[section]) >= {"max_r_hat", "min_ess_bulk", "divergences"}
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
    (["--mirt", "1"], "--mirt: 1 is outside the allowed range [2, "),
    (["--workers", "0"], "--workers: 0 is outside the allowed range [1, "),
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


# --- Table 6 from an existing fit (--fit-dir) -----------------------------------------------------------------


def _fit(matrix, out_dir, *extra):
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "fit_irt.py"), str(matrix), "--n-trials", "8",
                           "--output-dir", str(out_dir), "--quiet", *map(str, extra)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out_dir


@pytest.fixture(scope="module")
def map_fit(tmp_path_factory):
    """A real fit_irt.py output folder (--method map: seconds) and its matrix, shared by the rejection tests."""
    root = tmp_path_factory.mktemp("map_fit")
    path = _matrix_file(root)
    return path, _fit(path, root / "map_fit", "--method", "map")


def _other_matrix(tmp_path):
    other = tmp_path / "other" / "response_matrix.csv"
    other.parent.mkdir()
    text = _matrix_file(tmp_path).read_text()
    other.write_text(text.replace("m0,", "m0x,", 1))
    return other


@pytest.mark.parametrize("args, fragment", [
    (lambda p, f, t: [_other_matrix(t), "--n-trials", 8, "--fit-dir", f], "is not"),
    (lambda p, f, t: [p, "--n-trials", 9, "--fit-dir", f], "the fit used n_trials 8, this run --n-trials 9"),
    (lambda p, f, t: [p, "--n-trials", 8, "--fit-dir", f, "--guessing", 0.25],
     "the fit used --guessing 0.0, this run --guessing 0.25"),
    (lambda p, f, t: [p, "--n-trials", 8, "--fit-dir", f], "a --method map fit has no MCMC diagnostics"),
    (lambda p, f, t: [p, "--n-trials", 8, "--fit-dir", t / "nope"], "no such folder"),
    (lambda p, f, t: [p, "--n-trials", 8, "--fit-dir", p.parent], "no diagnostics.json"),
    (lambda p, f, t: [p, "--n-trials", 8, "--guessing", 0.1, "--guessing-csv", p], "not both"),
    (lambda p, f, t: [p, "--n-trials", 8, "--guessing-csv", t / "g.csv"], "no guessing value for matrix item 'q1'"),
])
def test_cli_fit_dir_and_guessing_csv_rejected(map_fit, tmp_path, args, fragment):
    path, fit_dir = map_fit
    (tmp_path / "g.csv").write_text("item_id,guessing\nq0,0.25\n")
    out = _run(*args(path, fit_dir, tmp_path), "--output-dir", tmp_path / "out")
    assert out.returncode == 2 and out.stdout == "" and not (tmp_path / "out").exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], out.stderr


def _sampled(stderr: str) -> bool:
    """Whether a command's progress shows a 1PL fit or refit (a warning that the saved short fit breaks the
    convergence rules may advise a refit; it samples nothing)."""
    return any("1PL fit" in line or "refit" in line for line in stderr.splitlines() if not line.startswith("warning:"))


@pytest.mark.slow
def test_cli_table6_and_bic_from_a_saved_fit(tmp_path):
    from benchmeasure.analyses.posterior_metrics import read_posterior_b
    from benchmeasure.analyses.robustness import read_fit_dir
    from benchmeasure.core.matrix import read_matrix

    path = _matrix_file(tmp_path)
    fit_dir = _fit(path, tmp_path / "fit", "--chains", 2, "--draws", 100, "--tune", 100, "--seed", 1,
                   "--save-posterior")
    saved = json.loads((fit_dir / "diagnostics.json").read_text())

    only6 = _run(path, "--n-trials", 8, "--output-dir", tmp_path / "t6", "--fit-dir", fit_dir)
    assert only6.returncode == 0, only6.stderr[-2000:]
    assert not _sampled(only6.stderr), only6.stderr
    record = json.loads((tmp_path / "t6" / "robustness.json").read_text())
    d = record["diagnostics_1pl"]
    assert (d["max_r_hat"], d["min_ess_bulk"], d["divergences"]) == (saved["max_r_hat"], saved["min_ess_bulk"],
                                                                     saved["divergences"])
    assert d["source"] == str(fit_dir / "diagnostics.json") and d["fit_settings"]["seed"] == 1
    assert f"| tiny | {saved['max_r_hat']:.2f} | {saved['min_ess_bulk']:.0f} | 0 |" in only6.stdout

    bic = _run(path, "--n-trials", 8, "--output-dir", tmp_path / "t8", "--fit-dir", fit_dir, "--bic",
               "--chains", 2, "--draws", 100, "--tune", 100)
    assert bic.returncode == 0, bic.stderr[-2000:]
    assert not _sampled(bic.stderr), bic.stderr
    row = json.loads((tmp_path / "t8" / "robustness.json").read_text())["bic"]
    assert row["draws_1pl"] == str(fit_dir / "posterior.zarr")
    _, theta = read_posterior_b(fit_dir / "posterior.zarr", "theta")
    _, b = read_posterior_b(fit_dir / "posterior.zarr", "b")
    matrix = read_matrix(path, 8)
    assert row["log_lik_1pl"] == pytest.approx(max_draw_log_likelihood(matrix.counts, 8, theta, b), rel=1e-12)

    # a posterior that is missing, or left over from an earlier fit, is not used: the BIC would refit
    gone = tmp_path / "gone"
    gone.mkdir()
    for name in ("diagnostics.json", "difficulty.csv"):
        (gone / name).write_bytes((fit_dir / name).read_bytes())
    assert read_fit_dir(gone, path, matrix, 0.0).posterior is None
    stale = dict(saved, outputs=["difficulty.csv", "ability.csv", "diagnostics.json"])
    (fit_dir / "diagnostics.json").write_text(json.dumps(stale))
    left_over = read_fit_dir(fit_dir, path, matrix, 0.0)
    assert left_over.posterior is None and "earlier fit" in left_over.posterior_note
