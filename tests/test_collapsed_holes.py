"""The collapsed route with holes and K per cell (benchmeasure.irt.routes.collapsed.holes): its marginal equals an
independent adaptive quadrature of the masked likelihood, its gradient the finite differences, integrals are shared
only between items with the same column sum and the same trials column, its b draws follow the exact conditionals,
and its posterior equals the joint route's and a brute-force grid's."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from scipy.integrate import quad

from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.irt.routes.collapsed.difficulties import draw_difficulties, quadrature_check
from benchmeasure.irt.routes.collapsed.holes import CollapsedHolesData
from benchmeasure.irt.routes.collapsed.marginal import CollapsedData
from conftest import run_script

M, N, K = 5, 24, 3
G_MIXED = np.where(np.arange(N) % 4 == 3, 0.25, 0.0)


def _matrix(seed=0):
    rng = np.random.default_rng(seed)
    trials = rng.integers(0, K + 1, (M, N))
    trials[:, 0] = trials[:, 1] = trials[:, 2] = K   # items 0 and 1: same trials column …
    trials[0, 2] = 0                         # … item 2: same counts as item 1, another trials column
    counts = rng.binomial(trials, 0.55)
    counts[:, 1] = counts[:, 0]
    counts[:, 2] = counts[:, 1]
    counts[0, 2] = 0
    trials[:, 3] = 0
    trials[1, 3] = 2                         # one model only
    counts[:, 3] = 0
    return counts, trials, rng.normal(size=M)


def _independent_log_marginal(counts, trials, theta, guessing):
    """Σ_i log ∫ N(b; 0, 1) Π_j p^Y (1 − p)^(T − Y) db by SciPy's adaptive quadrature (no shared integrals)."""
    total = 0.0
    for i in range(counts.shape[1]):
        def f(x, i=i):
            p = guessing[i] + (1 - guessing[i]) / (1 + np.exp(x - theta))
            return np.exp(-x * x / 2) / np.sqrt(2 * np.pi) * np.prod(p ** counts[:, i] * (1 - p) ** (trials[:, i]
                                                                                                     - counts[:, i]))
        total += np.log(quad(f, -15, 15, epsabs=0, epsrel=1e-12, limit=200)[0])
    return total


@pytest.mark.parametrize("guessing", [np.zeros(N), G_MIXED], ids=["g0", "mixed"])
def test_marginal_and_gradient_match_an_independent_quadrature(guessing):
    counts, trials, theta = _matrix()
    data = CollapsedHolesData(counts, trials, K, guessing)
    value, grad = data(theta)
    assert value == pytest.approx(_independent_log_marginal(counts, trials, theta, guessing), rel=1e-10)
    eps = 1e-5
    numeric = [(data(theta + eps * e)[0] - data(theta - eps * e)[0]) / (2 * eps) for e in np.eye(M)]
    np.testing.assert_allclose(grad, numeric, atol=1e-5)
    check = quadrature_check(data, theta[None, None, :], n_check=1)
    assert check["max_abs_log_marginal_error"] < 1e-9 and check["max_edge_weight"] < 1e-30
    # items 0 and 1 share (same counts, same trials); item 2 has the same counts but another trials column
    assert data.item_group[0] == data.item_group[1] != data.item_group[2]
    assert data.n_integrals < N


@pytest.mark.parametrize("guessing", [0.0, G_MIXED], ids=["g0", "mixed"])
def test_without_holes_it_equals_the_complete_route(guessing):
    rng = np.random.default_rng(4)
    counts = rng.binomial(K, 0.5, (M, N))
    theta = rng.normal(size=M)
    full = CollapsedData(counts, K, guessing)(theta)
    holes = CollapsedHolesData(counts, np.full((M, N), K), K, guessing)(theta)
    assert holes[0] == pytest.approx(full[0], rel=1e-13)
    np.testing.assert_allclose(holes[1], full[1], atol=1e-10)


