"""The collapsed route of the LKJ model (suite/mirt_collapsed.py, fit-suite --abilities correlated, the default).

* its log density at any (θ, μ, s, R) equals the joint model's (suite/mirt.py) with every b integrated out by
  SciPy's adaptive quadrature, on a tiny suite with holes and K from 1 to 3 per cell;
* one benchmark with unit scales: it is the paper's collapsed 1PL (irt/model.py build_collapsed_model);
* both routes sample the same posterior on a small simulated suite (correlation, abilities, difficulties within
  Monte Carlo error);
* bad input stays one error line.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate

from tests.conftest import assert_rejected, run_script

pytest.importorskip("nutpie")


def _logp_fn(model):
    # PyTensor's Python linker (FAST_COMPILE): the quadrature below calls the joint density some 4,000 times per
    # case, about 3 ms a call against 0.3 ms on PyTensor's Numba backend, but that backend first compiles every graph,
    # and on a fresh machine (CI: an empty PyTensor compile folder) that costs more than the calls save: this file
    # took 175 CPU-s with mode="NUMBA" and 117 with FAST_COMPILE, each from an empty compile folder (shared 2-core
    # machine, 2026-12-07; with a warm folder NUMBA is the faster)
    return model.compile_logp(jacobian=False, mode="FAST_COMPILE")


def _tiny_suite():
    counts = np.array([[1, 0, 2, 0, 1], [0, 1, 3, 1, 0], [1, 1, 0, 0, 1], [0, 0, 1, 1, 1]])
    trials = np.array([[1, 1, 3, 2, 1], [1, 2, 3, 1, 0], [1, 1, 2, 0, 1], [0, 1, 1, 2, 1]])
    return counts, trials, np.array([0, 0, 1, 1, 1])


@pytest.mark.parametrize("scales", ["half-normal", "unit"])
def test_collapsed_density_is_the_joint_with_b_integrated_out(scales):
    from benchmeasure.suite.mirt import build_model
    from benchmeasure.suite.mirt_collapsed import build_collapsed_model

    counts, trials, bench = _tiny_suite()
    joint = build_model(counts, trials, bench, 2, scales=scales)
    collapsed, _ = build_collapsed_model(counts, trials, bench, 2, scales=scales)
    joint_logp, collapsed_logp = _logp_fn(joint), _logp_fn(collapsed)
    rng = np.random.default_rng(4)
    for _ in range(2):
        point = {k: rng.normal(scale=0.8, size=np.shape(v)) for k, v in collapsed.initial_point().items()}
        base = dict(point, b=np.zeros(counts.shape[1]))
        at_zero = float(joint_logp(base))
        total = at_zero
        for i in range(counts.shape[1]):  # the joint density factorizes over the b_i: one integral each
            def f(x, i=i, point=point, at_zero=at_zero):
                b = np.zeros(counts.shape[1])
                b[i] = x
                return np.exp(float(joint_logp(dict(point, b=b))) - at_zero)

            value, _ = integrate.quad(f, -25.0, 25.0, epsabs=0.0, epsrel=1e-12, limit=200)
            total += np.log(value)
        assert float(collapsed_logp(point)) == pytest.approx(total, abs=1e-9)


def test_one_benchmark_is_the_papers_collapsed_1pl():
    from benchmeasure.irt.model import _householder
    from benchmeasure.irt.model import build_collapsed_model as paper_collapsed
    from benchmeasure.suite.mirt_collapsed import build_collapsed_model

    rng = np.random.default_rng(2)
    counts = rng.integers(0, 3, size=(6, 9))
    trials = np.full((6, 9), 2)
    trials[0, 3] = trials[4, 7] = 0
    counts[trials == 0] = 0
    ours, _ = build_collapsed_model(counts, trials, np.zeros(9, int), 1, scales="unit")
    paper, _ = paper_collapsed(counts, 2, 0.0, trials=trials)
    v = _householder(6)
    for _ in range(3):
        z = rng.normal(size=6)
        theta = z - 2.0 * v * (z @ v)
        mine = float(_logp_fn(ours)({"theta": theta[:, None]}))
        theirs = float(_logp_fn(paper)({"theta_z": z}))
        assert mine == pytest.approx(theirs, abs=1e-9)


@pytest.mark.slow  # two NUTS fits (about 1 min on 2 loaded cores)
def test_routes_sample_the_same_posterior():
    from benchmeasure.suite.mirt import fit_correlated

    rng = np.random.default_rng(11)
    models, per = 24, 8
    theta = rng.multivariate_normal([0.5, -0.5], [[1, 0.6], [0.6, 1]], size=models)
    bench = np.repeat([0, 1], per)
    b = rng.normal(size=2 * per)
    trials = np.where(rng.random((models, 2 * per)) < 0.15, 0, rng.integers(1, 3, size=(models, 2 * per)))
    counts = rng.binomial(trials, 1 / (1 + np.exp(-(theta[:, bench] - b))))
    # the default (collapsed, the means integrated out and drawn afterwards) against the model as written (joint
    # NUTS on everything, the means sampled)
    fits = {route: fit_correlated(counts, trials, bench, ["x", "y"], chains=2, tune=400, draws=500, seed=5,
                                  route=route, means="integrated" if route == "collapsed" else "sampled")
            for route in ("collapsed", "joint")}
    c, j = fits["collapsed"], fits["joint"]
    assert c.diagnostics["route"] == "collapsed" and c.diagnostics["quadrature"]["max_abs_log_marginal_error"] < 1e-8
    assert c.settings["means"] == "integrated" and j.settings["means"] == "sampled"
    assert c.settings["parametrization"] == "partial" and j.settings["parametrization"] == "centred"
    from benchmeasure.irt.diagnostics import summarize_draws

    mu = [summarize_draws(np.asarray(f.posterior["posterior"]["mu"].values, dtype=float)) for f in (c, j)]
    se = np.sqrt(mu[0]["sd"] ** 2 / mu[0]["ess_bulk"] + mu[1]["sd"] ** 2 / mu[1]["ess_bulk"])
    assert np.all(np.abs(mu[0]["mean"] - mu[1]["mean"]) < 4.5 * se)
    assert np.mean(mu[0]["sd"]) / np.mean(mu[1]["sd"]) == pytest.approx(1.0, abs=0.1)
    for name in ("theta", "b"):
        a, o = getattr(c, name), getattr(j, name)
        se = np.sqrt(a["sd"] ** 2 / a["ess_bulk"] + o["sd"] ** 2 / o["ess_bulk"])
        assert np.all(np.abs(a["mean"] - o["mean"]) < 4.5 * se), name
        assert np.mean(a["sd"]) / np.mean(o["sd"]) == pytest.approx(1.0, abs=0.08), name
    ca, co = c.correlation, j.correlation
    se = np.sqrt(ca["sd"][0, 1] ** 2 / ca["ess_bulk"][0, 1] + co["sd"][0, 1] ** 2 / co["ess_bulk"][0, 1])
    assert abs(ca["mean"][0, 1] - co["mean"][0, 1]) < 4.5 * se


def test_route_option(tmp_path):
    src = tmp_path / "r.csv"
    src.write_text("model,item_id,correct\nm0,q0,1\nm1,q0,0\n", encoding="utf-8")
    assert_rejected(run_script("fit_suite.py", src, "--abilities", "correlated", "--route", "both",
                               "--output-dir", tmp_path / "o"), "--route")
    assert_rejected(run_script("fit_suite.py", src, "--abilities", "correlated", "--coordinates", "whitened",
                               "--output-dir", tmp_path / "o"), "--coordinates")


@pytest.mark.slow  # one NUTS fit inside the chain (compilation about 40 s)
def test_chain_lkj_method(tmp_path):
    """The chain's lkj_correlated method at the last step: rows beside the EB ones, the comparison table, the
    fits' convergence in chain.json; it beats the raw anchor accuracy at 10 anchors, as the EB method does."""
    import csv
    import json

    from tests.test_suite_chain import simulate_suite

    paths = simulate_suite(tmp_path, n_models=32, n_items=(60, 60))
    out = tmp_path / "chain"
    result = run_script("chain.py", *paths, "--order", "bench0,bench1", "--anchors", "10", "--splits", "1",
                        "--seed", "4", "--lkj-steps", "last", "--lkj-draws", "150", "--output-dir", out, "--quiet")
    assert result.returncode == 0, result.stderr
    assert "at the steps where lkj_correlated ran (2)" in result.stdout
    with open(out / "predictions.csv", encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if r["method"] == "lkj_correlated"]
    assert {(r["step"], r["benchmark"]) for r in rows} == {("2", "bench0"), ("2", "bench1")}
    assert len(rows) == 2 * 8 and all(float(r["low"]) <= float(r["predicted"]) <= float(r["high"]) for r in rows)
    lkj = json.loads((out / "chain.json").read_text())["lkj"]
    assert len(lkj["fits"]) == 1 and all(f["divergences"] == 0 for f in lkj["fits"])
    mae = {s["method"]: s["mae_points"] for s in lkj["summary_at_lkj_steps"]}
    assert mae["lkj_correlated"] < mae["anchor_accuracy"]
    assert_rejected(run_script("chain.py", *paths, "--anchors", "10", "--lkj-steps", "3",
                               "--output-dir", tmp_path / "o"),
                    "--lkj-steps: step 3")
    assert_rejected(run_script("chain.py", *paths, "--anchors", "10", "--lkj-steps", "x",
                               "--output-dir", tmp_path / "o"),
                    "--lkj-steps")


