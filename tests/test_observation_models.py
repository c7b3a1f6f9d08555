"""Observation models (benchmeasure.irt.observation): every registered entry is checked here, the
beta-binomial's posterior against an independent grid computation, and a toy model registered from
this file runs through fit_1pl."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from benchmeasure.base.errors import InputError
from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.irt.fit import fit_1pl
from benchmeasure.irt.observation import OBSERVATIONS, ObservationModel, Parameter
from conftest import ROOT, assert_rejected, run_script


def _params(model, backend=float):
    return {p.name: backend(p.example) for p in model.parameters}


@pytest.mark.parametrize("name", list(OBSERVATIONS))
@pytest.mark.parametrize("guessing", [0.0, 0.25])
def test_every_model_is_a_distribution_and_its_two_loglikelihoods_agree(name, guessing):
    import pytensor.tensor as pt

    model = OBSERVATIONS[name]
    k = 5
    theta, b = np.array([-2.0, 0.3, 4.0]), np.array([-1.0, 0.5])
    eta = theta[:, None] - b[None, :]
    # a pmf: probabilities over y = 0..K sum to 1 in every cell, and the mean is K·p
    ys = np.arange(k + 1)[:, None, None]
    probs = np.exp(model.loglik(ys, k, eta[None], guessing, _params(model), True))
    np.testing.assert_allclose(probs.sum(axis=0), 1.0, rtol=1e-10)
    p = guessing + (1 - guessing) / (1 + np.exp(-eta))
    np.testing.assert_allclose((ys * probs).sum(axis=0), k * p, rtol=1e-10)
    # the PyTensor graph equals the NumPy log-likelihood up to the constant log C(K, Y)
    y = np.array([[0, 5], [3, 1], [5, 2]])
    numpy_value = model.loglik(y, k, eta, guessing, _params(model), False)
    constant = model.loglik(y, k, eta, guessing, _params(model), True) - numpy_value
    np.testing.assert_allclose(constant, gammaln(k + 1) - gammaln(y + 1) - gammaln(k - y + 1), atol=1e-12)
    graph = model.graph_loglik(y, k, guessing, pt.as_tensor_variable(theta), pt.as_tensor_variable(b),
                               _params(model, lambda v: pt.as_tensor_variable(float(v)))).eval()
    np.testing.assert_allclose(graph, numpy_value, rtol=1e-10, atol=1e-12)
    # the simulator draws with that mean
    draws = model.simulate(np.random.default_rng(1), k, np.full(20000, 0.3), _params(model))
    assert abs(draws.mean() - k * 0.3) < 4 * np.sqrt(k * 0.3 * 0.7 * (1 + (k - 1) * 0.3) / 20000)


def test_beta_binomial_matches_scipy():
    model = OBSERVATIONS["beta-binomial"]
    y, k, eta, rho, g = np.array([0, 1, 4, 7]), 7, np.array([-30.0, -0.4, 1.2, 25.0]), 0.37, 0.1
    p = g + (1 - g) / (1 + np.exp(-eta))
    c = (1 - rho) / rho
    expected = stats.betabinom.logpmf(y, k, p * c, (1 - p) * c)
    np.testing.assert_allclose(model.loglik(y, k, eta, g, {"rho": rho}, True), expected, rtol=1e-9, atol=1e-12)


def test_beta_binomial_posterior_matches_an_independent_grid():
    """NUTS (joint route) against the posterior on a 4-D grid (θ1, θ2, b, ρ) with SciPy's beta-binomial pmf."""
    counts = np.array([[6], [1]])
    k = 6
    result = fit_1pl(ResponseMatrix(["m1", "m2"], ["q"], counts, k), observation="beta-binomial", chains=2,
                     tune=300, draws=600, seed=5, target_accept=0.9)
    assert result.settings["observation"] == "beta-binomial" and result.settings["route"] == "joint"
    t = np.linspace(-5, 5, 33)
    r = (np.arange(48) + 0.5) / 48
    th1, th2, bb, rr = np.meshgrid(t, t, t, r, indexing="ij", sparse=True)
    log_post = -0.5 * (th1 ** 2 + th2 ** 2 + bb ** 2)  # N(0, 1) priors; rho ~ Uniform(0, 1)
    c = (1 - rr) / rr
    for theta, y in ((th1, 6), (th2, 1)):
        p = 1 / (1 + np.exp(-(theta - bb)))
        log_post = log_post + stats.betabinom.logpmf(y, k, p * c, (1 - p) * c)
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    grid_b = (w * bb).sum()
    grid_b_sd = np.sqrt((w * bb ** 2).sum() - grid_b ** 2)
    grid_rho = (w * rr).sum()
    rho = result.posterior["posterior"]["rho"].values.ravel()
    ess = result.diagnostics["observation"]["rho"]["ess_bulk"]
    assert abs(result.b_mean[0] - grid_b) < 4 * grid_b_sd / np.sqrt(result.ess_bulk[0]) + 0.01
    assert abs(result.b_sd[0] - grid_b_sd) < 0.1 * grid_b_sd
    assert abs(rho.mean() - grid_rho) < 4 * rho.std() / np.sqrt(ess) + 0.005
    assert result.diagnostics["max_r_hat"] < 1.02


