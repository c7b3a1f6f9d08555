"""The multidimensional 1PL with an LKJ prior (suite/mirt.py, fit-suite --abilities correlated).

* one benchmark, unit scales: its log density is the paper's 1PL's (irt/model.py, direct coordinates) at any point,
  up to the constant log C(K, Y) the paper's kernel also leaves out — the model reduces to the paper's exactly;
* holes: an absent cell adds nothing (the density of a matrix with a hole equals the density of the same matrix
  with that cell's counts changed);
* a simulated suite with a known correlation, through the command line: the 94 % interval of the correlation
  covers the truth and excludes 0, the output files and suite.json carry it.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from tests.conftest import assert_rejected, run_script

pytest.importorskip("nutpie")


def write_rows(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _logp(model, point):
    return float(model.compile_logp(jacobian=False, mode="FAST_COMPILE")(point))


def test_one_benchmark_is_the_papers_model():
    from benchmeasure.irt.model import build_model as paper_model
    from benchmeasure.suite.mirt import build_model

    rng = np.random.default_rng(0)
    counts = rng.integers(0, 4, size=(5, 7))
    trials = np.full((5, 7), 3)
    ours = build_model(counts, trials, np.zeros(7, int), 1, scales="unit")
    paper = paper_model(counts, 3, 0.0, parametrization="direct", kernel="pytensor")
    differences = []
    for _ in range(3):
        theta, b = rng.normal(size=5), rng.normal(size=7)
        mine = _logp(ours, {"theta": theta[:, None], "b": b})
        theirs = _logp(paper, {"theta": theta, "b": b})
        differences.append(mine - theirs)
    # the same density up to one constant (the binomial coefficients, left out by both or neither)
    np.testing.assert_allclose(differences, differences[0], atol=1e-8)


def test_absent_cells_add_nothing():
    from benchmeasure.suite.mirt import build_model

    rng = np.random.default_rng(1)
    counts = rng.integers(0, 3, size=(4, 6))
    trials = np.full((4, 6), 2)
    trials[1, 2] = trials[3, 5] = 0
    bench = np.array([0, 0, 0, 1, 1, 1])
    other = counts.copy()
    other[1, 2], other[3, 5] = 2 - counts[1, 2], 1
    a = build_model(counts, trials, bench, 2)
    c = build_model(other, trials, bench, 2)
    point = {k: rng.normal(size=np.shape(v)) for k, v in a.initial_point().items()}
    assert _logp(a, point) == pytest.approx(_logp(c, point), abs=1e-9)
    full = build_model(counts, np.full((4, 6), 2), bench, 2)
    assert _logp(full, point) != pytest.approx(_logp(a, point), abs=1e-6)


def test_correlation_posterior_covers_the_truth(tmp_path):
    rng = np.random.default_rng(7)
    models, per, truth = 50, 30, 0.7
    theta = rng.multivariate_normal([0, 0], [[1, truth], [truth, 1]], size=models)
    b = rng.normal(size=2 * per)
    rows = []
    for j in range(models):
        for i in range(2 * per):
            if rng.random() < 0.1:  # holes
                continue
            p = 1 / (1 + np.exp(-(theta[j, i // per] - b[i])))
            for t in range(2):
                rows.append((f"m{j}", f"q{i}", t, int(rng.random() < p), "x" if i < per else "y"))
    src = write_rows(tmp_path / "r.csv", ["model", "item_id", "trial", "correct", "benchmark"], rows)
    out = tmp_path / "fit"
    result = run_script("fit_suite.py", src, "--abilities", "correlated", "--chains", 2, "--tune", 300,
                        "--draws", 300, "--seed", 3, "--target-accept", 0.92, "--output-dir", out)
    assert result.returncode == 0, result.stderr
    with open(out / "correlation_pairs.csv", encoding="utf-8") as handle:
        (pair,) = list(csv.DictReader(handle))
    low, high = float(pair["low"]), float(pair["high"])
    assert low < truth < high and low > 0.0, pair
    assert "correlation x ~ y:" in result.stdout and "multidimensional 1PL: done" in result.stderr
    record = json.loads((out / "suite.json").read_text())
    posterior = record["correlated_posterior"]
    assert posterior["divergences"] == 0 and posterior["max_r_hat"] < 1.05
    assert "LKJ(2)" in posterior["settings"]["prior"] and "mu_k ~ Normal(0, 3^2)" in posterior["settings"]["prior"]
    assert posterior["settings"]["target_accept"] == 0.92 and posterior["settings"]["means"] == "integrated"
    assert posterior["route"] == "collapsed" and posterior["quadrature"]["max_abs_log_marginal_error"] < 1e-8
    assert sorted(p.name for p in out.iterdir()) == ["ability.csv", "correlation.csv", "correlation_pairs.csv",
                                                     "metrics.csv", "suite.json", "x", "y"]
    with open(out / "ability.csv", encoding="utf-8") as handle:
        abilities = list(csv.DictReader(handle))
    estimate = np.array([[float(r["theta_x"]), float(r["theta_y"])] for r in abilities])
    order = np.argsort([int(r["model"][1:]) for r in abilities])
    assert np.corrcoef(estimate[order, 0], theta[:, 0])[0, 1] > 0.8


def test_bad_nuts_options_rejected(tmp_path):
    src = write_rows(tmp_path / "r.csv", ["model", "item_id", "correct"], [("m0", "q0", 1), ("m1", "q0", 0)])
    assert_rejected(run_script("fit_suite.py", src, "--abilities", "correlated", "--eta", "0",
                               "--output-dir", tmp_path / "o"), "--eta")
    assert_rejected(run_script("fit_suite.py", src, "--abilities", "correlated", "--chains", "1",
                               "--output-dir", tmp_path / "o"), "--chains")
    assert_rejected(run_script("fit_suite.py", src, "--abilities", "correlated", "--target-accept", "1",
                               "--output-dir", tmp_path / "o"), "--target-accept")


def test_strict_says_in_the_exit_status_that_the_posterior_did_not_converge(tmp_path):
    """--strict: a correlated posterior that misses the rule (30 draws: bulk ESS far below 400) exits 3 after
    writing its outputs; without --strict the same run exits 0 with the warning."""
    rng = np.random.default_rng(3)
    rows = [(f"m{j}", f"q{i}", 0, int(rng.random() < 0.5), "x" if i < 6 else "y") for j in range(8) for i in range(12)]
    src = write_rows(tmp_path / "r.csv", ["model", "item_id", "trial", "correct", "benchmark"], rows)
    common = ("--abilities", "correlated", "--chains", 2, "--tune", 30, "--draws", 30, "--quiet")
    strict = run_script("fit_suite.py", src, *common, "--strict", "--output-dir", tmp_path / "strict")
    assert strict.returncode == 3, strict.stderr
    assert strict.stderr.strip().splitlines()[-1].startswith("error: --strict:") and "Traceback" not in strict.stderr
    assert (tmp_path / "strict" / "suite.json").is_file()
    plain = run_script("fit_suite.py", src, *common, "--output-dir", tmp_path / "plain")
    assert plain.returncode == 0 and "warning:" in plain.stderr


def test_hierarchical_prior_gives_each_benchmark_its_own_spread_of_b():
    """fit-suite --prior hierarchical (joint route): b_i ~ Normal(0, sigma_b[k(i)]), sigma_b_k ~ HalfNormal(3). Moving
    only sigma_b changes the log density (no Jacobians) by exactly those two priors' terms: the right benchmark's
    spread meets each item."""
    from scipy import stats

    from benchmeasure.suite.mirt import build_model

    rng = np.random.default_rng(2)
    counts = rng.integers(0, 3, size=(4, 6))
    bench = np.array([0, 0, 1, 1, 1, 0])
    model = build_model(counts, np.full((4, 6), 2), bench, 2, prior="hierarchical", scale_sd=3.0)
    point = {k: rng.normal(size=np.shape(v)) for k, v in model.initial_point().items()}
    b = point["b"]
    moved = dict(point, sigma_b_log__=point["sigma_b_log__"] + np.array([0.4, -0.7]))
    expected = 0.0
    for sign, p in ((1, moved), (-1, point)):
        sigma = np.exp(p["sigma_b_log__"])
        expected += sign * (stats.norm.logpdf(b, 0, sigma[bench]).sum() + stats.halfnorm.logpdf(sigma, scale=3).sum())
    assert _logp(model, moved) - _logp(model, point) == pytest.approx(expected, abs=1e-9)