def test_theta_density_with_the_means_integrated_out_is_the_gaussian_marginal():
    """θ's density given Σ with μ ~ N(0, τ² I) integrated out (suite/mirt.py theta_marginal_logp) equals the
    (M·B)-dimensional Gaussian vec θ ~ N(0, I ⊗ Σ + τ² 11ᵀ ⊗ I), computed by SciPy."""
    import pytensor
    import pytensor.tensor as pt
    from scipy import stats

    from benchmeasure.suite.prior import theta_marginal_logp

    rng = np.random.default_rng(4)
    theta, chol = pt.dmatrix("theta"), pt.dmatrix("chol")
    for models, benchmarks, tau in ((5, 3, 3.0), (2, 2, 0.7), (7, 4, 1.0)):
        a = rng.normal(size=(benchmarks, benchmarks))
        cov = a @ a.T + 0.3 * np.eye(benchmarks)
        f = pytensor.function([theta, chol], theta_marginal_logp(theta, chol, tau), mode="FAST_COMPILE")
        big = np.kron(np.eye(models), cov) + tau ** 2 * np.kron(np.ones((models, models)), np.eye(benchmarks))
        for _ in range(3):
            point = rng.normal(size=(models, benchmarks)) * 2.0 + rng.normal()
            expected = stats.multivariate_normal(np.zeros(models * benchmarks), big).logpdf(point.reshape(-1))
            assert float(f(point, np.linalg.cholesky(cov))) == pytest.approx(expected, abs=1e-9)


