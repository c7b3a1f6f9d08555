"""Suites with holes and K per cell: the reader, the EM calibration against an independent computation, the
Laplace posterior against a grid, and the chain command end to end (through its command line)."""

from __future__ import annotations

import csv
import gzip
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize

from benchmeasure.base.errors import InputError
from benchmeasure.suite.calibration import fit_items
from benchmeasure.suite.predict import correlated_posterior, mixture_prediction, one_ability_nodes
from benchmeasure.suite.reader import read_suite
from conftest import assert_rejected, run_script


def write_rows(path, header, rows):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def simulate_suite(tmp_path, n_models=40, n_items=(120, 120), rho=0.8, holes=0.02, seed=0, gz=True):
    """Long responses of a two-benchmark suite from the correlated 1PL; one file per benchmark."""
    rng = np.random.default_rng(seed)
    cov = np.array([[1.0, rho], [rho, 1.0]]) * 1.5
    theta = rng.multivariate_normal([0.3, -0.2], cov, size=n_models)
    paths = []
    for d, n in enumerate(n_items):
        b = rng.normal(0, 1.5, n)
        rows = []
        for j in range(n_models):
            for i in range(n):
                if rng.random() < holes:
                    continue
                correct = int(rng.random() < 1 / (1 + np.exp(b[i] - theta[j, d])))
                rows.append((f"m{j}", f"b{d}-q{i}", 0, correct))
        suffix = ".csv.gz" if gz else ".csv"
        paths.append(write_rows(tmp_path / f"bench{d}{suffix}", ["model", "item_id", "trial", "correct"], rows))
    return paths


def test_reader_holes_trials_and_benchmarks(tmp_path):
    rows = [("a", "q1", "0", "1", "x"), ("a", "q1", "1", "0", "x"), ("a", "q2", "0", "1", "y"),
            ("b", "q1", "0", "1", "x"), ("b", "q2", "0", "", "y"), ("b", "q3", "0", "0", "y")]
    path = write_rows(tmp_path / "r.csv", ["model", "item_id", "trial", "correct", "benchmark"], rows)
    suite = read_suite([path])
    assert suite.models == ["a", "b"] and suite.items == ["q1", "q2", "q3"] and suite.benchmarks == ["x", "y"]
    assert suite.trials.tolist() == [[2, 1, 0], [1, 0, 1]]      # K per cell; recorded and unrecorded holes
    assert suite.counts.tolist() == [[1, 1, 0], [1, 0, 0]]
    assert suite.absent_cells()["per_model"] == {"a": 1, "b": 1}
    named = write_rows(tmp_path / "gsm.csv.gz", ["model", "item_id", "correct"], [("a", "z1", "1"), ("b", "z1", "0")])
    assert read_suite([path, named]).benchmarks == ["x", "y", "gsm"]


@pytest.mark.parametrize("rows, fragment", [
    ([("a", "q1", "0", "1", "x"), ("b", "q1", "0", "1", "y")], "is in benchmark 'y' here and in 'x'"),
    ([("a", "q1", "0", "1", "x"), ("b", "q1", "0", "", "x")], "model 'b' has no answers at all"),
    ([("a", "q1", "0", "1", "x"), ("a", "q1", "0", "0", "x")], "repeated response"),
    ([("a", "q1", "0", "2", "x")], "expected 0, 1 or empty"),
])
def test_bad_suites_are_one_error_line(tmp_path, rows, fragment):
    path = write_rows(tmp_path / "r.csv", ["model", "item_id", "trial", "correct", "benchmark"], rows)
    out = tmp_path / "out"
    result = run_script("chain.py", path, "--seed", "1", "--output-dir", out, "--splits", "1")
    assert_rejected(result, fragment)
    assert not out.exists()


cells = st.sampled_from(["0", "1", "", "x", " "])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", ""]), st.sampled_from(["q1", "q2", "q3"]),
                          st.sampled_from(["0", "1"]), cells, st.sampled_from(["x", "y"])), min_size=0, max_size=12))
