"""The gibbs route (irt/routes/gibbs/): one conditional update leaves its exact 1-D conditional invariant (KS),
the shift move is the exact Gibbs step of the common level, the posterior equals the joint and collapsed NUTS routes'
on a small matrix with holes and K per cell, and the command line runs it, feeds diagnose and posterior-metrics and
refuses the settings it does not take in one error line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.irt.routes.gibbs import chains, kernel, sparse, sums
from conftest import assert_rejected, run_script


def _exact_cdf(y, t, theta, g=0.0):
    """The exact conditional of one b given θ (prior N(0, 1), binomial cells (y, t), guessing floor g) as a CDF on
    a fine grid."""
    x = np.linspace(-8, 8, 200_001)
    eta = theta[None, :] - x[:, None]
    p = g + (1 - g) / (1 + np.exp(-eta))
    log = -0.5 * x**2 + (y * np.log(p) + (t - y) * np.log1p(-p)).sum(axis=1)
    w = np.exp(log - log.max())
    cdf = np.cumsum(w)
    return x, cdf / cdf[-1]


def _item_block(y, t, g, n):
    """One item's cells (y, t, guessing g) repeated as n coordinates of an item block."""
    m = y.size
    plain = float(y.sum()) if g == 0 else 0.0
    return (np.arange(n + 1, dtype=np.int64) * m, np.tile(np.arange(m, dtype=np.int64), n),
            np.tile(y, n).astype(float), np.tile(t, n).astype(float), np.full(n * m, float(g)),
            np.full(n, float(y.sum())), np.full(n, plain), np.full(n, float(t.sum())))


def _one_update(y, t, theta, start, seed, g=0.0, steps=sparse.NEWTON_STEPS, more=0):
    """Every start value of one item's b moved by one update of the route (each a separate coordinate); ``more``:
    further MH steps from the same proposal, as the route gives them in fits with floors (``sparse.FLOOR_STEPS``)."""
    n = start.size
    rng = np.random.default_rng(seed)
    values = start.copy()
    draws = rng.standard_t(sparse.NU, n), 1.0 - rng.random(n), rng.random(n)
    extra = np.stack([row for _ in range(more) for row in (rng.standard_t(sparse.NU, n), 1.0 - rng.random(n),
                                                          rng.random(n))]) if more else None
    accepted = kernel.update_block(values, -1.0, _item_block(y, t, g, n), theta, *draws, sparse.NU, 0, -1,
                                  np.full(n, steps, dtype=np.int64), np.zeros(n, dtype=np.int64), True, extra)
    return values, accepted / n


@pytest.mark.parametrize("g, rate, binary", [(0.0, 0.6, False), (0.25, 0.6, False), (0.25, 0.05, False),
                                             (0.0, 0.6, True), (0.25, 0.6, True), (0.25, 0.05, True)],
                         ids=["g0", "floor", "below-floor", "binary", "binary-floor", "binary-below-floor"])
def test_one_update_leaves_the_exact_conditional_invariant(g, rate, binary):
    rng = np.random.default_rng(0)
    theta = rng.normal(size=12)
    t = np.array([1, 3, 0, 2, 1, 1, 4, 0, 1, 2, 1, 3])     # K per cell, two absent cells
    if binary:     # the product kernels of the binary blocks (every T = 1, no floor)
        theta, t = rng.normal(size=40), np.ones(40, dtype=int)
        assert sparse.block_kind(np.ones(3), np.zeros(3)) == sparse.BINARY   # (with g > 0: the floor kernels)
    y = rng.binomial(t, rate)                            # below the floor: the wide mixture proposal
    grid, cdf = _exact_cdf(y, t, theta, g)
    start = np.interp(rng.random(20_000), cdf, grid)    # exact draws by the inverse CDF
    # every number of Newton steps a coordinate may be given in burn-in; then the further steps of a fit with floors
    for steps, more in [(k, 0) for k in sparse.STEP_CHOICES] + [(1, sparse.FLOOR_STEPS - 1)]:
        moved, acceptance = _one_update(y, t, theta, start, seed=1 + steps + 7 * more, g=g, steps=steps, more=more)
        assert 0.3 < acceptance < 1.0, steps
        assert stats.kstest(moved, lambda q: np.interp(q, grid, cdf)).pvalue > 0.01, (steps, more)
        if more:   # the further steps move coordinates that the first left in place
            again, _ = _one_update(y, t, theta, start, seed=1 + steps + 7 * more, g=g, steps=steps)
            assert np.mean(moved == start) < 0.6 * np.mean(again == start)
    # the test can fail: the proposal alone (every step accepted) is not the conditional
    block = _item_block(y, t, g, 1)
    centre, scale, wide = kernel._proposal(-1.0, float(y.sum()), block[6][0], float(t.sum()), 0, t.size, block[1],
                                          block[2], block[3], block[4], theta, np.exp(theta),
                                          float(np.abs(theta).max()), sparse.NEWTON_STEPS, g > 0)
    assert wide == (rate < g)
    proposed = centre + scale * rng.standard_t(sparse.NU, 20_000)
    assert stats.kstest(proposed, lambda q: np.interp(q, grid, cdf)).pvalue < 1e-3


