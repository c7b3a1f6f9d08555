"""``fit-suite`` and ``chain --prior hierarchical`` (issue 51): the suite EM under the hierarchical prior (its
difficulties are the exact marginal mode given its hyperparameters; the hyperparameters recover a simulated suite's),
both commands end to end with the prior in their records, and the refusals of the routes that cannot take it."""

from __future__ import annotations

import csv
import json

import numpy as np
from scipy import integrate, optimize
from test_suite_chain import simulate_suite, write_rows

from benchmeasure.suite.hierarchical import fit_items_hierarchical, scale_mode
from benchmeasure.suite.reader import read_suite
from conftest import assert_rejected, run_script


def marginal_mode(counts, trials, sigma_theta, mu, sigma):
    """argmax_b Σ_j log ∫ N(θ; 0, σ_θ²) Π_i Binom(y_ji | T_ji, σ(θ − b_i)) dθ + Σ_i log N(b_i; μ_i, σ_i²), by adaptive
    quadrature and BFGS (independent of the EM's grid)."""
    def objective(b):
        total = 0.0
        for c, t in zip(counts, trials):
            def density(theta, c=c, t=t):
                p = 1 / (1 + np.exp(b - theta))
                return np.exp(-0.5 * (theta / sigma_theta) ** 2 + np.sum(c * np.log(p) + (t - c) * np.log1p(-p)))
            total += np.log(integrate.quad(density, -12, 12, epsabs=1e-14, limit=200)[0])
        return -(total - 0.5 * np.sum(((b - mu) / sigma) ** 2))
    return optimize.minimize(objective, mu.copy(), method="BFGS", options={"gtol": 1e-9}).x


def test_em_difficulties_are_the_marginal_mode_given_its_hyperparameters():
    """Holes and K per cell, two benchmarks: given the hyperparameters the EM settles on, its b are the exact
    marginal MAP (θ integrated out) under θ ~ N(0, σ_θ²), b ~ N(μ_b,k, σ_b,k²)."""
    rng = np.random.default_rng(4)
    theta = rng.normal(0, 2.0, 5)
    b_true = np.r_[rng.normal(-1.0, 1.0, 2), rng.normal(1.0, 1.0, 2)]
    trials = rng.integers(1, 4, (5, 4))
    trials[2, 1] = trials[4, 3] = 0
    counts = rng.binomial(trials, 1 / (1 + np.exp(b_true[None] - theta[:, None])))
    groups = np.array([0, 0, 1, 1])
    b, _, _, hyper = fit_items_hierarchical(counts, trials, np.zeros(4), np.ones(4, bool), groups, tol=1e-10)
    assert hyper.estimated.all() and hyper.sigma_theta > 0 and np.all(hyper.sigma_b > 0)
    expected = marginal_mode(counts, trials, hyper.sigma_theta, hyper.mu_b[groups], hyper.sigma_b[groups])
    np.testing.assert_allclose(b, expected, atol=5e-4)


def test_em_recovers_a_simulated_suites_hyperparameters():
    rng = np.random.default_rng(11)
    theta = rng.normal(0.0, 2.2, 60)
    b = np.r_[rng.normal(-1.5, 1.4, 200), rng.normal(1.0, 0.7, 200)]
    groups = np.repeat([0, 1], 200)
    counts = (rng.random((60, 400)) < 1 / (1 + np.exp(b[None] - theta[:, None]))).astype(int)
    trials = np.ones_like(counts)
    fitted, _, iterations, hyper = fit_items_hierarchical(counts, trials, np.zeros(400), np.ones(400, bool), groups)
    assert iterations < 200
    # the panel's own spread and the items' own moments (what the hyperparameters estimate), shifted to θ's mean
    assert abs(hyper.sigma_theta - theta.std()) < 0.35, (hyper.sigma_theta, theta.std())
    for k in (0, 1):
        mine = b[groups == k] - theta.mean()
        assert abs(hyper.mu_b[k] - mine.mean()) < 0.35, (k, hyper.mu_b, mine.mean())
        assert abs(hyper.sigma_b[k] - mine.std()) < 0.25, (k, hyper.sigma_b, mine.std())
    assert np.corrcoef(fitted, b)[0, 1] > 0.9
    # the chain's fixed calibration: benchmark 0 fixed at its values, benchmark 1 free, gives the same benchmark 1
    start = np.where(groups == 0, fitted, np.nan)
    again, _, _, _ = fit_items_hierarchical(counts, trials, start, groups == 1, groups)
    np.testing.assert_allclose(again[groups == 1], fitted[groups == 1], atol=0.05)
    # the scale update solves σ⁴/h² + nσ² − S = 0
    s = scale_mode(37.0, 10)
    assert abs(s**4 / 9 + 10 * s**2 - 37.0) < 1e-9


