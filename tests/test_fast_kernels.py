"""The pieces that make a fit's b draws, summaries and calibration cheap, each against an independent reference:
the generator (irt/rng.py) against its published definition, the radix argsort against NumPy's sort, the fast
log1p against math.log1p, the column sums drawn by inverse CDF against their exact Poisson-binomial law, and the
metrics of sorted rows against the full-sort definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

MASK = (1 << 64) - 1


def _xoshiro_reference(state, count):
    """xoshiro256** in plain Python integers, from Blackman & Vigna's definition."""
    s = [int(x) for x in state]

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & MASK

    out = []
    for _ in range(count):
        out.append((rotl((s[1] * 5) & MASK, 7) * 9) & MASK)
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
    return out


def test_generator_follows_its_definition():
    import numba

    from benchmeasure.irt.rng import fill_uniform, next_u64, states

    @numba.njit
    def outputs(state, out):
        for k in range(out.shape[0]):
            out[k] = next_u64(state)

    got = np.empty(4, dtype=np.uint64)
    outputs(np.array([1, 2, 3, 4], dtype=np.uint64), got)
    # the first outputs from the state (1, 2, 3, 4), as the reference C code gives them
    assert [int(v) for v in got] == [11520, 0, 1509978240, 1215971899390074240]
    state = states(7, 3)[2].copy()
    got = np.empty(50, dtype=np.uint64)
    outputs(state.copy(), got)
    assert [int(v) for v in got] == _xoshiro_reference(state, 50)
    u = np.empty(200_000)
    fill_uniform(state.copy(), u)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert np.all(np.mod(u * 2.0 ** 53, 1.0) == 0.0)          # multiples of 2^-53
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / u.size)
    from scipy.stats import kstest

    assert kstest(u, "uniform").pvalue > 1e-4
    # distinct seeds and blocks give distinct states; the same seed the same ones
    assert np.array_equal(states(7, 3), states(7, 3))
    assert len({tuple(r) for r in np.vstack([states(7, 3), states(8, 3)])}) == 6


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, st.tuples(st.integers(1, 4), st.integers(1, 300)),
                  elements=st.floats(width=32, allow_nan=False) | st.sampled_from([0.0, -0.0, 1.5, -1.5])))
def test_radix_argsort_sorts_like_numpy(values):
    from benchmeasure.irt.draw_summary import argsort_rows_f32

    order = np.empty(values.shape, dtype=np.int64)
    argsort_rows_f32(np.ascontiguousarray(values), order)
    for p in range(values.shape[0]):
        assert np.array_equal(np.sort(order[p]), np.arange(values.shape[1]))        # a permutation
        assert np.array_equal(values[p][order[p]], np.sort(values[p]))               # that sorts the row


def test_radix_argsort_puts_nan_at_an_end():
    from benchmeasure.irt.draw_summary import argsort_rows_f32

    row = np.array([[0.5, np.nan, -2.0, np.inf, -np.inf, 1.0]], dtype=np.float32)
    order = np.empty(row.shape, dtype=np.int64)
    argsort_rows_f32(row, order)
    ordered = row[0][order[0]]
    assert np.isnan(ordered[0]) or np.isnan(ordered[-1])
    assert list(ordered[np.isfinite(ordered) | np.isinf(ordered)]) == [-np.inf, -2.0, 0.5, 1.0, np.inf]


@settings(max_examples=200, deadline=None)
@given(st.floats(-0.999999, 1e6) | st.floats(-1e-3, 1e-3))
def test_log1p_fast_is_accurate(x):
    from benchmeasure.irt.routes.collapsed.quadrature import log1p_fast

    exact = math.log1p(x)
    assert abs(log1p_fast(x) - exact) <= 2e-12 * abs(exact) + 1e-300


def _poisson_binomial_pmf(p, trials):
    pmf = np.array([1.0])
    for q, t in zip(p, trials):
        for _ in range(int(t)):
            pmf = np.convolve(pmf, [1.0 - q, q])
    return pmf