@pytest.mark.parametrize("g, rate", [(0.0, 0.6), (0.25, 0.6), (0.25, 0.05)])
def test_further_steps_equal_separate_updates_with_the_same_numbers(g, rate):
    """The further steps of a fit with floors (``extra``) are the same Markov kernel as that many separate updates:
    with the same random numbers the values agree exactly (the proposal does not depend on the current value)."""
    rng = np.random.default_rng(2)
    theta = rng.normal(size=12)
    t = np.array([1, 3, 0, 2, 1, 1, 4, 0, 1, 2, 1, 3])
    y = rng.binomial(t, rate)
    n = 500
    start = rng.normal(0.0, 1.5, n)
    draws = [(rng.standard_t(sparse.NU, n), 1.0 - rng.random(n), rng.random(n)) for _ in range(3)]
    block, steps = _item_block(y, t, g, n), np.ones(n, dtype=np.int64)
    together, apart = start.copy(), start.copy()
    kernel.update_block(together, -1.0, block, theta, *draws[0], sparse.NU, 0, -1, steps, None, True,
                       np.stack([row for d in draws[1:] for row in d]))
    for d in draws:
        kernel.update_block(apart, -1.0, block, theta, *d, sparse.NU, 0, -1, steps, None, True, None)
    assert np.array_equal(together, apart)
    assert np.mean(together != start) > 0.9


def test_shift_move_keeps_differences_and_draws_the_common_level_exactly():
    rng = np.random.default_rng(2)
    theta, b = rng.normal(3.0, 1.0, 7), rng.normal(3.0, 1.0, 11)
    totals = []
    for z in rng.standard_normal(4000):
        t2, b2 = theta.copy(), b.copy()
        kernel.shift(t2, b2, z)
        np.testing.assert_allclose(t2[:, None] - b2[None, :], theta[:, None] - b[None, :], atol=1e-12)
        totals.append(t2.sum() + b2.sum())
    # given the differences the sum is N(0, M + N) whatever the state it started from
    assert stats.kstest(np.array(totals) / np.sqrt(18), "norm").pvalue > 0.01


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-40, 40), st.integers(1, 80), st.integers(0, 80), st.sampled_from([0.0, 0.3])),
                min_size=1, max_size=30), st.floats(-30, 30))
def test_cell_sum_equals_the_direct_log_likelihood(cells, x):
    other = np.array([c[0] for c in cells])
    tt = np.array([float(c[1]) for c in cells])
    yy = np.minimum([float(c[2]) for c in cells], tt)
    gg = np.array([c[3] for c in cells])
    idx = np.arange(len(cells))
    eta = x + other
    log_p = np.logaddexp(np.log(gg + 1e-300), np.log1p(-gg) - np.logaddexp(0, -eta))
    plain = gg == 0
    # up to terms constant in x: −T softplus(η) where g = 0 (the caller adds Y·η), else Y log p − (T − Y) softplus
    direct = float((-tt * np.logaddexp(0, eta))[plain].sum()
                   + (yy * log_p - (tt - yy) * np.logaddexp(0, eta))[~plain].sum())
    for safe in (True, False):
        got = sums._softplus_sum(x, 1.0, 0, len(cells), idx, yy, tt, gg, np.exp(other), other, safe, bool(gg.any()))
        assert got == pytest.approx(direct, rel=1e-11, abs=1e-9)


def _small(seed=5, m=6, n=20, k=3):
    rng = np.random.default_rng(seed)
    trials = rng.integers(0, k + 1, (m, n))
    trials[:, 0] = k
    counts = rng.binomial(trials, 1 / (1 + np.exp(-rng.normal(size=(m, 1)) + rng.normal(size=(1, n)))))
    return ResponseMatrix([f"m{j}" for j in range(m)], [f"q{i}" for i in range(n)], counts, k, trials)


