"""Exact 1-D posteriors with one side of the 1PL fixed (benchmeasure.irt.anchored), against brute force."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from benchmeasure.analyses.anchors import item_information, select_anchors
from benchmeasure.base.errors import InputError
from benchmeasure.benchfill.calibration import posterior_b
from benchmeasure.irt.anchored import ability_posterior, difficulty_posterior, predict_accuracy


def brute_force_theta(counts, b, k, g):
    """Mean, sd and 3% / 97% quantiles of p(θ | y, b) by adaptive quadrature of the literal model."""
    counts, b, g = np.asarray(counts), np.asarray(b, float), np.broadcast_to(g, np.shape(b))

    def density(theta):
        p = g + (1 - g) / (1 + np.exp(-(theta - b)))
        return math.prod(stats.binom.pmf(counts, k, p)) * stats.norm.pdf(theta)

    z = integrate.quad(density, -15, 15, limit=400, points=[0.0])[0]
    mean = integrate.quad(lambda t: t * density(t), -15, 15, limit=400, points=[0.0])[0] / z
    var = integrate.quad(lambda t: (t - mean) ** 2 * density(t), -15, 15, limit=400, points=[0.0])[0] / z
    return mean, math.sqrt(var), density, z


@pytest.mark.parametrize("counts,g", [([3, 2, 1, 0, 2], 0.0), ([0, 0, 0, 0, 0], 0.0), ([3, 3, 3, 3, 3], 0.0),
                                      ([3, 1, 2, 0, 1], [0.25, 0.25, 0.5, 0.0, 0.2])])
def test_ability_posterior_matches_brute_force(counts, g):
    b = [-1.5, -0.2, 0.4, 1.1, 2.5]
    post = ability_posterior(counts, b, 3, g)
    mean, sd, density, z = brute_force_theta(counts, b, 3, g)
    assert post.mean == pytest.approx(mean, abs=1e-5)
    assert post.sd == pytest.approx(sd, abs=1e-5)
    lo, hi = post.hdi(0.94)
    # an HDI: 94% of the mass, equal density at both ends
    assert integrate.quad(density, lo, hi)[0] / z == pytest.approx(0.94, abs=1e-3)
    assert density(lo) == pytest.approx(density(hi), rel=0.02)


def test_no_answers_gives_the_prior():
    post = ability_posterior([], [], 2)
    assert post.mean == pytest.approx(0.0, abs=1e-9)
    assert post.sd == pytest.approx(1.0, abs=1e-6)
    assert post.hdi(0.94)[1] == pytest.approx(stats.norm.ppf(0.97), abs=2e-3)


def test_difficulty_posterior_is_the_reflection_and_serves_benchfill():
    theta = np.array([2.0, 0.5, -0.3, -1.5])
    counts = [7, 4, 3, 1]
    post = difficulty_posterior(counts, theta, 8, 0.25)
    assert posterior_b(counts, theta, 8, 0.25) == (post.mean, post.sd)  # one code path
    # b given θ with y correct ↔ −b is the ability of a "model" on items of difficulty −θ
    mirror = ability_posterior(counts, -theta, 8, 0.25)
    assert post.mean == pytest.approx(-mirror.mean, abs=1e-12)
    assert post.sd == pytest.approx(mirror.sd, abs=1e-12)


def test_ten_percent_of_items_recovers_the_ability():
    rng = np.random.default_rng(3)
    b = rng.normal(0, 1, 2000)
    for true_theta in (-1.0, 0.3, 1.4):
        for g in (0.0, 0.25):
            subset = rng.choice(b.size, 200, replace=False)
            p = g + (1 - g) / (1 + np.exp(b[subset] - true_theta))
            y = rng.binomial(2, p)
            post = ability_posterior(y, b[subset], 2, g)
            assert abs(post.mean - true_theta) < 3 * post.sd, (true_theta, g, post.mean, post.sd)
            assert 0.05 < post.sd < 0.3


def test_predicted_accuracy_matches_monte_carlo():
    rng = np.random.default_rng(5)
    b = rng.normal(0, 1, 300)
    g = np.full(300, 0.2)
    answered = np.arange(40)
    y = rng.binomial(3, g[answered] + (1 - g[answered]) / (1 + np.exp(b[answered] - 0.7)))
    post = ability_posterior(y, b[answered], 3, g[answered])
    pred = predict_accuracy([(post, b[40:], g[40:])], y.sum() / 3, 300, 3, prob=0.9)
    # Monte Carlo of the same predictive: θ from the grid posterior, then binomial trials
    theta = rng.choice(post.grid, size=40000, p=post.cell_masses())
    p = g[40:] + (1 - g[40:]) / (1 + np.exp(b[None, 40:] - theta[:, None]))
    acc = (y.sum() / 3 + rng.binomial(3, p).sum(axis=1) / 3) / 300
    assert pred.mean == pytest.approx(acc.mean(), abs=1e-3)
    assert pred.low == pytest.approx(np.quantile(acc, 0.05), abs=3e-3)
    assert pred.high == pytest.approx(np.quantile(acc, 0.95), abs=3e-3)


def test_all_answered_prediction_is_the_observed_accuracy():
    post = ability_posterior([1, 0, 1], [0.0, 1.0, -1.0], 1)
    pred = predict_accuracy([(post, np.array([]), np.array([]))], 2.0, 3, 1)
    assert pred.mean == pred.low == pred.high == pytest.approx(2 / 3)


@pytest.mark.parametrize("strategy", ["stratified", "information", "random"])
def test_anchor_selection_is_seeded_and_distinct(strategy):
    b = np.random.default_rng(0).normal(0, 1, 500)
    first = select_anchors(b, 50, strategy, seed=4)
    assert len(set(first.tolist())) == 50
    assert np.array_equal(first, select_anchors(b, 50, strategy, seed=4))
    assert np.all(np.diff(b[first]) >= 0)  # written in increasing difficulty


def test_stratified_anchors_cover_each_difficulty_stratum():
    b = np.random.default_rng(1).normal(0, 1, 1000)
    chosen = select_anchors(b, 100, "stratified", seed=2)
    ranks = np.argsort(np.argsort(b))[chosen]
    assert np.array_equal(np.sort(ranks) // 10, np.arange(100))


def test_information_anchors_beat_random_on_posterior_precision():
    b = np.random.default_rng(2).normal(0, 1.5, 1000)
    theta = np.linspace(-2, 2, 41)
    precision = {s: (1 + item_information(theta, b[select_anchors(b, 30, s, seed=0)]).sum(axis=1))
                 for s in ("information", "random")}
    assert np.mean(np.log(precision["information"])) > np.mean(np.log(precision["random"]))


def test_anchor_count_out_of_range_is_an_input_error():
    with pytest.raises(InputError, match="--k"):
        select_anchors([0.0, 1.0], 3, "random", seed=0)


@pytest.mark.parametrize("n,k,g", [(3000, 1, 0.0), (4000, 4, 0.25)])
def test_windowed_grid_gives_the_full_grids_posterior(n, k, g):
    """Many items: a coarse pass limits the fine grid to where the mass is, with the same posterior."""
    from benchmeasure.irt.anchored import DIRECT_NODES, grid_for

    rng = np.random.default_rng(n)
    b = rng.normal(0, 1.5, n)
    y = rng.binomial(k, g + (1 - g) / (1 + np.exp(b - 0.8)))
    full_grid = grid_for(n, k)
    assert full_grid.size > DIRECT_NODES
    fast, full = ability_posterior(y, b, k, g), ability_posterior(y, b, k, g, grid=full_grid)
    assert fast.grid.size < full_grid.size / 10
    assert fast.mean == pytest.approx(full.mean, abs=1e-10)
    assert fast.sd == pytest.approx(full.sd, rel=1e-8)
    assert np.allclose(fast.hdi(), full.hdi(), atol=2e-3 * full.sd)
