"""The 1-D quadrature of irt/routes/collapsed/quadrature.py against SciPy's adaptive integration and its own draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from benchmeasure.irt.likelihood import log_likelihood
from benchmeasure.irt.routes.collapsed import quadrature as q

M, K = 12, 8


def _rows(seed):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=M)
    y = rng.integers(0, K + 1, size=(4, M))
    y[0] = 0   # an item no model ever solved: b far to the right
    y[1] = K   # solved by every model in every trial
    return theta, y


def _reference(y, theta, g):
    """log evidence, mean and sd of the item-side posterior by scipy.integrate.quad."""
    def density(x):
        return np.exp(log_likelihood(y, K, theta - x, g).sum()) * stats.norm.pdf(x)

    opts = dict(points=[-5.0, 0.0, 5.0], limit=500, epsabs=0.0, epsrel=1e-13)
    z = integrate.quad(density, -30, 30, **opts)[0]
    m1 = integrate.quad(lambda x: x * density(x), -30, 30, **opts)[0] / z
    m2 = integrate.quad(lambda x: x * x * density(x), -30, 30, **opts)[0] / z
    return np.log(z), m1, np.sqrt(m2 - m1 ** 2)


@pytest.mark.parametrize("guessing", [0.0, 0.25])
def test_log_marginal_and_moments_match_adaptive_integration(guessing):
    theta, y = _rows(1)
    grid = q.make_grid(M, K)
    lm = q.log_marginal(y, K, theta, grid, guessing)
    mean, sd = q.posterior_moments(y, K, theta, grid, guessing)
    for u in range(y.shape[0]):
        ref_lm, ref_mean, ref_sd = _reference(y[u], theta, guessing)
        assert abs(lm[u] - ref_lm) < 1e-10
        assert abs(mean[u] - ref_mean) < 1e-10
        assert abs(sd[u] - ref_sd) < 1e-9
    assert np.all(q.edge_weight(q.log_integrand(y, K, theta, grid, guessing)) < 1e-30)


def test_with_constant_is_the_exact_log_probability():
    theta, y = _rows(2)
    from scipy.special import gammaln

    const = (gammaln(K + 1) - gammaln(y + 1) - gammaln(K - y + 1)).sum(axis=1)
    assert np.allclose(q.log_marginal(y, K, theta, with_constant=True) - q.log_marginal(y, K, theta), const)


def test_model_side_mirrors_item_side():
    """θ given b: η = x − b; b given θ: η = θ − x; x → −x and b → −θ map one onto the other."""
    theta, y = _rows(3)
    mean_model, sd_model = q.posterior_moments(y, K, -theta, side="model")
    mean_item, sd_item = q.posterior_moments(y, K, theta, side="item")
    assert np.allclose(mean_model, -mean_item, atol=1e-12)
    assert np.allclose(sd_model, sd_item, atol=1e-12)


@pytest.mark.parametrize("guessing", [0.0, 0.3])
def test_exact_draws_have_the_quadrature_moments(guessing):
    theta, y = _rows(4)
    n = 100_000
    draws = q.sample(y, K, theta, n, seed=5, guessing=guessing)
    mean, sd = q.posterior_moments(y, K, theta, guessing=guessing)
    z_mean = (draws.mean(axis=1) - mean) / (sd / np.sqrt(n))
    z_sd = (draws.std(axis=1) / sd - 1.0) * np.sqrt(2 * n)
    assert np.all(np.abs(z_mean) < 4.5), z_mean
    assert np.all(np.abs(z_sd) < 4.5), z_sd
    # the whole distribution: Kolmogorov–Smirnov against the quadrature CDF
    grid = q.make_grid(M, K)
    a = q.log_integrand(y, K, theta, grid, guessing)
    cdf = np.cumsum(np.exp(a - a.max(axis=1, keepdims=True)), axis=1)
    cdf /= cdf[:, -1:]
    for u in range(y.shape[0]):
        sorted_draws = np.sort(draws[u, :5000])
        model_cdf = np.interp(sorted_draws, grid.nodes, cdf[u])
        ks = np.max(np.abs(model_cdf - np.arange(1, 5001) / 5000))
        assert ks < 0.03 + grid.step  # trapezoid-cumulative CDF is coarse at the nodes' spacing


def test_same_seed_same_draws_and_bad_side():
    theta, y = _rows(6)
    assert np.array_equal(q.sample(y, K, theta, 50, seed=9), q.sample(y, K, theta, 50, seed=9))
    with pytest.raises(ValueError):
        q.log_marginal(y, K, theta, side="row")
    with pytest.raises(ValueError):
        q.log_marginal(y[:, :3], K, theta)