@pytest.mark.parametrize("guessing", [0.0, "mixed"])
def test_gibbs_agrees_with_the_joint_and_collapsed_routes(guessing):
    from benchmeasure.irt.fit import fit_1pl

    matrix = _small()
    g = np.where(np.arange(20) % 4 == 3, 0.25, 0.0) if guessing == "mixed" else 0.0   # mixed: every 4th item
    fits = {route: fit_1pl(matrix, guessing=g, seed=1, chains=2, tune=300, draws=1500, route=route)
            for route in ("gibbs", "joint", "collapsed")}
    g = fits["gibbs"]
    assert g.diagnostics["route"] == "gibbs" and g.diagnostics["gibbs"]["acceptance_b"] > 0.5
    assert g.diagnostics["max_r_hat"] < 1.01
    gb, gt = g.draws("b"), g.draws("theta")
    for other in ("joint", "collapsed"):
        o = fits[other]
        for mean, sd, ess, omean, osd, oess in ((g.b_mean, g.b_sd, g.ess_bulk, o.b_mean, o.b_sd, o.ess_bulk),
                                                (g.theta_mean, g.theta_sd, g.theta_ess_bulk, o.theta_mean,
                                                 o.theta_sd, o.theta_ess_bulk)):
            z = np.abs(mean - omean) / np.sqrt(sd**2 / ess + osd**2 / oess)
            assert z.max() < 4.5, (other, z.max())
            assert np.mean(sd / osd) == pytest.approx(1.0, abs=0.06), other
        for draws, odraws in ((gb, o.draws("b")), (gt, o.draws("theta"))):
            for q in (0.05, 0.95):
                diff = np.quantile(draws, q, axis=0) - np.quantile(odraws, q, axis=0)
                assert np.mean(np.abs(diff)) < 0.12 * np.mean(np.std(odraws, axis=0)), (other, q)


def test_same_seed_same_draws_whatever_the_cores():
    data = sparse.SparseData(_small(7).counts, _small(7).trials)
    one = chains.run_chains(data, chains=3, tune=5, draws=20, seed=9, cores=1)
    two = chains.run_chains(data, chains=3, tune=5, draws=20, seed=9, cores=2)
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])


