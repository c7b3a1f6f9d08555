"""The shared convergence summary: R-hat and bulk ESS equal ArviZ's, vectorized."""

from __future__ import annotations

import numpy as np
import pytest

from benchmeasure.irt.diagnostics import _average_ranks, per_parameter, summarize_diagnostics

xr = pytest.importorskip("xarray")
az = pytest.importorskip("arviz")


def _tree(draws, stats=None):
    groups = {"posterior": xr.Dataset({"b": (("chain", "draw", "item"), draws)},
                                      coords={"item": [f"q{i}" for i in range(draws.shape[2])]})}
    if stats is not None:
        groups["sample_stats"] = xr.Dataset(stats)
    return xr.DataTree.from_dict(groups)


def _ar1(chains, draws, n_params, seed):
    rng = np.random.default_rng(seed)
    rho = rng.uniform(-0.5, 0.98, n_params)
    x = np.zeros((chains, draws, n_params))
    noise = rng.normal(size=x.shape)
    x[:, 0] = noise[:, 0]
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + noise[:, t]
    return x


@pytest.mark.parametrize(("chains", "draws"), [(4, 400), (2, 51), (1, 100), (3, 4), (2, 3)])
def test_r_hat_and_ess_equal_arviz(chains, draws):
    x = _ar1(chains, draws, 40, seed=chains * 1000 + draws)
    x[:, :, 0] = 2.5                        # constant parameter
    x[:, :, 1] = np.round(x[:, :, 1])       # many ties
    if chains > 1:
        x[0, :, 2] += 4.0                   # a stuck chain
    tree = _tree(x)
    ours = per_parameter(tree, "b")
    np.testing.assert_allclose(ours["ess_bulk"], np.asarray(az.ess(tree)["b"].values), rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(ours["r_hat"], np.asarray(az.rhat(tree)["b"].values), rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(ours["mean"], x.mean(axis=(0, 1)))


def test_average_ranks_match_scipy():
    from scipy import stats

    rng = np.random.default_rng(1)
    for _ in range(100):
        rows = rng.integers(0, rng.integers(1, 6), size=(rng.integers(1, 5), rng.integers(1, 12))).astype(float)
        np.testing.assert_array_equal(_average_ranks(rows), stats.rankdata(rows, axis=1))


def test_summary_figures_and_worst_parameters():
    x = _ar1(4, 300, 6, seed=3)
    x[0, :, 4] += 5.0
    diverging = np.zeros((4, 300), dtype=bool)
    diverging[1, 7] = True
    steps = np.full((4, 300), 15)
    tree = _tree(x, {"diverging": (("chain", "draw"), diverging), "n_steps": (("chain", "draw"), steps)})
    summary = summarize_diagnostics(tree, ["b"], sampling_time_s=2.0)
    assert summary["worst_r_hat"] == "b[q4]" and summary["max_r_hat"] > 1.1
    assert summary["divergences"] == 1 and summary["leapfrog_steps_per_draw"] == 15
    assert summary["chains"] == 4 and summary["draws"] == 300
    assert summary["converged"] is False and summary["r_hat_ok"] is False
    assert summary["min_ess_bulk_per_s"] == pytest.approx(summary["min_ess_bulk"] / 2.0)
    assert summary["min_ess_bulk"] == pytest.approx(float(np.min(az.ess(tree)["b"].values)))


# (2, 5) and (3, 9): so few draws that a split chain can lie wholly on one side of a tail quantile (a chain's
# middle draw, left out of the split, was the only one past it): ArviZ counts that indicator as constant
@pytest.mark.parametrize(("chains", "draws"), [(4, 400), (2, 51), (1, 100), (2, 5), (3, 9)])
def test_tail_ess_equals_arviz(chains, draws):
    from benchmeasure.irt.diagnostics import ess_tail

    x = _ar1(chains, draws, 30, seed=7 * chains + draws)
    x[:, :, 1] = np.round(x[:, :, 1])
    expected = np.asarray(az.ess(_tree(x), method="tail", prob=(0.05, 0.95))["b"].values)  # Vehtari et al.'s 5 %, 95 %
    np.testing.assert_allclose(ess_tail(x), expected, rtol=1e-8, equal_nan=True)


@pytest.mark.parametrize(("chains", "draws"), [(4, 1000), (2, 51), (3, 4), (2, 5), (3, 9)])
def test_compiled_pass_equals_the_numpy_reference(chains, draws):
    from benchmeasure.irt.diagnostics import _rhat_and_ess, ess_tail_reference, summarize_draws

    x = _ar1(chains, draws, 50, seed=11 * chains + draws).astype(np.float32)   # stored b draws are float32
    x[:, :, 3] = -1.25
    x[:, :, 4] = np.round(x[:, :, 4] * 2) / 2
    ours = summarize_draws(x, chunk=16)
    r_hat, ess = _rhat_and_ess(x)
    np.testing.assert_allclose(ours["r_hat"], r_hat, rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(ours["ess_bulk"], ess, rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(ours["ess_tail"], ess_tail_reference(x), rtol=1e-10, equal_nan=True)