@pytest.mark.parametrize("k", [1, 3])
def test_column_sums_follow_their_exact_law(k):
    """The calibration's column sums drawn by inverse CDF (analyses/calibrated.py) have the Poisson-binomial law of
    independent binomial cells, holes included: a chi-square test per item against the exact PMF."""
    from scipy.stats import chisquare

    from benchmeasure.analyses.calibrated import simulate_sums

    rng = np.random.default_rng(5)
    m, n, reps = 6, 4, 40_000
    theta, b = rng.normal(size=m), np.array([-1.5, 0.0, 0.7, 2.5])
    trials = np.full((m, n), k, dtype=np.int64)
    trials[0, 1] = 0                       # a hole
    trials[2, 3] = 1                       # fewer trials in one cell
    assert trials.sum(axis=0).max() <= 2 * reps   # the inverse-CDF route is the one taken
    sums = simulate_sums(b, theta, trials, np.random.default_rng(11), reps)
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    for i in range(n):
        pmf = _poisson_binomial_pmf(p[:, i], trials[:, i])
        observed = np.bincount(sums[:, i], minlength=pmf.size)
        assert observed.size == pmf.size                      # never a sum above the trials
        keep = pmf * reps >= 5
        expected = pmf[keep] * reps
        stat = chisquare(observed[keep], expected * observed[keep].sum() / expected.sum())
        assert stat.pvalue > 1e-4, (i, stat)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(2, 40)),
                  elements=st.floats(-5, 5, allow_nan=False)), st.integers(1, 45))
def test_sorted_metrics_equal_the_full_sort(b, top_k):
    from benchmeasure.analyses.posterior_metrics import sorted_unit_metrics

    b = b[np.ptp(b, axis=1) > 0]
    if not b.size:
        return
    z = np.sort((b - b.min(axis=1, keepdims=True)) / np.ptp(b, axis=1, keepdims=True), axis=1)
    got = sorted_unit_metrics(z, top_k)
    padded = np.concatenate([np.zeros((z.shape[0], 1)), z, np.ones((z.shape[0], 1))], axis=1)
    gaps = np.sort(np.diff(padded, axis=1), axis=1)[:, ::-1]
    assert np.array_equal(got["max_gap"], gaps[:, 0])
    # sums in another order than NumPy's pairwise one: equal to rounding
    np.testing.assert_allclose(got[f"top{top_k}_gap_sum"], gaps[:, :top_k].sum(axis=1), rtol=1e-13, atol=1e-15)
    n = z.shape[1]
    np.testing.assert_allclose(got["ddm"], np.abs(z - (np.arange(n) + 0.5) / n).mean(axis=1), rtol=1e-13, atol=1e-15)


def _fine_cdf(y, t, theta, g, lo, hi):
    """The exact conditional CDF of one b given θ on a fine grid (cell by cell with its own trials), for a KS test."""
    x = np.linspace(lo, hi, 40_001)
    p = g + (1 - g) / (1 + np.exp(x[:, None] - theta[None, :]))
    log = -0.5 * x ** 2 + (y * np.log(p) + (t - y) * np.log1p(-p)).sum(axis=1)
    w = np.exp(log - log.max())
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    return lambda v: np.interp(v, x, cdf)