def _toy_graph(counts, n_trials, guessing, theta, b, params):
    """A toy: the binomial written with the logit scaled by a fixed 1.0 (so the binomial itself), via the graph."""
    import pytensor.tensor as pt

    eta = params["scale"] * (theta[:, None] - b[None, :])
    return counts * eta - n_trials * pt.softplus(eta)


def test_a_model_registered_from_outside_runs_through_fit_1pl():
    def prior(name):
        import pymc as pm

        return pm.LogNormal(name, 0.0, 0.05)

    toy = ObservationModel(
        name="toy-scaled-logit",
        loglik=lambda y, k, eta, g=0.0, params=None, with_constant=False: OBSERVATIONS["binomial"].loglik(
            y, k, eta * params["scale"], g, None, with_constant),
        graph_loglik=_toy_graph, simulate=OBSERVATIONS["binomial"].simulate,
        parameters=(Parameter("scale", prior, "a logit scale near 1", example=1.0),))
    OBSERVATIONS.register(toy)
    try:
        rng = np.random.default_rng(2)
        counts = rng.binomial(4, 1 / (1 + np.exp(-(rng.normal(size=(8, 1)) - rng.normal(size=(1, 6))))))
        matrix = ResponseMatrix([f"m{j}" for j in range(8)], [f"q{i}" for i in range(6)], counts, 4)
        toy_fit = fit_1pl(matrix, observation="toy-scaled-logit", chains=2, tune=200, draws=200, seed=3)
        assert toy_fit.settings["route"] == "joint" and toy_fit.settings["observation"] == "toy-scaled-logit"
        # harder items (fewer correct answers) get larger b; the toy's own parameter is sampled and reported
        assert np.corrcoef(toy_fit.b_mean, -counts.sum(axis=0))[0, 1] > 0.9
        assert toy_fit.diagnostics["observation"]["scale"]["mean"] == pytest.approx(1.0, abs=0.05)
        with pytest.raises(InputError, match="needs method nuts"):
            fit_1pl(matrix, observation="toy-scaled-logit", method="map")
    finally:
        OBSERVATIONS.unregister("toy-scaled-logit")
    with pytest.raises(InputError, match="observation must be one of"):
        fit_1pl(matrix, observation="toy-scaled-logit")


def test_fit_command_rejects_beta_binomial_map_and_collapsed(tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("model,a,b\nx,1,2\ny,0,1\n")
    for extra, fragment in ((["--method", "map"], "--observation beta-binomial needs --method nuts"),
                            (["--route", "collapsed"], "runs on the joint route (use --route joint or auto)")):
        result = run_script("fit_irt.py", matrix, "--n-trials", 2, "--output-dir", tmp_path / "out",
                            "--observation", "beta-binomial", *extra)
        assert_rejected(result, fragment)
        assert not (tmp_path / "out" / "difficulty.csv").exists()
    assert (ROOT / "docs" / "observation_models.md").is_file()
