"""fit_1pl: parameter recovery and interval calibration on simulated data, reproducibility,
guessing, the MAP mode, and the fast path's posterior against PyMC's NUTS on the paper's
model written literally (pm.Binomial with p = g + (1 − g)·sigmoid(θ − b))."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pymc")
pytest.importorskip("nutpie")

from benchmeasure.base.errors import InputError
from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.irt.diagnostics import summarize_diagnostics, warnings_for
from benchmeasure.irt.fit import fit_1pl
from benchmeasure.irt.plan import check_guessing
from benchmeasure.irt.simulate import simulate_counts


def _matrix(n_models, n_items, n_trials, seed, guessing=0.0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_models)
    b = rng.normal(size=n_items)
    counts = simulate_counts(theta, b, n_trials, seed=seed + 1000, guessing=guessing)
    matrix = ResponseMatrix([f"model-{j}" for j in range(n_models)], [f"item-{i:03d}" for i in range(n_items)],
                            counts, n_trials)
    return matrix, theta, b


@pytest.fixture(scope="module")
def recovery_fit():
    matrix, theta, b = _matrix(12, 200, 32, seed=2024)
    result = fit_1pl(matrix, chains=2, tune=400, draws=500, seed=7)
    return matrix, theta, b, result


@pytest.mark.slow
def test_recovers_difficulties(recovery_fit):
    _, theta, b, result = recovery_fit
    assert np.corrcoef(result.b_mean, b)[0, 1] > 0.95
    assert np.corrcoef(result.theta_mean, theta)[0, 1] > 0.95
    assert result.b_mean.shape == (200,) and result.theta_mean.shape == (12,)
    assert np.all(result.b_sd > 0) and np.all(np.isfinite(result.r_hat)) and np.all(result.ess_bulk > 0)


@pytest.mark.slow
def test_94_percent_intervals_cover_about_94_percent(recovery_fit):
    # simulation-based calibration at a small scale: 200 items, one simulated data set
    _, _, b, result = recovery_fit
    low, high = result.interval("b", 0.94)
    coverage = np.mean((b >= low) & (b <= high))
    assert 0.86 <= coverage <= 0.995, coverage


@pytest.mark.slow
def test_diagnostics_and_posterior(recovery_fit):
    _, _, _, result = recovery_fit
    d = result.diagnostics
    for key in ("max_r_hat", "min_ess_bulk", "divergences", "leapfrog_steps_per_draw", "sampling_time_s",
                "wall_time_s", "compile_time_s", "chains", "draws"):
        assert key in d
    assert d["chains"] == 2 and d["draws"] == 500
    assert d["max_r_hat"] < 1.05 and d["divergences"] == 0
    assert set(result.posterior["posterior"].data_vars) == {"theta", "b"}
    assert result.draws("b").shape == (1000, 200)
    # the shared summary gives the same figures when called on the posterior directly
    again = summarize_diagnostics(result.posterior, ["theta", "b"])
    assert again["max_r_hat"] == pytest.approx(d["max_r_hat"])
    assert again["min_ess_bulk"] == pytest.approx(d["min_ess_bulk"])
    assert list(result.difficulty_table().columns) == ["item", "b_mean", "b_sd", "r_hat", "ess_bulk"]
    assert list(result.ability_table().columns) == ["model", "theta_mean", "theta_sd", "r_hat", "ess_bulk"]


@pytest.mark.slow
def test_same_seed_same_fit():
    matrix, _, _ = _matrix(4, 15, 3, seed=5)
    first = fit_1pl(matrix, chains=2, tune=100, draws=100, seed=11)
    second = fit_1pl(matrix, chains=2, tune=100, draws=100, seed=11)
    np.testing.assert_array_equal(first.draws("b"), second.draws("b"))
    np.testing.assert_array_equal(first.b_mean, second.b_mean)
    other = fit_1pl(matrix, chains=2, tune=100, draws=100, seed=12)
    assert not np.array_equal(first.draws("b"), other.draws("b"))


@pytest.mark.slow
def test_guessing_removes_the_bias_of_a_zero_floor():
    matrix, _, b = _matrix(12, 120, 16, seed=99, guessing=0.25)
    with_g = fit_1pl(matrix, guessing=0.25, chains=2, tune=300, draws=300, seed=3)
    without = fit_1pl(matrix, guessing=0.0, chains=2, tune=300, draws=300, seed=3)
    slope_with = np.polyfit(b, with_g.b_mean, 1)[0]
    slope_without = np.polyfit(b, without.b_mean, 1)[0]
    # ignoring a 25% floor compresses the difficulty scale: hard items look easier than they are
    assert slope_with > 0.85
    assert slope_without < slope_with - 0.15
    assert np.mean(np.abs(with_g.b_mean - b)) < np.mean(np.abs(without.b_mean - b))
    hard = b > 1.0
    assert np.mean(without.b_mean[hard] - b[hard]) < np.mean(with_g.b_mean[hard] - b[hard]) - 0.2


def _literal_model(counts, n_trials, guessing):
    """The paper's model exactly as written, with no speed-ups: the reference posterior."""
    import pymc as pm

    n_models, n_items = counts.shape
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 1.0, shape=n_models)
        b = pm.Normal("b", 0.0, 1.0, shape=n_items)
        g = np.broadcast_to(np.asarray(guessing, dtype=float), (n_items,))
        p = g[None, :] + (1 - g[None, :]) * pm.math.sigmoid(theta[:, None] - b[None, :])
        pm.Binomial("y", n=n_trials, p=p, observed=counts)
    return model


