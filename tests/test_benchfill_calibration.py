"""Online calibration: quadrature posterior of b given fixed abilities, against a brute-force check."""

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from benchmeasure.benchfill.calibration import annotate, posterior_b


def brute_force(counts, theta, k, g=0.0):
    def density(b):
        p = g + (1 - g) / (1 + np.exp(-(np.asarray(theta) - b)))
        return math.prod(stats.binom.pmf(counts, k, p)) * stats.norm.pdf(b)

    z = integrate.quad(density, -15, 15, limit=200)[0]
    mean = integrate.quad(lambda b: b * density(b), -15, 15, limit=200)[0] / z
    var = integrate.quad(lambda b: (b - mean) ** 2 * density(b), -15, 15, limit=200)[0] / z
    return mean, math.sqrt(var)


@pytest.mark.parametrize("counts,g", [([8, 5, 2, 0], 0.0), ([0, 0, 0, 0], 0.0), ([8, 8, 8, 8], 0.0),
                                      ([7, 4, 3, 1], 0.25)])
def test_posterior_matches_brute_force(counts, g):
    theta = [2.0, 0.5, -0.3, -1.5]
    mean, sd = posterior_b(counts, theta, 8, g)
    ref_mean, ref_sd = brute_force(np.array(counts), theta, 8, g)
    assert mean == pytest.approx(ref_mean, abs=1e-4)
    assert sd == pytest.approx(ref_sd, abs=1e-4)


def test_harder_item_gets_higher_difficulty():
    theta = [1.0, 0.0, -1.0]
    easy, _ = posterior_b([7, 6, 5], theta, 8)
    hard, _ = posterior_b([2, 1, 0], theta, 8)
    assert hard > easy


def test_annotate_normalizes_with_original_scale_and_checks_panel():
    note = annotate({"a": 4, "b": 4}, {"a": 0.0, "b": 0.0}, 8, b_min=-2.0, b_max=2.0)
    assert note.b_mean == pytest.approx(0.0, abs=1e-6)
    assert note.z == pytest.approx(0.5, abs=1e-6)
    assert note.z_sd == pytest.approx(note.b_sd / 4)
    with pytest.raises(ValueError, match="panel mismatch"):
        annotate({"a": 4}, {"a": 0.0, "b": 0.0}, 8, -2.0, 2.0)


def test_rejects_counts_out_of_range():
    with pytest.raises(ValueError):
        posterior_b([9], [0.0], 8)


def test_calibration_and_the_loop_import_without_scipy():
    # docs/benchfill.md: the loop may run where only numpy, openai and the standard library are installed
    import subprocess
    import sys
    from pathlib import Path

    code = """
import importlib.abc, sys
class NoScipy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "scipy":
            raise ImportError("scipy is blocked")
sys.meta_path.insert(0, NoScipy())
import benchmeasure.benchfill.runner, benchmeasure.benchfill.mass_fill
from benchmeasure.benchfill.calibration import annotate
note = annotate({"a": 3, "b": 5}, {"a": 0.0, "b": 1.0}, 8, -2.0, 2.0, 0.25)
print(round(note.z, 6))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    expected = annotate({"a": 3, "b": 5}, {"a": 0.0, "b": 1.0}, 8, -2.0, 2.0, 0.25).z
    assert float(done.stdout) == pytest.approx(expected, abs=1e-6)


def test_item_fit_drops_a_child_that_runs_against_ability_and_keeps_one_that_fits():
    # check-fit's item test with the panel's abilities held fixed (calibration.item_fit, [search] misfit_p)
    from benchmeasure.benchfill.calibration import item_fit

    theta = dict(zip((f"m{j}" for j in range(12)), np.linspace(-1.5, 2.5, 12)))
    rng = np.random.default_rng(5)
    p = {m: 1 / (1 + np.exp(-(t - 0.5))) for m, t in theta.items()}
    fits = {m: int(rng.binomial(32, p[m])) for m in theta}
    reversed_ = {m: 32 - int(rng.binomial(32, p[m])) for m in theta}   # strong models fail, weak ones succeed
    good = item_fit(fits, theta, 32, 0.05)
    bad = item_fit(reversed_, theta, 32, 0.05)
    assert not good["misfit"] and good["reason"] == "" and good["p_value"] > 0.05
    assert bad["misfit"] and bad["against_ability"] and bad["p_value"] < 1e-20 and bad["point_biserial"] < 0
    assert "success rises as ability falls" in bad["reason"] and "below 0.05" in bad["reason"]
    assert set(bad) >= {"p_value", "p_curve", "p_slope", "z_slope", "threshold", "trials", "draws"}
    assert json.loads(json.dumps(bad)) == bad   # a JSON record for the journal, every number finite


def test_item_fit_false_drop_rate_on_children_that_follow_the_1pl():
    # the null: children drawn from the 1PL at the panel's abilities (what the simulated world draws); the check is
    # conservative (posterior predictive), so far fewer than 5 % are dropped at misfit_p = 0.05
    from benchmeasure.benchfill.calibration import item_fit

    theta = dict(zip((f"m{j}" for j in range(12)), np.linspace(-1.5, 2.5, 12)))
    rng = np.random.default_rng(11)
    dropped = 0
    for _ in range(150):
        b = rng.uniform(-2.0, 3.0)
        counts = {m: int(rng.binomial(32, 1 / (1 + np.exp(-(t - b))))) for m, t in theta.items()}
        dropped += item_fit(counts, theta, 32, 0.05)["misfit"]
    assert dropped <= 7   # ≤ 4.7 %; 1.6 % ± 0.3 % of 2,000 such children (bench/bench_benchfill_item_fit.py)
