"""The partial coordinates of the suite's abilities (suite/coordinates.py): the same posterior, other coordinates.

* the model's log density in the partial coordinates equals the centred model's at the same θ plus the map's log
  Jacobian, for every number of non-centred directions and an arbitrary (not the pilot's) basis; the map's
  inverse gives back θ;
* the pilot basis finds the directions the data resolve (a one-factor suite: one strong direction), and a model
  with no answer in a benchmark does not break it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("nutpie")


def _suite(rng, models=7, per=4, benchmarks=3):
    trials = np.where(rng.random((models, per * benchmarks)) < 0.2, 0,
                      rng.integers(1, 3, size=(models, per * benchmarks)))
    return rng.binomial(trials, 0.6), trials, np.repeat(np.arange(benchmarks), per)


def _compiled(model, outputs):
    return model.compile_fn(model.replace_rvs_by_values(outputs), inputs=model.value_vars, mode="FAST_COMPILE",
                            point_fn=True, on_unused_input="ignore")


def test_the_partial_density_is_the_centred_one_plus_the_jacobian():
    from benchmeasure.suite.coordinates import helmert, pilot_basis, to_coordinates
    from benchmeasure.suite.mirt_collapsed import build_collapsed_model

    warnings.filterwarnings("ignore", category=UserWarning)
    rng = np.random.default_rng(3)
    counts, trials, which = _suite(rng)
    models, benchmarks = counts.shape[0], 3
    h = helmert(models)
    assert np.allclose(h @ h.T, np.eye(models - 1)) and np.allclose(h.sum(axis=1), 0.0)
    centred, _ = build_collapsed_model(counts, trials, which, benchmarks, means="integrated")
    centred_logp = centred.compile_logp(jacobian=False, mode="FAST_COMPILE")
    covariance = _compiled(centred, [centred["corr"], centred["scale"]])
    start = centred.initial_point()
    basis, _, _ = pilot_basis(counts, trials, which, benchmarks)
    basis = basis + 0.3 * rng.normal(size=basis.shape)           # any invertible basis gives the same posterior
    for weak in range(benchmarks + 1):
        partial, _ = build_collapsed_model(counts, trials, which, benchmarks, means="integrated",
                                           parametrization="partial", basis=(basis, weak))
        partial_logp = partial.compile_logp(jacobian=False, mode="FAST_COMPILE")
        theta_of = _compiled(partial, [partial["theta"]])
        for _ in range(2):
            point = {k: rng.normal(scale=0.8, size=np.shape(v)) for k, v in start.items()}
            corr, scale = covariance(point)
            chol = scale[:, None] * np.linalg.cholesky(corr)
            centre, strong, z = to_coordinates(point["theta"], chol, basis, weak)
            there = {k: v for k, v in point.items() if k != "theta"}
            there["theta_centre"] = centre
            if weak < benchmarks:
                there["theta_strong"] = strong
            if weak:
                there["theta_weak"] = z
            inverse = np.linalg.inv(basis)
            lower = np.linalg.cholesky(inverse @ chol @ chol.T @ inverse.T)
            log_jacobian = (models - 1) * np.sum(np.log(np.diag(lower)[benchmarks - weak:]))
            assert np.allclose(theta_of(there)[0], point["theta"], atol=1e-12)
            assert float(partial_logp(there)) == pytest.approx(float(centred_logp(point)) + log_jacobian,
                                                               abs=1e-9)


def test_the_pilot_finds_the_directions_the_data_resolve():
    from benchmeasure.suite.coordinates import pilot_basis

    rng = np.random.default_rng(8)
    models, per, benchmarks = 40, 400, 4
    factor = rng.normal(scale=1.5, size=models)           # one ability shared by every benchmark, nothing else
    which = np.repeat(np.arange(benchmarks), per)
    b = rng.normal(size=per * benchmarks)
    trials = np.ones((models, per * benchmarks), dtype=int)
    counts = rng.binomial(1, 1 / (1 + np.exp(-(factor[:, None] - b[None, :]))))
    basis, weak, values = pilot_basis(counts, trials, which, benchmarks)
    assert weak == benchmarks - 1 and values[0] > 20 and np.all(values[1:] < 2)
    direction = basis[:, 0] / np.linalg.norm(basis[:, 0])
    assert abs(direction @ np.full(benchmarks, 0.5)) > 0.99    # the strong direction is the shared one
    trials[3, which == 2] = 0                                 # a model that answered nothing of benchmark 2
    counts[trials == 0] = 0
    basis, weak, _ = pilot_basis(counts, trials, which, benchmarks)
    assert np.all(np.isfinite(basis)) and weak == benchmarks - 1
