"""The learned population of difficulties (benchmeasure.irt.deconvolution) against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad

from benchmeasure.core.resolution import filled_depth
from benchmeasure.irt.deconvolution import _objective, bin_likelihoods, fit_density, resample_draws

THETA = np.array([-0.8, 1.1])
K = 3
COUNTS = np.array([[0, 2, 3], [1, 3, 3]])   # models × items


def _likelihood(b, column):
    p = 1 / (1 + np.exp(-(THETA[:, None] - b[None, :])))
    return np.prod(p ** column[:, None] * (1 - p) ** (K - column[:, None]), axis=0)


def _brute_force_draws(rng, size):
    """Draws of each b_i under a Normal(0, 1) prior by inverse CDF on a fine grid (no project code)."""
    x = np.linspace(-8, 8, 40001)
    out = np.empty((size, COUNTS.shape[1]))
    for i in range(COUNTS.shape[1]):
        dens = np.exp(-0.5 * x * x) * _likelihood(x, COUNTS[:, i])
        cdf = np.cumsum(dens)
        out[:, i] = np.interp(rng.random(size) * cdf[-1], cdf, x)
    return out


def test_draws_under_a_learned_prior_match_numerical_integration():
    rng = np.random.default_rng(1)
    draws = _brute_force_draws(rng, 200_000)
    edges = np.linspace(-5, 6, 45)
    a, idx = bin_likelihoods(draws, edges)
    # a two-bump population, piecewise constant on the bins
    centers = 0.5 * (edges[1:] + edges[:-1])
    pi = np.exp(-0.5 * ((centers + 1.5) / 0.4) ** 2) + 0.6 * np.exp(-0.5 * ((centers - 2) / 0.5) ** 2)
    pi /= pi.sum()
    g = pi / np.diff(edges)
    x = np.linspace(edges[0], edges[-1], 200001)[:-1]
    gx = g[np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(g) - 1)]
    new = resample_draws(draws, idx, pi, edges, rng, size=40_000)
    for i in range(COUNTS.shape[1]):
        post = gx * _likelihood(x, COUNTS[:, i])
        post /= post.sum()
        mean = (post * x).sum()
        sd = np.sqrt((post * (x - mean) ** 2).sum())
        assert new[:, i].mean() == pytest.approx(mean, abs=4 * sd / np.sqrt(40_000) + 0.01)
        assert new[:, i].std() == pytest.approx(sd, rel=0.03)
    # the marginal likelihood of g from the draws, up to one constant per item: ratios between two densities
    # (a second density within the draws' reach: far beyond them the importance weights 1/φ are too noisy)
    flat = np.exp(-0.5 * ((centers - 0.5) / 1.2) ** 2)
    flat /= flat.sum()
    for i in range(COUNTS.shape[1]):
        exact = [(gg[np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(gg) - 1)]
                  * _likelihood(x, COUNTS[:, i])).sum() for gg in (g, flat / np.diff(edges))]
        assert (a[i] @ pi) / (a[i] @ flat) == pytest.approx(exact[0] / exact[1], rel=0.02)


def test_penalized_objective_gradient_and_fit():
    rng = np.random.default_rng(2)
    a = rng.random((30, 12)) ** 3
    w = rng.dirichlet(np.ones(30)) * 30
    alpha = rng.normal(size=12)
    assert check_grad(lambda v: _objective(v, a, w, 0.7)[0], lambda v: _objective(v, a, w, 0.7)[1], alpha) < 1e-4
    pi = fit_density(a, weights=w, kappa=0.7)
    best = _objective(np.log(pi), a, w, 0.7)[0]
    for _ in range(20):   # no random nearby density does better
        assert _objective(np.log(pi) + rng.normal(0, 0.05, 12), a, w, 0.7)[0] >= best - 1e-6


@pytest.mark.parametrize("sigma,density", [(0.3, 20.0), (0.1, 300.0), (0.5, 5.0)])
def test_filled_depth_matches_simulation(sigma, density):
    """D(σ, λ): expected overshoot past an edge of the largest of λ-dense points moved by N(0, σ²)."""
    rng = np.random.default_rng(3)
    span = 8 * sigma
    n = rng.poisson(density * span, 4000)
    tops = np.array([(rng.uniform(-span, 0, m) + rng.normal(0, sigma, m)).max() if m else -np.inf for m in n])
    assert filled_depth(sigma, density) == pytest.approx(np.maximum(tops, 0).mean(), rel=0.04, abs=0.002)