@pytest.mark.slow
@pytest.mark.parametrize("guessing", [0.0, "per-item"])
def test_fast_path_matches_pymc_nuts_on_the_literal_model(guessing):
    import pymc as pm

    from benchmeasure.irt.diagnostics import per_parameter

    n_items = 16
    g = np.linspace(0.0, 0.3, n_items) if guessing == "per-item" else 0.0
    matrix, _, _ = _matrix(6, n_items, 4, seed=31, guessing=g)
    fast = fit_1pl(matrix, guessing=g, chains=4, tune=500, draws=1000, seed=1)
    reference = pm.sample(draws=1000, tune=500, chains=4, cores=1, random_seed=2, nuts_sampler="pymc",
                          model=_literal_model(matrix.counts, matrix.n_trials, g), progressbar=False,
                          compute_convergence_checks=False, target_accept=0.9)
    for name, mean, sd, ess in (("b", fast.b_mean, fast.b_sd, fast.ess_bulk),
                                ("theta", fast.theta_mean, fast.theta_sd, fast.theta_ess_bulk)):
        ref = per_parameter(reference, name)
        se = np.sqrt(sd**2 / ess + ref["sd"] ** 2 / ref["ess_bulk"])
        z = (mean - ref["mean"]) / se
        assert np.max(np.abs(z)) < 4.0, (name, z)
        assert np.mean(z**2) < 2.5, (name, z)
        np.testing.assert_allclose(sd, ref["sd"], rtol=0.15)


def test_map_is_the_marginal_mode():
    from benchmeasure.irt.routes.map.mode import marginal_mode

    matrix, _, _ = _matrix(5, 12, 4, seed=8, guessing=0.2)
    result = fit_1pl(matrix, guessing=0.2, method="map")  # --method map: abilities integrated out
    theta_m, b_m, _ = marginal_mode(matrix.counts, matrix.n_trials, 0.2)
    np.testing.assert_allclose(result.b_mean, b_m)
    np.testing.assert_allclose(result.theta_mean, theta_m)
    assert result.method == "map" and result.posterior is None
    assert np.all(np.isnan(result.b_sd)) and np.all(np.isnan(result.r_hat)) and np.all(np.isnan(result.ess_bulk))
    assert result.diagnostics["max_r_hat"] is None and result.diagnostics["min_ess_bulk"] is None


def test_map_keeps_constant_items_finite():
    counts = np.array([[2, 0, 1], [2, 0, 2], [2, 0, 0]])
    b = fit_1pl(ResponseMatrix(["a", "b", "c"], ["x", "y", "z"], counts, 2), method="map").b_mean
    assert np.all(np.isfinite(b)) and b[0] < b[2] < b[1]


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan"), [0.1, 0.2], "x"])
def test_bad_guessing_is_rejected(bad):
    with pytest.raises(InputError):
        check_guessing(bad, 3, ["a", "b", "c"])


@pytest.mark.parametrize("kwargs", [dict(chains=0), dict(draws=0), dict(tune=-1), dict(target_accept=1.0),
                                    dict(seed=-1), dict(sampler="stan"), dict(method="vi")])
def test_bad_settings_are_rejected_before_fitting(kwargs):
    matrix, _, _ = _matrix(3, 4, 2, seed=1)
    with pytest.raises(InputError):
        fit_1pl(matrix, **kwargs)


def test_numpyro_missing_is_a_clear_error():
    try:
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError:
        matrix, _, _ = _matrix(3, 4, 2, seed=1)
        with pytest.raises(InputError, match="numpyro"):
            fit_1pl(matrix, sampler="numpyro")
    else:
        pytest.skip("numpyro is installed here")


def test_warnings_say_what_to_try():
    summary = {"max_r_hat": 1.03, "min_ess_bulk": 120.0, "divergences": 3, "worst_r_hat": "b[q1]",
               "worst_ess_bulk": "b[q2]"}
    text = " ".join(warnings_for(summary))
    assert "R-hat" in text and "--draws" in text and "--target-accept" in text and "b[q1]" in text
    assert warnings_for({"max_r_hat": 1.001, "min_ess_bulk": 900.0, "divergences": 0}) == []


@pytest.mark.slow
def test_numpyro_samples_the_same_posterior_when_installed():
    pytest.importorskip("jax")
    pytest.importorskip("numpyro")
    matrix, _, _ = _matrix(5, 10, 4, seed=21)
    jax_fit = fit_1pl(matrix, sampler="numpyro", chains=2, tune=300, draws=500, seed=1)
    fast = fit_1pl(matrix, chains=2, tune=300, draws=500, seed=1)
    se = np.sqrt(jax_fit.b_sd**2 / jax_fit.ess_bulk + fast.b_sd**2 / fast.ess_bulk)
    assert np.max(np.abs(jax_fit.b_mean - fast.b_mean) / se) < 4.0
    assert jax_fit.settings["sampler"] == "numpyro"