def test_auto_picks_gibbs_only_when_holes_leave_few_shared_integrals():
    from benchmeasure.irt.plan import FitSettings, plan_fit

    def pick_route(matrix, settings, g, fixed_b):
        return plan_fit(matrix, settings, g, fixed_b)

    rng = np.random.default_rng(3)
    m, n = 40, 600
    trials = (rng.random((m, n)) > 0.5).astype(int)                            # random holes: no column shared
    sparse = ResponseMatrix([f"m{j}" for j in range(m)], [f"q{i}" for i in range(n)], trials, 1, trials)
    assert chains.prefers_gibbs(trials, trials, 1)[0]
    assert pick_route(sparse, FitSettings(), 0.0, None).route == "gibbs"
    assert pick_route(sparse, FitSettings(), 0.25, None).route == "gibbs"     # with guessing too
    assert pick_route(_small(), FitSettings(), 0.0, None).route == "collapsed"     # small: collapsed is quick
    planned = np.ones((m, n), dtype=int)
    planned[: m // 2, n // 2:] = 0                                           # two trials columns only
    blocks = ResponseMatrix(sparse.models, sparse.items, trials * planned, 1, planned)
    assert not chains.prefers_gibbs(blocks.counts, planned, 1)[0]
    assert pick_route(blocks, FitSettings(), 0.0, None).route == "collapsed"
    assert pick_route(sparse, FitSettings(sampler="pymc"), 0.0, None).route == "collapsed"   # gibbs is not NUTS
    assert pick_route(sparse, FitSettings(route="collapsed"), 0.0, None).route == "collapsed"


def test_fit_command_runs_the_gibbs_route_and_feeds_diagnose_and_posterior_metrics(tmp_path):
    from benchmeasure.core.matrix_holes import write_counts_and_trials

    matrix = _small(11, m=8, n=30)
    path = tmp_path / "m.csv"
    write_counts_and_trials(matrix.models, matrix.items, matrix.counts, matrix.trials, path)
    out = tmp_path / "fit"
    result = run_script("fit_irt.py", path, "--n-trials", 3, "--allow-missing", "--route", "gibbs", "--chains", 2,
                        "--tune", 100, "--draws", 400, "--seed", 4, "--save-posterior", "--output-dir", out)
    assert result.returncode == 0, result.stderr
    assert "blocked Gibbs" in result.stderr and "gibbs route" in result.stderr
    record = json.loads((out / "diagnostics.json").read_text())
    assert record["settings"]["route"] == "gibbs" and record["gibbs"]["burn_in_sweeps"] == 100
    shown = run_script("diagnose_benchmark.py", out / "difficulty.csv", "--json")
    assert shown.returncode == 0, shown.stderr
    metrics = run_script("posterior_metrics.py", out / "posterior.zarr", "--json", "--replicates", 20)
    assert metrics.returncode == 0, metrics.stderr
    assert json.loads(metrics.stdout)["metrics"]


@pytest.mark.parametrize("extra, fragment", [
    (("--method", "map"), "--route gibbs samples the posterior"),
    (("--sampler", "pymc"), "--route gibbs runs its own Gibbs sampler"),
    (("--fixed-difficulties", "FIXED"), "the gibbs route samples every difficulty"),
    (("--observation", "beta-binomial"), "runs on the joint route"),
])
def test_bad_settings_for_the_gibbs_route_are_one_error_line(tmp_path, extra, fragment):
    from benchmeasure.core.matrix_holes import write_counts_and_trials

    matrix = _small(12)
    path = tmp_path / "m.csv"
    write_counts_and_trials(matrix.models, matrix.items, matrix.counts, matrix.trials, path)
    fixed = tmp_path / "fixed.csv"
    fixed.write_text("item,b_mean\nq0,0.5\nq1,-0.2\n")
    extra = [fixed if value == "FIXED" else value for value in extra]
    result = run_script("fit_irt.py", path, "--n-trials", 3, "--allow-missing", "--route", "gibbs", *extra,
                        "--output-dir", tmp_path / "out")
    assert_rejected(result, fragment)
    assert not (tmp_path / "out").exists()


def test_fit_command_on_the_gibbs_route_matches_brute_force(tmp_path):
    """The 2 × 3 matrix with K from 1 to 3 and an absent cell: the gibbs route's posterior means and sds of b equal
    a brute-force 23⁵-point grid over all five parameters (an independent computation)."""
    import csv

    from benchmeasure.core.matrix_holes import write_counts_and_trials

    counts = np.array([[2, 1, 0], [0, 3, 1]])
    trials = np.array([[3, 1, 0], [2, 3, 2]])
    matrix = tmp_path / "m.csv"
    write_counts_and_trials(["a", "b"], ["q0", "q1", "q2"], counts, trials, matrix)
    out = tmp_path / "fit"
    result = run_script("fit_irt.py", matrix, "--n-trials", 3, "--allow-missing", "--route", "gibbs", "--chains", 2,
                        "--tune", 200, "--draws", 5000, "--seed", 2, "--output-dir", out)
    assert result.returncode == 0, result.stderr
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
    means = np.array([float((w * x).sum()) for x in grids[2:]])
    sds = [float(np.sqrt((w * (x - mu) ** 2).sum())) for x, mu in zip(grids[2:], means)]
    mcse = np.array(b_sd) / np.sqrt([float(r["ess_bulk"]) for r in rows])       # ≈ 0.01 with 10,000 draws
    assert np.all(np.abs(np.array(b_mean) - means) < 4.5 * mcse + 0.005)         # + the grid's own error
    np.testing.assert_allclose(b_sd, sds, rtol=0.04)


def test_cell_sum_keeps_long_products_finite():
    """3,000 cells: the products of 1 + e^(−|η|) and of p pass 1e±250 and are folded into logarithms on the way."""
    rng = np.random.default_rng(8)
    other = rng.normal(0, 3, 3000)
    tt = np.ones(3000)
    yy = (rng.random(3000) < 0.5).astype(float)
    for g in (0.0, 0.3):
        gg = np.full(3000, g)
        eta = 0.2 + other
        log_p = np.logaddexp(np.log(g) if g else -np.inf, np.log1p(-g) - np.logaddexp(0, -eta))
        direct = (float((-tt * np.logaddexp(0, eta)).sum()) if g == 0 else
                  float((yy * log_p - (tt - yy) * np.logaddexp(0, eta)).sum()))
        got = sums._softplus_sum(0.2, 1.0, 0, 3000, np.arange(3000), yy, tt, gg, np.exp(other), other, True, g > 0)
        assert got == pytest.approx(direct, rel=1e-11)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-45, 45), st.integers(1, 9)), min_size=1, max_size=23), st.floats(-45, 45))