def test_reader_fuzz(tmp_path, rows):
    """Any table is either read with consistent counts (count ≤ trials, every model answered) or refused with
    an InputError — never another exception."""
    path = write_rows(tmp_path / "fuzz.csv", ["model", "item_id", "trial", "correct", "benchmark"], rows)
    try:
        suite = read_suite([path])
    except InputError:
        return
    assert (suite.counts <= suite.trials).all() and (suite.trials.sum(axis=1) > 0).all()
    for _, item, _, _, bench in rows:
        assert bench == suite.benchmarks[suite.item_benchmark[suite.items.index(item)]]
    assert suite.trials.sum() == sum(1 for r in rows if r[3] != "")


def brute_force_marginal_mode(counts, trials, prior_sd):
    """The marginal posterior mode of b by scipy's adaptive quadrature over θ and a quasi-Newton optimizer."""
    def objective(b):
        total = 0.0
        for c, t in zip(counts, trials):
            def density(theta, c=c, t=t):
                p = 1 / (1 + np.exp(b - theta))
                return np.exp(-0.5 * theta**2 + np.sum(c * np.log(p) + (t - c) * np.log1p(-p))) / np.sqrt(2 * np.pi)
            total += np.log(integrate.quad(density, -12, 12, epsabs=1e-13, limit=200)[0])
        return -(total - 0.5 * np.sum(b**2) / prior_sd**2)
    return optimize.minimize(objective, np.zeros(counts.shape[1]), method="BFGS", options={"gtol": 1e-9}).x


def test_masked_calibration_matches_an_independent_computation():
    """Holes (0 trials) and K per cell: EM on the grid gives the same marginal mode as adaptive quadrature."""
    counts = np.array([[1, 2, 0, 1], [0, 1, 1, 0], [2, 0, 0, 1], [1, 3, 1, 0]])
    trials = np.array([[2, 3, 0, 1], [1, 3, 1, 0], [2, 0, 1, 1], [1, 3, 2, 0]])
    b, _, _ = fit_items(counts, trials, np.zeros(4), np.ones(4, bool), prior_sd=1.0, tol=1e-10)
    np.testing.assert_allclose(b, brute_force_marginal_mode(counts, trials, 1.0), atol=2e-4)
    fixed = np.array([True, False, True, False])
    b2, _, _ = fit_items(counts, trials, np.array([0.5, 0.0, -0.3, 0.0]), ~fixed, tol=1e-10)
    assert b2[0] == 0.5 and b2[2] == -0.3


def test_laplace_posterior_matches_a_grid():
    rng = np.random.default_rng(3)
    b = [rng.normal(0, 1, 60), rng.normal(0, 1, 60)]
    counts = [rng.integers(0, 2, (1, 60)), rng.integers(0, 2, (1, 60))]
    trials = [np.ones((1, 60)), np.ones((1, 60))]
    mu, sigma = np.array([0.2, -0.1]), np.array([[1.0, 0.7], [0.7, 1.2]])
    mode, _ = correlated_posterior(counts, trials, b, mu, sigma)
    g = np.linspace(-5, 5, 401)
    t1, t2 = np.meshgrid(g, g, indexing="ij")
    prec = np.linalg.inv(sigma)
    logpost = -0.5 * (prec[0, 0] * (t1 - mu[0]) ** 2 + 2 * prec[0, 1] * (t1 - mu[0]) * (t2 - mu[1])
                      + prec[1, 1] * (t2 - mu[1]) ** 2)
    for d, t in enumerate((t1, t2)):
        z = t[..., None] - b[d]
        logpost += (counts[d][0] * -np.logaddexp(0, -z) + (1 - counts[d][0]) * -np.logaddexp(0, z)).sum(-1)
    w = np.exp(logpost - logpost.max())
    w /= w.sum()
    np.testing.assert_allclose(mode[0], [(w * t1).sum(), (w * t2).sum()], atol=0.03)


