"""fit --model 2pl (issue 51 part 3): the 2pl route, its refusals, difficulty.csv's slopes, the LOO comparison, and the
1PL's outputs unchanged by default — through the real command line."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from benchmeasure.irt.plan import FitSettings, SettingsError, plan_fit
from tests.conftest import assert_rejected, run_script


def _write(path, counts):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", *(f"i{j}" for j in range(counts.shape[1]))])
        for m, row in enumerate(counts):
            writer.writerow([f"m{m}", *row])


def _simulated_2pl(seed=3, models=10, items=60, k=4):
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(0, 1, models), rng.normal(0, 1, items), rng.uniform(0.5, 2.0, items)
    p = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
    return rng.binomial(k, p), a


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("twopl")
    counts, a = _simulated_2pl()
    _write(root / "m.csv", counts)
    return root, a


def test_2pl_recovers_slopes_and_compares_with_1pl(small):
    root, a_true = small
    done = run_script("fit_irt.py", root / "m.csv", "--n-trials", 4, "--model", "2pl", "--compare", "1pl",
                      "--chains", 2, "--tune", 300, "--draws", 300, "--seed", 1, "--save-posterior",
                      "--output-dir", root / "fit")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(root / "fit" / "difficulty.csv")))
    assert list(rows[0]) == ["item", "b_mean", "b_sd", "r_hat", "ess_bulk", "a_mean", "a_sd"]
    a_mean = np.array([float(r["a_mean"]) for r in rows])
    assert np.all(a_mean > 0)
    assert np.corrcoef(a_true, a_mean)[0, 1] > 0.6
    record = json.loads((root / "fit" / "diagnostics.json").read_text())
    assert record["model"] == "2pl" and record["settings"]["model"] == "2pl"
    assert record["settings"]["route"] == "2pl"          # --route auto picked the 2pl route
    assert (record["settings"]["tune"], record["settings"]["draws"]) == (300, 300)   # given: they win
    assert "with --model 2pl" in run_script("fit_irt.py", "--help").stdout   # --help names the route's defaults
    assert record["worst_r_hat"] is not None             # convergence over theta, b and a
    loo = record["loo"]
    assert loo["2pl"]["cells"] == 600 and loo["se_diff"] > 0
    assert loo["elpd_diff"] > 0                          # simulated from a 2PL: LOO prefers it
    assert "PSIS-LOO" in done.stderr and "slopes (2PL)" in done.stderr
    # the project's difficulty reader reads b as the location
    from benchmeasure.core.difficulty_file import read_difficulty_column

    column = read_difficulty_column(root / "fit" / "difficulty.csv")
    assert column.column == "b_mean" and np.allclose(column.values, [float(r["b_mean"]) for r in rows])
    # new models scored against this fit's items (score-models reads the slopes; docs/anchored.md), its
    # posterior's paired b and a draws integrated over: the model's answers place it as the fit placed it
    done = run_script("score_models.py", root / "m.csv", "--difficulty", root / "fit" / "difficulty.csv",
                      "--n-trials", 4, "--difficulty-draws", root / "fit" / "posterior.zarr", "--max-draws", 60,
                      "--output", root / "scores.csv", "--quiet")
    assert done.returncode == 0, done.stderr
    scores = list(csv.DictReader(open(root / "scores.csv")))
    fitted = {r["model"]: r for r in csv.DictReader(open(root / "fit" / "ability.csv"))}
    for row in scores:
        gap = abs(float(row["theta_mean"]) - float(fitted[row["model"]]["theta_mean"]))
        assert gap < 2 * float(fitted[row["model"]]["theta_sd"]), (row, fitted[row["model"]])
    settings = json.loads((root / "scores.csv.json").read_text())["settings"]
    assert settings["item_model"] == "2pl" and settings["difficulty_draws_used"] == 60


def test_2pl_refusals(small):
    root, _ = small
    out = root / "refused"
    for flags, fragment in ((("--model", "2pl", "--route", "collapsed"), "--model 2pl"),
                            (("--model", "1pl", "--route", "2pl"), "--model 1pl"),
                            (("--compare", "1pl"), "--compare"),
                            (("--model", "2pl", "--method", "map"), "--method")):
        result = run_script("fit_irt.py", root / "m.csv", "--n-trials", 4, *flags, "--output-dir", out)
        assert_rejected(result, fragment)
        assert not out.exists()


def test_default_fit_unchanged(small):
    root, _ = small
    done = run_script("fit_irt.py", root / "m.csv", "--n-trials", 4, "--chains", 2, "--tune", 100, "--draws", 100,
                      "--seed", 1, "--no-calibrate", "--output-dir", root / "one")
    assert done.returncode == 0, done.stderr
    record = json.loads((root / "one" / "diagnostics.json").read_text())
    assert "model" not in record and "model" not in record["settings"] and "loo" not in record
    header = (root / "one" / "difficulty.csv").read_text().splitlines()[0]
    assert header == "item,b_mean,b_sd,r_hat,ess_bulk"
    assert "fitting the 1PL" in done.stderr


def test_plan_reads_the_declarations():
    from benchmeasure.core.matrix import ResponseMatrix

    matrix = ResponseMatrix(models=["m0", "m1", "m2"], items=["a", "b", "c", "d"],
                            counts=np.ones((3, 4), dtype=np.int64), n_trials=2)
    assert plan_fit(matrix, FitSettings(model="2pl")).route == "2pl"
    assert plan_fit(matrix, FitSettings()).route != "2pl"
    # NUTS settings left unset take the 2pl route's own defaults, resolved once into the plan and recorded; one
    # given explicitly wins; the 1PL keeps the paper's and its record has no such key
    from benchmeasure.irt.plan import PAPER_DEFAULTS
    from benchmeasure.irt.routes import ROUTES

    own = ROUTES["2pl"].defaults
    assert own and set(own) <= set(PAPER_DEFAULTS)
    plan = plan_fit(matrix, FitSettings(model="2pl"))
    assert all(getattr(plan.settings, name) == value for name, value in own.items())
    assert plan.record()["route_defaults"] == list(own)
    explicit = plan_fit(matrix, FitSettings(model="2pl", tune=1000, draws=1000, target_accept=0.95)).record()
    assert (explicit["tune"], explicit["draws"], explicit["target_accept"]) == (1000, 1000, 0.95)
    assert "route_defaults" not in explicit
    paper = plan_fit(matrix, FitSettings()).record()
    assert {name: paper[name] for name in PAPER_DEFAULTS} == PAPER_DEFAULTS and "route_defaults" not in paper
    with pytest.raises(SettingsError, match="fits the 1pl model"):
        plan_fit(matrix, FitSettings(model="2pl", route="joint"))
    with pytest.raises(SettingsError, match="model must be one of"):
        FitSettings(model="3pl")


def test_density_matches_its_gradient_and_the_rotation_keeps_the_model():
    """The compiled 2PL density's gradient is its derivative, in both coordinates; the rotated density at z is the
    direct one at (θ, b) = Q·z (Q orthogonal: the same prior and likelihood), and its stored draws are that (θ, b)."""
    from benchmeasure.irt.model import Rotation
    from benchmeasure.irt.routes.twopl.density import twopl_density

    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, (4, 5))
    k = np.full((4, 5), 3.0)
    k[0, 1], y[0, 1] = 0.0, 0                           # a hole
    for g in (0.0, np.linspace(0.0, 0.3, 5)):
        for slopes in (True, False):
            rotated = twopl_density(y, k, g, models=range(4), items=range(5), slopes=slopes)
            direct = twopl_density(y, k, g, models=range(4), items=range(5), slopes=slopes,
                                   parametrization="direct")
            z = rng.normal(size=rotated.n_dim)
            theta, b = Rotation(4, 5).to_stacked(z[:9])
            assert np.isclose(rotated.logp(z)[0], direct.logp(np.concatenate([theta, b, z[9:]]))[0])
            for d in (rotated, direct):
                _, grad = d.logp(z)
                eps = 1e-6
                numeric = [(d.logp(z + eps * e)[0] - d.logp(z - eps * e)[0]) / (2 * eps) for e in np.eye(d.n_dim)]
                assert np.allclose(grad, numeric, atol=1e-5)
            stored = rotated.expand(z)
            assert np.allclose(stored[:9], np.concatenate([theta, b]))
            if slopes:
                assert np.allclose(stored[9:], np.exp(0.5 * z[9:]))


@pytest.mark.parametrize("case", ["binary", "binary+holes+guessing", "K = 3+holes", "K per cell+holes",
                                  "K per cell+guessing", "tall+small guessing", "1pl"])
def test_density_is_the_pymc_2pl_model(case):
    """The compiled 2PL density (direct coordinates: θ, b, u with log a = 0.5·u) against the PyMC model of
    twopl/model.py, the reference: differences of log density between random points and gradients agree (the
    gradient in u is half the graph's in log a), in every path of the item pass — binary columns and columns of
    one K with absent cells (the logs taken over products of cells, with and without guessing), K per cell (a
    log per cell), and columns of 700 models (g = 0 and g = 0.001), whose products take several blocks. Both
    kernels: the route's (libmvec's exp where it runs) and the scalar one."""
    import dataclasses

    from benchmeasure.irt.routes.twopl.density import twopl_density
    from benchmeasure.irt.routes.twopl.model import SLOPE_SD, build_2pl_model
    from tests.test_compiled_density import _pymc_density

    rng = np.random.default_rng(11)
    m, n = (700, 3) if case.startswith("tall") else (7, 30)
    k = (np.ones((m, n)) if "binary" in case or "tall" in case else np.full((m, n), 3.0) if "K = 3" in case
         else rng.integers(1, 5, (m, n)).astype(float))
    if "holes" in case:
        k[rng.random((m, n)) < 0.2] = 0.0
    g = (np.linspace(0.0, 0.3, n) if "guessing" in case and "small" not in case
         else np.array([0.0, 0.001, 0.001]) if "small" in case else 0.0)
    theta, b, a = rng.normal(0, 1.5, m), rng.normal(0, 1.5, n), np.exp(rng.normal(0, 0.5, n))
    p = g + (1 - g) / (1 + np.exp(-a * (theta[:, None] - b)))
    y = rng.binomial(k.astype(int), p)
    slopes = case != "1pl"
    model = build_2pl_model(y, k, g, models=range(m), items=range(n), slopes=slopes)
    density = twopl_density(y, k, g, models=range(m), items=range(n), slopes=slopes, parametrization="direct")
    reference = _pymc_density(model)
    points = rng.normal(0, 1.2, (4, density.n_dim))
    theirs = []
    for z in points:
        point = {"theta": z[:m], "b": z[m:m + n]}
        if slopes:
            point["log_a"] = SLOPE_SD * z[m + n:]
        value, grad = reference(point)
        if slopes:
            grad = np.concatenate([grad[:m + n], SLOPE_SD * grad[m + n:]])
        theirs.append((value, grad))
    for kernel in (density, dataclasses.replace(density, route="2pl-scalar")):
        ours = [kernel.logp(z) for z in points]
        for (v, g_ours), (rv, g_ref) in zip(ours, theirs):
            np.testing.assert_allclose(v - ours[0][0], rv - theirs[0][0], rtol=1e-10, atol=1e-8)
            np.testing.assert_allclose(g_ours, g_ref, rtol=1e-9, atol=1e-8)


def test_vector_exp_is_exp():
    """libmvec's exp, four values a call and the rest one by one, is exp to within glibc's few ulp — every length
    of tail, and the range the 2PL gives it (exp(−|η|), down to the underflow to 0)."""
    from benchmeasure.irt.vector_exp import AVAILABLE, exp_in_place

    if not AVAILABLE:
        pytest.skip("no libmvec with AVX2 here: the 2pl route runs its scalar exp")
    values = -np.abs(np.random.default_rng(5).normal(0, 8, 1003))
    values[:3] = (0.0, -750.0, -1e-300)
    for n in range(10):
        out = values[:n].copy()
        exp_in_place(out)
        np.testing.assert_allclose(out, np.exp(values[:n]), rtol=1e-15, atol=0)
    out = values.copy()
    exp_in_place(out)
    np.testing.assert_allclose(out, np.exp(values), rtol=1e-15, atol=0)