def test_plain_kernels_equal_the_direct_sums(cells, x):
    """The four-way kernels of cells without a guessing floor (any length: the remainder loop too) against NumPy:
    Σ T σ, Σ T σ(1 − σ) (the Newton steps), Σ softplus and Σ o (the binary blocks' log density and start)."""
    other = np.array([c[0] for c in cells])
    tt = np.array([float(c[1]) for c in cells])
    idx = np.arange(len(cells), dtype=np.int32)[::-1].copy()   # read through the index, in another order
    eta = x + other[idx]
    sig = 1 / (1 + np.exp(-eta))
    for binary, t in ((True, np.ones_like(tt)), (False, tt)):
        s, info = sums._sums_plain(np.exp(x), 0, len(cells), idx, t, np.exp(other), binary)
        assert s == pytest.approx(float((t * sig).sum()), rel=1e-12, abs=1e-300)
        assert info == pytest.approx(float((t * np.exp(eta - 2 * np.logaddexp(0, eta))).sum()), rel=1e-12,
                                     abs=1e-300)
    for binary, t in ((True, np.ones_like(tt)), (False, tt)):   # Σ T softplus: the product kernels
        if not sums._plain_ok(x, float(np.abs(other).max()), float(t.max())):
            continue   # outside their bound the route uses the general kernel (checked above)
        soft = float((t * np.logaddexp(0, eta)).sum())
        assert sums._softplus_plain(np.exp(x), 0, len(cells), idx, t, np.exp(other), binary) == pytest.approx(
            soft, rel=1e-12, abs=1e-12)
        sum_o, sum_o2, soft2 = sums._sum_and_softplus_plain(np.exp(x), 0, len(cells), idx, t, other, np.exp(other),
                                                             binary)
        assert sum_o == pytest.approx(float(other.sum()), abs=1e-9)
        assert sum_o2 == pytest.approx(float((other ** 2).sum()), rel=1e-12)
        assert soft2 == pytest.approx(soft, rel=1e-12, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-45, 45), st.integers(1, 9)), min_size=1, max_size=23), st.floats(-45, 45),
       st.integers(0, 5))
def test_dense_kernels_equal_the_indexed_ones_bit_for_bit(cells, x, lo):
    """A complete coordinate's cells read in order (``_softplus_dense``, ``_sums_dense``, ``_sums_all``) give the
    very floats the indexed kernels give on indices 0, 1, …: the fast path cannot change a draw. ``lo``: where the
    coordinate's T values start in the block."""
    other = np.array([c[0] for c in cells])
    n = len(cells)
    tt = np.r_[np.full(lo, 7.0), [float(c[1]) for c in cells]].astype(np.float32)
    idx = np.r_[np.zeros(lo), np.arange(n)].astype(np.int32)
    w = np.exp(other)
    for binary in (True, False):
        t = np.ones_like(tt) if binary else tt
        assert sums._sums_dense(np.exp(x), w, t, lo, binary) == sums._sums_plain(np.exp(x), lo, lo + n, idx, t, w,
                                                                                    binary)
        if sums._plain_ok(x, float(np.abs(other).max()), float(t.max())):
            sum_o, sum_o2, soft = sums._sum_and_softplus_plain(np.exp(x), lo, lo + n, idx, t, other, w, binary)
            assert sums._softplus_dense(np.exp(x), w, t, lo, binary) == soft
            assert sums._sums_all(other) == (sum_o, sum_o2)


@pytest.mark.parametrize("n_trials, holes", [(1, 0.0), (4, 0.0), (1, 0.3), (3, 0.1)])
def test_complete_rows_and_columns_read_in_order_give_the_same_chains(n_trials, holes):
    """The chains with complete rows and columns read in order (the default) equal, draw for draw, the chains that
    read every coordinate through its cells' indices; with holes, some rows and columns kept complete."""
    rng = np.random.default_rng(11)
    m, n = 14, 60
    t = np.full((m, n), n_trials)
    if holes:
        t[rng.random((m, n)) < holes] = 0
        t[:3] = n_trials
        t[:, :5] = n_trials
    y = rng.binomial(t, 1 / (1 + np.exp(-(rng.normal(0, 1.5, m)[:, None] - rng.normal(0, 1.5, n)[None, :]))))
    data = sparse.SparseData(y, t)
    fast = chains.run_chains(data, chains=2, tune=220, draws=30, seed=4, cores=1)
    indexed = chains.run_chains(data, chains=2, tune=220, draws=30, seed=4, cores=1, dense=False)
    assert np.array_equal(fast[0], indexed[0]) and np.array_equal(fast[1], indexed[1])
    assert fast[2]["acceptance_b"] == indexed[2]["acceptance_b"] > 0.5


