"""The PyMC model: the rotated coordinates are an orthogonal change of variables (same
posterior), and the fused and elementwise likelihoods define the same log density."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pymc")

from benchmeasure.irt.likelihood import log_likelihood
from benchmeasure.irt.model import Rotation, build_model
from benchmeasure.irt.simulate import simulate_counts


@pytest.mark.parametrize("shape", [(2, 2), (3, 7), (12, 40)])
def test_rotation_is_orthogonal_and_maps_z0_to_the_common_shift(shape):
    m, n = shape
    rotation = Rotation(m, n)
    q = rotation.matrix()
    np.testing.assert_allclose(q.T @ q, np.eye(m + n), atol=1e-12)
    np.testing.assert_allclose(q[:, 0], np.full(m + n, 1 / np.sqrt(m + n)), atol=1e-12)
    # z_M is the contrast: every θ moves one way, every b the other
    assert np.all(q[:m, m] > 0) and np.all(q[m:, m] < 0)
    z = np.random.default_rng(0).normal(size=m + n)
    theta, b = rotation.to_stacked(z)
    np.testing.assert_allclose(rotation.from_stacked(theta, b), z, atol=1e-12)


@pytest.mark.parametrize("guessing", [0.0, "per-item"])
def test_every_variant_has_the_same_log_density(guessing):
    m, n, k = 4, 9, 5
    g = np.linspace(0.0, 0.4, n) if guessing == "per-item" else guessing
    rng = np.random.default_rng(3)
    counts = simulate_counts(rng.normal(size=m), rng.normal(size=n), k, seed=4, guessing=g)
    theta = rng.normal(size=m)
    b = rng.normal(size=n)
    z = Rotation(m, n).from_stacked(theta, b)
    # the paper's log posterior up to the binomial coefficient
    expected = (log_likelihood(counts, k, theta[:, None] - b[None, :], g).sum()
                - 0.5 * (theta @ theta + b @ b) - 0.5 * (m + n) * np.log(2 * np.pi))
    for parametrization in ("rotated", "direct"):
        for kernel in ("fused", "pytensor"):
            model = build_model(counts, k, g, parametrization=parametrization, kernel=kernel)
            point = {"z": z} if parametrization == "rotated" else {"theta": theta, "b": b}
            value = model.compile_logp()(point)
            assert value == pytest.approx(expected, rel=1e-10), (parametrization, kernel)
            if parametrization == "rotated":
                import pytensor

                outs = model.replace_rvs_by_values([model["theta"], model["b"]])
                out = pytensor.function(model.value_vars, outs)(z)
                np.testing.assert_allclose(out[0], theta, atol=1e-12)
                np.testing.assert_allclose(out[1], b, atol=1e-12)


def test_model_coordinates_use_the_ids():
    counts = np.array([[1, 0, 2], [2, 2, 0]])
    model = build_model(counts, 2, models=["a", "b"], items=["x", "y", "z"])
    assert list(model.coords["model"]) == ["a", "b"] and list(model.coords["item"]) == ["x", "y", "z"]
