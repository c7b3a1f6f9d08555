"""The collapsed route (benchmeasure.irt.routes.collapsed): its marginal equals the per-item quadrature, its gradient
the finite differences, its b draws the exact conditionals, and its posterior the joint NUTS posterior."""

from __future__ import annotations

import numpy as np
import pytest

from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.irt.routes.collapsed import quadrature as q
from benchmeasure.irt.routes.collapsed.difficulties import draw_difficulties, quadrature_check
from benchmeasure.irt.routes.collapsed.marginal import CollapsedData
from benchmeasure.irt.simulate import simulate_counts

M, N, K = 7, 25, 3


def _counts(seed=1):
    rng = np.random.default_rng(seed)
    y = simulate_counts(rng.normal(size=M), rng.normal(size=N), K, seed=seed + 1)
    y[:, 1] = y[:, 0]           # identical columns share one integral
    y[:, 3] = y[:, 0]           # (also with the same guessing in the mixed case)
    y[:, 2] = 0                 # never solved
    return y, rng.normal(size=M)


GUESSING = [0.0, np.where(np.arange(N) % 3 == 0, 0.25, np.where(np.arange(N) % 3 == 1, 0.1, 0.0))]


@pytest.mark.parametrize("guessing", GUESSING, ids=["g0", "mixed"])
def test_marginal_is_the_sum_of_per_item_integrals_and_gradient_matches(guessing):
    y, theta = _counts()
    data = CollapsedData(y, K, guessing)
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (N,))
    value, grad = data(theta)
    reference = sum(q.log_marginal(y[:, i], K, theta, data.grid, g[i])[0] for i in range(N))
    assert value == pytest.approx(reference, rel=1e-12)
    assert data.n_integrals < N   # shared integrals
    eps = 1e-5
    numeric = [(data(theta + eps * e)[0] - data(theta - eps * e)[0]) / (2 * eps) for e in np.eye(M)]
    assert np.allclose(grad, numeric, atol=1e-5)
    check = quadrature_check(data, theta[None, None, :], n_check=1)
    assert check["max_abs_log_marginal_error"] < 1e-9 and check["max_edge_weight"] < 1e-30


@pytest.mark.parametrize("guessing", GUESSING, ids=["g0", "mixed"])
def test_b_draws_follow_the_exact_conditional(guessing):
    y, theta = _counts(3)
    data = CollapsedData(y, K, guessing)
    n = 20_000
    draws = draw_difficulties(data, np.tile(theta, (2, n // 2, 1)), seed=7)
    assert draws.dtype == np.float32 and draws.shape == (2, n // 2, N)
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (N,))
    mean, sd = q.posterior_moments(y.T, K, theta, data.grid, g[:, None])
    flat = draws.reshape(n, N).astype(float)
    assert np.all(np.abs(flat.mean(axis=0) - mean) / (sd / np.sqrt(n)) < 4.5)
    assert np.all(np.abs(flat.std(axis=0) / sd - 1.0) * np.sqrt(2 * n) < 4.5)
    again = draw_difficulties(data, np.tile(theta, (2, n // 2, 1)), seed=7)
    assert np.array_equal(draws, again)


def _agree(a_mean, a_sd, a_ess, b_mean, b_sd, b_ess):
    """Means within 5 Monte Carlo standard errors; sds within 5 standard errors of an sd (sd/√(2·ESS))."""
    se_mean = np.sqrt(a_sd ** 2 / a_ess + b_sd ** 2 / b_ess)
    se_sd = np.sqrt(a_sd ** 2 / (2 * a_ess) + b_sd ** 2 / (2 * b_ess))
    return np.max(np.abs(a_mean - b_mean) / se_mean), np.max(np.abs(a_sd - b_sd) / se_sd)


@pytest.mark.slow
@pytest.mark.parametrize("guessing", [0.0, 0.2])
def test_collapsed_posterior_agrees_with_joint_nuts(guessing):
    from benchmeasure.irt.fit import fit_1pl

    y, _ = _counts(5)
    matrix = ResponseMatrix([f"m{j}" for j in range(M)], [f"i{i}" for i in range(N)], y, K)
    common = dict(guessing=guessing, chains=4, tune=500, draws=1000, seed=3)
    collapsed = fit_1pl(matrix, route="collapsed", **common)
    joint = fit_1pl(matrix, route="joint", **common)
    assert collapsed.settings["route"] == "collapsed" and joint.settings["route"] == "joint"
    for fit in (collapsed, joint):
        assert fit.diagnostics["divergences"] == 0 and fit.diagnostics["max_r_hat"] < 1.02
    z_mean, z_sd = _agree(collapsed.theta_mean, collapsed.theta_sd, collapsed.theta_ess_bulk,
                          joint.theta_mean, joint.theta_sd, joint.theta_ess_bulk)
    assert z_mean < 5 and z_sd < 5, (z_mean, z_sd)
    z_mean, z_sd = _agree(collapsed.b_mean, collapsed.b_sd, collapsed.ess_bulk,
                          joint.b_mean, joint.b_sd, joint.ess_bulk)
    assert z_mean < 5 and z_sd < 5, (z_mean, z_sd)
    assert collapsed.posterior["posterior"]["b"].dtype == np.float32
    assert collapsed.diagnostics["quadrature"]["max_edge_weight"] < 1e-20