def test_product_kernels_fold_long_products_into_logarithms():
    """5,000 cells with factors (1 + e^η)^T up to the kernels' bound (T_max·|η| < 230): the running products pass
    RESCALE many times and stay finite; the sums equal the direct ones, for T = 1 and for T up to 9."""
    rng = np.random.default_rng(9)
    idx = np.arange(5000, dtype=np.int32)
    for t_max in (1, 9):
        bound = sums.PLAIN_BOUND / t_max
        other = rng.uniform(-bound / 2, bound / 2, 5000)
        tt = rng.integers(1, t_max + 1, 5000).astype(np.float32)
        for x in (-0.49 * bound, 0.0, 0.49 * bound):
            assert sums._plain_ok(x, np.abs(other).max(), float(t_max))
            direct = float((tt * np.logaddexp(0, x + other)).sum())
            got = sums._softplus_plain(np.exp(x), 0, 5000, idx, tt, np.exp(other), t_max == 1)
            assert got == pytest.approx(direct, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-40, 40), st.integers(0, 1), st.sampled_from([0.0, 0.2, 0.25, 0.5])),
                min_size=1, max_size=30), st.floats(-30, 30))
def test_floor_kernels_equal_the_general_ones(cells, x):
    """Binary cells with guessing floors (some 0): the Newton sums and the log density of the floor kernels equal
    the general kernels' (the reference checked against NumPy above)."""
    other = np.array([c[0] for c in cells])
    yy = np.array([float(c[1]) for c in cells])
    gg = np.array([c[2] for c in cells])
    tt = np.ones(len(cells))
    idx = np.arange(len(cells), dtype=np.int32)
    yplain = float(yy[gg == 0].sum())
    w = np.exp(other)
    eta = x + other
    log_sig, log_1m = -np.logaddexp(0, -eta), -np.logaddexp(0, eta)
    with np.errstate(divide="ignore"):
        log_p = np.logaddexp(np.log(gg), np.log1p(-gg) + log_sig)
        floored = np.exp(np.log1p(-gg) + log_sig + log_1m - log_p)       # (1 − g)σ(1 − σ)/p, no cancellation
    sig = np.exp(log_sig)
    score = yplain + float(np.where(gg == 0, -sig, yy * floored - (1 - yy) * sig).sum())
    info = float(np.where(gg == 0, np.exp(log_sig + log_1m), floored * sig).sum())
    s, i = sums._floor_sums_binary(np.exp(x), 0, len(cells), idx, yy, gg, w)
    assert yplain + s == pytest.approx(score, rel=1e-9, abs=1e-9)
    assert i == pytest.approx(info, rel=1e-9, abs=1e-300)
    # the general kernel (σ(1 − σ) cancels near σ = 1) agrees where it is accurate
    general_score, _ = sums._pass(x, 1.0, yplain, 0, len(cells), idx, yy, tt, gg, w, other, True, True)
    assert yplain + s == pytest.approx(general_score, rel=1e-6, abs=1e-6)
    general = sums._softplus_sum(x, 1.0, 0, len(cells), idx, yy, tt, gg, w, other, True, True)
    assert sums._floor_logf_binary(np.exp(x), 0, len(cells), idx, yy, gg, w) == pytest.approx(general, rel=1e-11,
                                                                                                abs=1e-9)
    # the one pass that also sums the start's statistics: the same log density, Σ o, Σ o², Σ g
    sum_o, sum_o2, sum_g, fused = sums._floor_sum_and_logf_binary(np.exp(x), 0, len(cells), idx, yy, gg, other, w)
    assert fused == pytest.approx(general, rel=1e-11, abs=1e-9)
    assert (sum_o, sum_o2, sum_g) == pytest.approx((other.sum(), (other ** 2).sum(), gg.sum()), rel=1e-12, abs=1e-9)