def test_chain_under_the_hierarchical_prior_end_to_end(tmp_path):
    paths = simulate_suite(tmp_path, n_models=24, n_items=(60, 60))
    out = tmp_path / "chain"
    result = run_script("chain.py", *paths, "--order", "bench0,bench1", "--anchors", "10,30", "--splits", "2",
                        "--seed", "4", "--output-dir", out, "--quiet", "--prior", "hierarchical", "--blend")
    assert result.returncode == 0, result.stderr
    with open(out / "predictions.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["method"] for r in rows} == {"anchor_accuracy", "concurrent", "fixed", "fixed_correlated", "blended"}
    assert all(float(r["low"]) <= float(r["predicted"]) <= float(r["high"]) for r in rows)
    record = json.loads((out / "chain.json").read_text())
    assert all(0 <= c["lambda"] <= 1 and c["models"] == 18 for c in record["blend"]["choices"])  # the blend's folds
    settings = record["settings"]                                                              # under this prior
    assert settings["prior_name"] == "hierarchical" and "sigma_b" in settings["prior"]
    hyper = settings["hyperparameters"]
    assert set(hyper["per_benchmark"]) == {"bench0", "bench1"} and hyper["sigma_theta"] > 0
    suite = read_suite([str(p) for p in paths])
    with open(out / "difficulty" / "bench1.csv", encoding="utf-8") as handle:
        written = {r["item"]: float(r["b_mean"]) for r in csv.DictReader(handle)}
    b, _, _, _ = fit_items_hierarchical(suite.counts, suite.trials, np.zeros(len(suite.items)),
                                        np.ones(len(suite.items), bool), suite.item_benchmark)
    for item, value in written.items():
        assert abs(value - b[suite.items.index(item)]) < 1e-6
    # the LKJ method integrates b out under N(0, 1): refused in one line, before anything is written
    refused = tmp_path / "refused"
    assert_rejected(run_script("chain.py", *paths, "--lkj-steps", "last", "--prior", "hierarchical",
                               "--output-dir", refused), "--prior hierarchical", "--lkj-steps", "--route joint")
    assert not refused.exists()


def test_fit_suite_under_the_hierarchical_prior_and_its_refusals(tmp_path):
    rng = np.random.default_rng(2)
    theta = rng.normal(0, 2.0, 16)
    rows = [(f"m{j}", f"q{i}", 0, int(rng.random() < 1 / (1 + np.exp(i / 8 - 2 - theta[j]))))
            for j in range(16) for i in range(30) if (j, i) != (3, 7)]
    src = write_rows(tmp_path / "r.csv", ["model", "item_id", "trial", "correct"], rows)
    bench = write_rows(tmp_path / "ib.csv", ["item_id", "benchmark"],
                       [(f"q{i}", "easy" if i < 15 else "hard") for i in range(30)])
    out = tmp_path / "fit"
    result = run_script("fit_suite.py", src, "--item-benchmarks", bench, "--abilities", "correlated-eb",
                        "--prior", "hierarchical", "--output-dir", out)
    assert result.returncode == 0, result.stderr
    settings = json.loads((out / "suite.json").read_text())["settings"]
    assert settings["prior_name"] == "hierarchical" and "121-point grid" in settings["estimator"]
    hyper = settings["hyperparameters"]
    assert set(hyper["per_benchmark"]) == {"easy", "hard"}
    assert hyper["per_benchmark"]["easy"]["mu_b"] < hyper["per_benchmark"]["hard"]["mu_b"]
    suite = read_suite([str(src)], {f"q{i}": "easy" if i < 15 else "hard" for i in range(30)})
    b, _, _, _ = fit_items_hierarchical(suite.counts, suite.trials, np.zeros(30), np.ones(30, bool),
                                        suite.item_benchmark)
    with open(out / "hard" / "difficulty.csv", encoding="utf-8") as handle:
        for r in csv.DictReader(handle):
            assert abs(float(r["b_mean"]) - b[suite.items.index(r["item"])]) < 1e-6
    assert (out / "correlation.csv").exists() and hyper["collapsed"] == []
    # a benchmark of one item cannot estimate its spread: the mode of sigma_b falls towards 0, and the command says so
    solo = write_rows(tmp_path / "solo.csv", ["item_id", "benchmark"],
                      [(f"q{i}", "solo" if i == 0 else "rest") for i in range(30)])
    done = run_script("fit_suite.py", src, "--item-benchmarks", solo, "--prior", "hierarchical", "--output-dir",
                      tmp_path / "solo_fit")
    assert done.returncode == 0, done.stderr
    assert "warning: the hierarchical prior's sigma_b of solo" in done.stderr and "collapsed" in done.stderr
    record = json.loads((tmp_path / "solo_fit" / "suite.json").read_text())["settings"]["hyperparameters"]
    assert [c.split(" ")[2] for c in record["collapsed"]] == ["solo"]
    # the NUTS routes: collapsed integrates b out under N(0, 1); unit scales contradict a learned spread
    for extra, fragments in ((("--route", "collapsed"), ("--route collapsed", "--route joint")),
                             (("--scales", "unit"), ("--scales unit",))):
        target = tmp_path / extra[1]
        assert_rejected(run_script("fit_suite.py", src, "--item-benchmarks", bench, "--abilities", "correlated",
                                   "--prior", "hierarchical", *extra, "--output-dir", target),
                        "--prior hierarchical", *fragments)
        assert not target.exists()


def test_em_converges_where_each_models_posterior_is_narrower_than_the_grid_step(caplog):
    """10 models × 3,000 items: each model's posterior sd of θ (about 1/√(Σ p(1 − p)) ≈ 0.04) is a fifth of the
    grid's step, so E[θ] moves by steps as the panel's location moves and the location's Newton step, taken whole,
    overshot and turned back every iteration (the cycle of MMLU-Pro's 10-category calibration: largest change 0.034
    at the 2,000-iteration cap). Bounded once it turns back, the EM reaches its tolerance within 30 iterations, says
    nothing at the cap, and its fixed point is the marginal mode given the hyperparameters on the grid (each free
    b's score is 0) that recovers the simulated items."""
    from benchmeasure.suite.calibration import sigmoid
    from benchmeasure.suite.chain import single_thread
    from benchmeasure.suite.hierarchical import GRID

    rng = np.random.default_rng(0)
    theta = rng.normal(0.0, 1.0, 10)
    groups = np.repeat([0, 1], 1500)
    b_true = rng.normal(rng.normal(0.5, 0.7, 2)[groups], 1.5)
    counts = (rng.random((10, 3000)) < 1 / (1 + np.exp(b_true[None] - theta[:, None]))).astype(int)
    trials = np.ones_like(counts)
    with caplog.at_level("WARNING"), single_thread():   # one BLAS thread: 2 s here, not 14 (shared cores)
        b, w, iterations, hyper = fit_items_hierarchical(counts, trials, np.zeros(3000), np.ones(3000, bool),
                                                         groups, max_iter=200)
    assert iterations < 30 and "stopped after" not in caplog.text, (iterations, caplog.text)
    s = sigmoid(GRID[:, None] - b[None, :])
    score = ((w.T @ trials) * s - w.T @ counts).sum(axis=0) - (b - hyper.mu_b[groups]) / hyper.sigma_b[groups] ** 2
    assert np.abs(score).max() < 0.05, np.abs(score).max()
    shifted = b_true - theta.mean()
    assert np.corrcoef(b, b_true)[0, 1] > 0.85 and abs(b.mean() - shifted.mean()) < 0.3