def test_mixture_interval_covers_simulated_accuracies():
    """Given the true difficulties, the one-ability predictive interval covers about 90 % of simulated models."""
    rng = np.random.default_rng(5)
    b = rng.normal(0, 1.5, 400)
    theta = rng.normal(0, 1, 400)
    correct = (rng.random((400, 400)) < 1 / (1 + np.exp(b[None] - theta[:, None]))).astype(int)
    anchors, rest = np.arange(0, 400, 16), np.setdiff1d(np.arange(400), np.arange(0, 400, 16))
    nodes, weights = one_ability_nodes(correct[:, anchors], np.ones((400, anchors.size)), b[anchors])
    pred, low, high = mixture_prediction(nodes, weights, b[rest], np.ones((400, rest.size)),
                                         correct[:, anchors].sum(1), np.full(400, 400), 0.9)
    observed = correct.mean(axis=1)
    coverage = np.mean((low <= observed) & (observed <= high))
    assert 0.85 <= coverage <= 0.95 and np.all((low <= pred) & (pred <= high))


def test_chain_command_end_to_end(tmp_path):
    paths = simulate_suite(tmp_path)
    out = tmp_path / "chain"
    result = run_script("chain.py", *paths, "--order", "bench0,bench1", "--anchors", "10,40", "--splits", "2",
                        "--seed", "4", "--output-dir", out, "--quiet", "--blend")
    assert result.returncode == 0, result.stderr
    assert "fixed_correlated" in result.stdout and "coverage" in result.stdout
    with open(out / "predictions.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["split", "step", "benchmark", "model", "method", "n_anchors", "predicted", "low",
                             "high", "observed"]
    assert {r["method"] for r in rows} == {"anchor_accuracy", "concurrent", "fixed", "fixed_correlated", "blended"}
    assert "blended" in result.stdout
    assert {(r["step"], r["benchmark"]) for r in rows} == {("1", "bench0"), ("2", "bench0"), ("2", "bench1")}
    assert all(float(r["low"]) <= float(r["predicted"]) <= float(r["high"]) for r in rows)
    assert len({r["model"] for r in rows if r["split"] == "0"}) == 10                    # 25 % of 40 held out
    with open(out / "summary.csv", encoding="utf-8") as handle:
        summary = {(r["n_anchors"], r["method"]): r for r in csv.DictReader(handle)}
    # with 10 anchors per benchmark, the correlated suite model beats the raw anchor accuracy
    mae = {method: float(summary[("10", method)]["mae_points"])
           for method in ("fixed_correlated", "anchor_accuracy", "blended")}
    assert mae["fixed_correlated"] < mae["anchor_accuracy"]
    assert mae["blended"] < mae["anchor_accuracy"]            # where the 1PL is true, the blend leans on it
    record = json.loads((out / "chain.json").read_text())
    choices = record["blend"]["choices"]
    assert len(choices) == 2 * 3 * 2 and record["blend"]["folds"] == 5   # splits × (step, benchmark) × N
    assert all(0 <= c["lambda"] <= 1 and c["models"] == 30 for c in choices)
    assert np.mean([c["lambda"] for c in choices if c["n_anchors"] == 10]) < 0.5
    by_key = {(r["split"], r["step"], r["benchmark"], r["model"], r["n_anchors"], r["method"]): float(r["predicted"])
              for r in rows}
    for c in choices:          # each blended prediction is λ·raw + (1 − λ)·fixed_correlated with the recorded λ
        for key in [k for k in by_key if k[:3] == (str(c["split"]), str(c["step"]), c["benchmark"])
                    and k[4] == str(c["n_anchors"]) and k[5] == "blended"]:
            raw, irt = by_key[(*key[:5], "anchor_accuracy")], by_key[(*key[:5], "fixed_correlated")]
            assert by_key[key] == pytest.approx(c["lambda"] * raw + (1 - c["lambda"]) * irt, abs=2e-6)
    assert (out / "difficulty" / "bench1.csv").exists() and (out / "chain.json").exists()
    settings = json.loads((out / "chain.json").read_text())["settings"]   # the default prior, named and described
    assert settings["prior_name"] == "paper" and settings["prior"].startswith("theta ~ Normal(0, 1)")
    assert "hyperparameters" not in settings
    again = run_script("chain.py", *paths, "--order", "bench9", "--seed", "4", "--output-dir", tmp_path / "x")
    assert_rejected(again, "--order: benchmark 'bench9'")