@pytest.mark.parametrize("refinement", [None, 0.25, 0.5, 4.0])
@pytest.mark.parametrize("holes", [False, True])
def test_b_draws_are_exact_on_every_draw_grid(refinement, holes):
    """Every draw grid :func:`draw_grid` may choose gives the exact conditional of each b given θ (a KS test per
    item against a brute-force CDF), for plain items, guessing floors, holes and K per cell; the chosen grid is
    one of the allowed ones."""
    from scipy.stats import kstest

    from benchmeasure.irt.routes.collapsed.difficulties import DRAW_REFINEMENTS, draw_difficulties, draw_grid
    from benchmeasure.irt.routes.collapsed.marginal import collapsed_data

    rng = np.random.default_rng(21)
    m, n, k = 6, 12, 3
    theta = np.array([-2.5, -1.0, 0.0, 0.4, 1.3, 3.0])
    b = np.linspace(-2.5, 2.5, n)
    g = np.where(np.arange(n) % 4 == 0, 0.25, 0.0)
    trials = np.full((m, n), k, dtype=np.int64)
    if holes:
        trials[rng.random((m, n)) < 0.25] = 0
        trials[:, 3] = np.array([1, 5, 0, 2, 3, 3])
    p = g + (1 - g) / (1 + np.exp(b[None, :] - theta[:, None]))
    counts = rng.binomial(trials, p)
    data = collapsed_data(counts, k, g, trials if holes else None)
    nodes, step, delta = draw_grid(data, refinement)
    assert np.isclose(nodes[1] - nodes[0], step) and delta > 0
    if refinement is None:
        assert any(nodes.size - 1 == max(2, round((data.grid.size - 1) * r)) for r in DRAW_REFINEMENTS)
    size = 8_000
    draws = draw_difficulties(data, np.tile(theta, (2, size // 2, 1)), seed=5, refinement=refinement)
    flat = draws.reshape(size, n).astype(float)
    lo, hi = data.grid.nodes[0], data.grid.nodes[-1]
    for i in range(n):
        result = kstest(flat[:, i], _fine_cdf(counts[:, i], trials[:, i], theta, g[i], lo, hi))
        assert result.pvalue > 1e-4, (i, result)


def _full_row_marginal(theta, nodes, log_weights, base_extra, c_values, c_counts):
    """Σ_c n_c log Σ_k e^(r_c(k)) and the node weights Σ_c n_c softmax(r_c), every node summed (NumPy)."""
    base = log_weights - base_extra
    value, w = 0.0, np.zeros(nodes.size)
    for cv, n in zip(c_values, c_counts):
        r = base - cv * nodes
        top = r.max()
        e = np.exp(r - top)
        value += n * (top + np.log(e.sum()))
        w += n * e / e.sum()
    return value, w


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 60), st.sampled_from([1, 2, 8, 40]), st.integers(1, 400), st.sampled_from([0.3, 1.0, 3.0, 8.0]),
       st.integers(0, 2**32 - 1))
def test_windowed_integrals_equal_the_full_row_sums(n_models, k, n_items, spread, seed):
    """The collapsed route's integrals (a bisection to each integrand's largest term, then a walk of products,
    collapsed.window_integral) equal log-sum-exps over every node, value and gradient, from the all-wrong to the
    all-right column sums, with abilities far into the tails."""
    from benchmeasure.irt.routes.collapsed.marginal import CollapsedData, marginal_logp_grad

    rng = np.random.default_rng(seed)
    theta_true = rng.normal(size=n_models) * spread
    y = rng.binomial(k, 1 / (1 + np.exp(-(theta_true[:, None] - rng.normal(size=n_items)[None, :] * spread))))
    y[:, 0] = 0
    y[:, -1] = k
    data = CollapsedData(y, k)
    theta = theta_true + rng.normal(size=n_models) * 0.3
    value, grad = marginal_logp_grad(theta, *data.args())
    nodes = data.grid.nodes
    eta = theta[None, :] - nodes[:, None]
    ref_value, w = _full_row_marginal(theta, nodes, data.grid.log_weights, k * np.logaddexp(0, eta).sum(1),
                                      data.c_values, data.c_counts)
    ref_value += data.row_sums @ theta
    ref_grad = data.row_sums - k * (w @ (1 / (1 + np.exp(-eta))))
    assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-9)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(ref_grad).max()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 30), st.integers(1, 6), st.integers(1, 120), st.floats(0.0, 0.8), st.integers(0, 2**32 - 1))
def test_windowed_integrals_with_holes_equal_the_full_row_sums(n_models, k, n_items, holes, seed):
    """The same for the route with holes and K per cell: each trials column's integrals against full sums."""
    from benchmeasure.irt.routes.collapsed.holes import CollapsedHolesData

    rng = np.random.default_rng(seed)
    trials = rng.integers(1, k + 1, (n_models, n_items)) * (rng.random((n_models, n_items)) >= holes)
    theta = rng.normal(size=n_models) * 2
    y = rng.binomial(trials, 1 / (1 + np.exp(-(theta[:, None] - rng.normal(size=n_items)[None, :]))))
    data = CollapsedHolesData(y, trials, k, 0.0)
    value, grad = data(theta)
    nodes, lw = data.grid.nodes, data.grid.log_weights
    eta = theta[None, :] - nodes[:, None]
    soft, sig = np.logaddexp(0, eta), 1 / (1 + np.exp(-eta))
    ref_value, ref_grad = float(y.sum(1) @ theta), y.sum(1).astype(float)
    for i in range(n_items):                                   # item by item, no shared integrals
        r = lw - soft @ trials[:, i] - y[:, i].sum() * nodes
        top = r.max()
        e = np.exp(r - top)
        ref_value += top + np.log(e.sum())
        ref_grad -= trials[:, i] * ((e / e.sum()) @ sig)
    assert value == pytest.approx(ref_value, rel=1e-11, abs=1e-9)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(ref_grad).max()))


def test_a_private_generator_state_is_a_copy_alone_on_its_cache_lines():
    """Each block of b draws advances its own copy of its state, with a cache line of padding on either side:
    the rows of rng.states share lines, and threads writing neighbouring rows ran no faster than one."""
    from benchmeasure.irt.rng import next_u64, private_state, states

    rows = states(7, 3)
    mine = private_state(rows[1])
    assert np.array_equal(mine, rows[1]) and not np.shares_memory(mine, rows)
    start = mine.ctypes.data - mine.base.ctypes.data
    assert start >= 64 and mine.base.nbytes - (start + mine.nbytes) >= 64
    copy = rows[1].copy()
    assert next_u64(mine) == next_u64(copy) and np.array_equal(rows, states(7, 3))   # the source is left alone
