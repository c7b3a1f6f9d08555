"""Online calibration: quadrature posterior of b given fixed abilities, against a brute-force check."""

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