def test_fit_suite_from_a_matrix_with_holes(tmp_path):
    """prepare --allow-missing → fit-suite --matrix: per-benchmark difficulties, metrics, correlated abilities;
    a hole gives the same fit as leaving the cell's answer out of the data (the masked likelihood)."""
    rows = []
    rng = np.random.default_rng(2)
    for j in range(12):
        for i in range(30):
            if (j, i) in {(0, 3), (5, 17)}:
                continue
            rows.append((f"m{j}", f"q{i}", 0, int(rng.random() < 1 / (1 + np.exp(i / 10 - 1.5 - j / 6)))))
    src = write_rows(tmp_path / "r.csv", ["model", "item_id", "trial", "correct"], rows)
    matrix = tmp_path / "m.csv"
    assert run_script("prepare_response_matrix.py", src, "--n-trials", 1, "--output", matrix,
                      "--allow-missing").returncode == 0
    bench = write_rows(tmp_path / "ib.csv", ["item_id", "benchmark"],
                       [(f"q{i}", "easy" if i < 15 else "hard") for i in range(30)])
    out = tmp_path / "fit"
    result = run_script("fit_suite.py", "--matrix", matrix, "--n-trials", 1, "--item-benchmarks", bench,
                        "--abilities", "correlated-eb", "--output-dir", out)
    assert result.returncode == 0, result.stderr
    assert "easy: 15 items, DDM" in result.stdout and "2 absent cells" in result.stderr
    with open(out / "hard" / "difficulty.csv", encoding="utf-8") as handle:
        hard = list(csv.DictReader(handle))
    direct = read_suite([src])
    b, _, _ = fit_items(direct.counts, direct.trials, np.zeros(30), np.ones(30, bool), prior_sd=3.0)
    by_item = dict(zip(direct.items, b))
    np.testing.assert_allclose([float(r["b_mean"]) for r in hard], [by_item[r["item"]] for r in hard], atol=1e-3)
    assert (out / "correlation.csv").exists()
    assert json.loads((out / "suite.json").read_text())["settings"]["prior_name"] == "paper"
    page = run_script("explore_benchmarks.py", out, "--output", tmp_path / "explorer.html")
    assert page.returncode == 0 and "2 benchmarks" in page.stdout + page.stderr, page.stderr  # every benchmark
    assert_rejected(run_script("fit_suite.py", src, "--matrix", matrix, "--output-dir", tmp_path / "y"),
                    "one of the two")


def test_fit_command_with_holes_matches_quadrature(tmp_path):
    """fit --allow-missing (NUTS, joint route, masked likelihood) on a matrix with an absent cell and K per cell:
    the posterior means of b agree with brute-force quadrature; without the option the matrix is refused."""
    from benchmeasure.core.matrix_holes import write_counts_and_trials

    counts = np.array([[2, 1, 0], [0, 3, 1]])
    trials = np.array([[3, 1, 0], [2, 3, 2]])
    matrix = tmp_path / "m.csv"
    write_counts_and_trials(["a", "b"], ["q0", "q1", "q2"], counts, trials, matrix)
    assert_rejected(run_script("fit_irt.py", matrix, "--n-trials", 3, "--output-dir", tmp_path / "no"), "empty cell")
    out = tmp_path / "fit"
    result = run_script("fit_irt.py", matrix, "--n-trials", 3, "--allow-missing", "--chains", 2, "--tune", 500,
                        "--draws", 1500, "--seed", 2, "--output-dir", out, "--route", "joint")
    assert result.returncode == 0, result.stderr
    assert "1 absent cells" in result.stderr and "joint route" in result.stderr
    with open(out / "difficulty.csv", encoding="utf-8") as handle:
        b_mean = [float(r["b_mean"]) for r in csv.DictReader(handle)]
    g = np.linspace(-5, 5, 17)
    grids = np.meshgrid(g, g, g, g, g, indexing="ij", sparse=True)
    logp = sum(-0.5 * x**2 for x in grids)
    for j in range(2):
        for i in range(3):
            eta = grids[j] - grids[2 + i]
            logp = logp + counts[j, i] * eta - trials[j, i] * np.logaddexp(0, eta)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    np.testing.assert_allclose(b_mean, [float((w * x).sum()) for x in grids[2:]], atol=0.08)