def test_means_are_drawn_from_their_exact_conditional():
    """draw_means: μ | θ, Σ ~ N(V M Σ⁻¹ θ̄, V), V = (M Σ⁻¹ + I/τ²)⁻¹ — sample mean and covariance of 80,000 draws
    within their Monte Carlo error of that Gaussian; a seed gives the same draws."""
    from benchmeasure.suite.mirt import draw_means

    rng = np.random.default_rng(5)
    models, benchmarks, tau = 6, 3, 3.0
    a = rng.normal(size=(benchmarks, benchmarks))
    cov = a @ a.T + 0.5 * np.eye(benchmarks)
    sd = np.sqrt(np.diag(cov))
    corr = cov / np.outer(sd, sd)
    theta = rng.normal(size=(models, benchmarks)) + 1.0
    shape = (4, 20000)
    args = (np.broadcast_to(theta, shape + theta.shape), np.broadcast_to(corr, shape + corr.shape),
            np.broadcast_to(sd, shape + sd.shape), tau)
    draws = draw_means(*args, seed=3).reshape(-1, benchmarks)
    v = np.linalg.inv(models * np.linalg.inv(cov) + np.eye(benchmarks) / tau ** 2)
    m = v @ (models * np.linalg.solve(cov, theta.mean(axis=0)))
    n = draws.shape[0]
    assert np.all(np.abs(draws.mean(axis=0) - m) < 4.5 * np.sqrt(np.diag(v) / n))
    assert np.allclose(np.cov(draws.T), v, atol=4.5 * np.sqrt(2.0 / n) * np.max(np.diag(v)))
    assert np.array_equal(draws, draw_means(*args, seed=3).reshape(-1, benchmarks))
    assert not np.array_equal(draws, draw_means(*args, seed=4).reshape(-1, benchmarks))


def test_the_means_default_follows_the_coordinates():
    """Left unset, the benchmark means are integrated out in the centred coordinates and sampled in the
    non-centred ones, so fit_correlated(parametrization="non-centred") builds a model instead of refusing the
    combination; asking for the integrated means in the non-centred coordinates is still refused."""
    from benchmeasure.base.errors import InputError
    from benchmeasure.suite.mirt import default_means
    from benchmeasure.suite.mirt_collapsed import build_collapsed_model

    assert default_means("centred") == "integrated" and default_means("non-centred") == "sampled"
    assert default_means("partial") == "integrated"
    rng = np.random.default_rng(3)
    trials = np.full((6, 8), 2)
    counts = rng.binomial(trials, 0.5)
    which = np.repeat([0, 1], 4)
    model, _ = build_collapsed_model(counts, trials, which, 2, parametrization="non-centred",
                                     means=default_means("non-centred"))
    assert "z" in model.named_vars and "mu" in model.named_vars
    with pytest.raises((InputError, SystemExit)):
        build_collapsed_model(counts, trials, which, 2, parametrization="non-centred", means="integrated")