def test_b_draws_follow_the_exact_masked_conditional():
    counts, trials, theta = _matrix(2)
    data = CollapsedHolesData(counts, trials, K, G_MIXED)
    n = 12_000
    draws = draw_difficulties(data, np.tile(theta, (2, n // 2, 1)), seed=3).reshape(n, N).astype(float)
    for i in range(N):
        mean, sd = _moments(counts[:, i], trials[:, i], theta, G_MIXED[i], data.grid.nodes)
        assert abs(draws[:, i].mean() - mean) / (sd / np.sqrt(n)) < 4.5, i
        assert abs(draws[:, i].std() / sd - 1.0) * np.sqrt(2 * n) < 4.5, i
    assert np.array_equal(draws, draw_difficulties(data, np.tile(theta, (2, n // 2, 1)), seed=3).reshape(n, N))


def _moments(y, t, theta, g, nodes):
    """Posterior mean and sd of one b given θ on a fine grid, cell by cell with its own trials."""
    x = np.linspace(nodes[0], nodes[-1], 20_001)
    p = g + (1 - g) / (1 + np.exp(x[:, None] - theta[None, :]))
    log = -0.5 * x**2 + (y * np.log(p) + (t - y) * np.log1p(-p)).sum(axis=1)
    w = np.exp(log - log.max())
    w /= w.sum()
    mean = float((w * x).sum())
    return mean, float(np.sqrt((w * (x - mean) ** 2).sum()))


def test_collapsed_and_joint_routes_agree_with_holes():
    from benchmeasure.irt.fit import fit_1pl

    counts, trials, _ = _matrix(5)
    matrix = ResponseMatrix([f"m{j}" for j in range(M)], [f"q{i}" for i in range(N)], counts, K, trials)
    fits = {route: fit_1pl(matrix, guessing=G_MIXED, seed=1, chains=2, tune=400, draws=1000, route=route)
            for route in ("collapsed", "joint")}
    c, j = fits["collapsed"], fits["joint"]
    assert c.diagnostics["route"] == "collapsed" and j.diagnostics["route"] == "joint"
    se = np.sqrt(c.b_sd**2 / c.ess_bulk + j.b_sd**2 / j.ess_bulk)
    assert np.max(np.abs(c.b_mean - j.b_mean) / se) < 4.5
    se = np.sqrt(c.theta_sd**2 / c.theta_ess_bulk + j.theta_sd**2 / j.theta_ess_bulk)
    assert np.max(np.abs(c.theta_mean - j.theta_mean) / se) < 4.5
    assert np.mean(c.b_sd / j.b_sd) == pytest.approx(1.0, abs=0.06)


def test_fit_command_uses_the_collapsed_route_with_holes_and_matches_brute_force(tmp_path):
    """The 2 × 3 matrix with K from 1 to 3 and an absent cell: fit --allow-missing runs the collapsed route by
    default, and its posterior means of b equal a brute-force grid over all five parameters."""
    from benchmeasure.core.matrix_holes import write_counts_and_trials

    counts = np.array([[2, 1, 0], [0, 3, 1]])
    trials = np.array([[3, 1, 0], [2, 3, 2]])
    matrix = tmp_path / "m.csv"
    write_counts_and_trials(["a", "b"], ["q0", "q1", "q2"], counts, trials, matrix)
    out = tmp_path / "fit"
    result = run_script("fit_irt.py", matrix, "--n-trials", 3, "--allow-missing", "--chains", 2, "--tune", 300,
                        "--draws", 2000, "--seed", 2, "--output-dir", out)
    assert result.returncode == 0, result.stderr
    assert "1 absent cells" in result.stderr and "collapsed route" in result.stderr
    with open(out / "difficulty.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    b_mean, b_sd = [float(r["b_mean"]) for r in rows], [float(r["b_sd"]) for r in rows]
    g = np.linspace(-5.5, 5.5, 23)
    grids = np.meshgrid(g, g, g, g, g, indexing="ij", sparse=True)
    logp = sum(-0.5 * x**2 for x in grids)
    for j in range(2):
        for i in range(3):
            eta = grids[j] - grids[2 + i]
            logp = logp + counts[j, i] * eta - trials[j, i] * np.logaddexp(0, eta)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    means = [float((w * x).sum()) for x in grids[2:]]
    sds = [float(np.sqrt((w * (x - mu) ** 2).sum())) for x, mu in zip(grids[2:], means)]
    np.testing.assert_allclose(b_mean, means, atol=0.06)
    np.testing.assert_allclose(b_sd, sds, rtol=0.06)


@pytest.mark.parametrize("n_models, spread, n_patterns", [(7, 2.0, 4), (1100, 3.0, 4), (9, 400.0, 4),
                                                         (30, 2.0, 40), (9, 400.0, 40)])
def test_pattern_tables_equal_the_softplus_sums_cell_by_cell(n_models, spread, n_patterns):
    """The tables (a product of factors per trials column and count, one log per node and block of 512 factors;
    beyond FEW_PATTERNS columns one log per cell and a matrix product; one exp per cell where |θ| + |x| ≥ 600)
    equal Σ_j T_pj softplus(θ_j − x_k) and σ(θ_j − x_k) computed cell by cell: 1,100 models cross a block."""
    from benchmeasure.irt.routes.collapsed.holes import FEW_PATTERNS, _pattern_tables
    from benchmeasure.irt.routes.collapsed.quadrature import make_grid

    assert (n_patterns > FEW_PATTERNS) == (n_patterns == 40)
    rng = np.random.default_rng(n_models)
    theta = rng.normal(0.0, spread, n_models)
    nodes = make_grid(n_models, 5).nodes
    patterns = rng.choice([0.0, 1.0, 1.0, 2.0, 5.0], size=(n_patterns, n_models))
    patterns[0] = 1.0
    s_tab, sig = np.empty((n_patterns, nodes.size)), np.empty((n_models, nodes.size))
    _pattern_tables(theta, nodes, patterns, s_tab, sig)
    eta = theta[:, None] - nodes[None, :]
    soft = np.logaddexp(0.0, eta)
    np.testing.assert_allclose(s_tab, patterns @ soft, rtol=1e-12, atol=1e-9)
    from scipy.special import expit

    np.testing.assert_allclose(sig, expit(eta), rtol=1e-12, atol=1e-300)