@settings(max_examples=80, deadline=None)
@given(st.integers(4, 40), st.floats(0.0, 3.0), st.floats(0.0, 1.0), st.integers(0, 10_000))
def test_blend_weight_minimizes_the_cross_validated_error(m, irt_bias, shared, seed):
    """λ* is the minimum of the calibration models' squared error of λ·raw + (1 − λ)·IRT (no λ on a grid does
    better on them), and the weight used lies between it and raw (λ = 1)."""
    from benchmeasure.suite.chain_blend import blend_weight, cv_minimum

    rng = np.random.default_rng(seed)
    common = rng.normal(size=m)
    e_raw = shared * common + rng.normal(size=m)
    e_irt = shared * common + 0.3 * rng.normal(size=m) + irt_bias * rng.normal(size=m)
    lam, _ = cv_minimum(e_raw, e_irt)
    best = np.sum((lam * e_raw + (1 - lam) * e_irt) ** 2)
    assert all(best <= np.sum((g * e_raw + (1 - g) * e_irt) ** 2) + 1e-9 for g in np.linspace(-1, 2, 301))
    used = blend_weight(e_raw, e_irt)
    assert min(max(lam, 0.0), 1.0) - 1e-12 <= used <= 1.0


def test_blend_weight_follows_clear_evidence_and_ignores_noise():
    """An IRT prediction much better than raw on the calibration models gets λ near its minimum (near 0); one whose
    errors are raw's plus noise gets λ = 1; with fewer than 4 calibration models the prediction is raw's."""
    from benchmeasure.suite.chain_blend import blend_weight, blended_prediction
    from benchmeasure.suite.predict import anchor_accuracy_interval

    rng = np.random.default_rng(0)
    e_raw = rng.normal(0, 0.04, 16)
    assert blend_weight(e_raw, 0.1 * e_raw + rng.normal(0, 0.005, 16)) < 0.1
    assert blend_weight(e_raw, e_raw + rng.normal(0, 0.01, 16)) == 1.0
    few = np.stack([e_raw[:3], e_raw[:3] / 10, np.full(3, 0.04)])
    args = (np.array([30, 70]), np.array([100, 100]), np.array([900, 900]))
    (pred, low, high), chosen = blended_prediction(*args, np.array([0.5, 0.5]), few, 0.9)
    np.testing.assert_array_equal(np.stack([pred, low, high]), np.stack(anchor_accuracy_interval(*args, 0.9)))
    assert chosen == {"lambda": 1.0, "models": 3, "scale": None}


def test_blended_interval_covers_when_the_irt_prediction_is_biased():
    """A biased IRT prediction (the link wrong for the panel) gets λ near 1, and the interval from the calibration
    models' residuals covers about 90 % of new models' accuracies."""
    from benchmeasure.suite.chain_blend import blended_prediction, raw_and_sd

    rng = np.random.default_rng(11)
    n, total, covered, lams = 100, 2000, [], []
    for _ in range(300):
        truth = rng.uniform(0.2, 0.9, 26)
        correct = rng.binomial(n, truth)
        raw, s = raw_and_sd(correct, np.full(26, n), np.full(26, total))
        irt = truth + 0.15 * np.sign(truth - 0.55) + 0.01 * rng.normal(size=26)   # pushed away from the middle
        errors = np.stack([raw[:20] - truth[:20], irt[:20] - truth[:20], s[:20]])
        (pred, low, high), chosen = blended_prediction(correct[20:], np.full(6, n), np.full(6, total), irt[20:],
                                                       errors, 0.9)
        covered.extend((low <= truth[20:]) & (truth[20:] <= high))
        assert np.all((low <= pred) & (pred <= high))
        lams.append(chosen["lambda"])
    assert np.mean(lams) > 0.85 and 0.85 <= np.mean(covered) <= 0.95, (np.mean(lams), np.mean(covered))
