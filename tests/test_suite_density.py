"""The suite's compiled correlated-abilities density (suite/density.py) is the PyMC model it replaces.

* at random points the log density (up to one constant), its gradient and the stored draws (θ, R, s) equal those
  of :func:`benchmeasure.suite.mirt_collapsed.build_collapsed_model` (partial coordinates, the means integrated
  out), for every number of non-centred directions, both kinds of scales, holes and K per cell;
* the gradient agrees with central finite differences of the compiled density itself;
* fit_correlated samples it by default (no PyTensor compilation) and the same seed gives the same draws.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pymc")


def _suite(models=8, benchmarks=3, per=5, seed=1):
    rng = np.random.default_rng(seed)
    which = np.repeat(np.arange(benchmarks), per)
    trials = np.where(rng.random((models, benchmarks * per)) < 0.2, 0,
                      rng.integers(1, 4, size=(models, benchmarks * per)))
    theta = rng.normal(size=(models, benchmarks)) + np.arange(benchmarks)
    b = rng.normal(size=benchmarks * per)
    counts = rng.binomial(trials, 1.0 / (1.0 + np.exp(-(theta[:, which] - b))))
    return counts, trials, which


def _forward_transform(model):
    """PyMC's own transform of R's Cholesky factor into its value variable, compiled once per model (``.eval()``
    compiles a function on every call: about 1 s each, 12 calls per case)."""
    import pytensor
    import pytensor.tensor as pt

    rv = model["chol_corr"]
    root = pt.matrix("root")
    forward = pytensor.function([root], model.rvs_to_transforms[rv].forward(root), mode="FAST_COMPILE")
    return forward, model.rvs_to_values[rv].name


def _pymc_point(transform, z, blocks):
    """The PyMC model's value variables at our coordinates z: R's Cholesky factor through PyMC's own transform
    (:func:`_forward_transform`)."""
    point, off = {}, 0
    for name, shape in blocks:
        size = int(np.prod(shape))
        point[name] = z[off:off + size].reshape(shape)
        off += size
    ours = point.pop("chol_corr")
    b = round((1 + np.sqrt(1 + 8 * ours.size)) / 2)
    root = np.zeros((b, b))
    k = 0
    for i in range(b):
        root[i, :i] = ours[k:k + i]
        k += i
        root[i, i] = 1.0
        root[i] /= np.linalg.norm(root[i])
    forward, name = transform
    point[name] = forward(root)
    return point, name


@pytest.mark.parametrize("scales", ["half-normal", "unit"])
def test_density_gradient_and_draws_are_the_pymc_models(scales):
    from benchmeasure.suite.coordinates import pilot_basis
    from benchmeasure.suite.density import coordinate_names, suite_density
    from benchmeasure.suite.mirt_collapsed import benchmark_data, build_collapsed_model

    counts, trials, which = _suite()
    t, _, _ = pilot_basis(counts, trials, which, 3)
    data = benchmark_data(counts, trials, which, 3)
    rng = np.random.default_rng(7)
    for n_weak in (0, 1, 3):
        model, _ = build_collapsed_model(counts, trials, which, 3, scales=scales, means="integrated",
                                         parametrization="partial", basis=(t, n_weak), data=data)
        density = suite_density(data, (t, n_weak), n_models=8, eta=2.0, scales=scales, scale_sd=1.0,
                                mean_sd=3.0)
        blocks = coordinate_names(8, 3, n_weak, scales == "half-normal")
        assert density.n_dim == sum(int(np.prod(s)) for _, s in blocks)
        outputs = model.replace_rvs_by_values([model["theta"], model["corr"]]
                                              + ([model["scale"]] if scales == "half-normal" else []))
        # the graph's log density, its gradient and the stored variables in one function (what compile_logp,
        # compile_dlogp and compile_fn compile one by one): their shared terms are rewritten once
        graph = model.compile_fn([model.logp(jacobian=True), model.dlogp(jacobian=True), *outputs],
                                 inputs=model.value_vars, on_unused_input="ignore", mode="FAST_COMPILE")
        names = [v.name for v in model.value_vars]
        transform = _forward_transform(model)
        offsets = []
        for z in rng.uniform(-1.5, 1.5, size=(4, density.n_dim)):
            point, corr_name = _pymc_point(transform, z, blocks)
            value, grad = density.logp(z)
            their_logp, their_grad, *stored = graph(point)
            offsets.append(value - float(their_logp))
            theirs = dict(zip(names, np.split(np.asarray(their_grad),
                                              np.cumsum([np.size(point[n]) for n in names])[:-1])))
            # PyMC fills R's Cholesky rows with the same numbers in another order (a permutation, so the same
            # density): match them by value
            order = [int(np.argmin(np.abs(z[:3] - y))) for y in point[corr_name]]
            assert sorted(order) == [0, 1, 2]
            np.testing.assert_allclose(z[:3][order], point[corr_name], rtol=1e-12)
            np.testing.assert_allclose(grad[:3][order], theirs[corr_name], rtol=1e-8, atol=1e-8)
            off = 3
            for name, shape in blocks[1:]:
                size = int(np.prod(shape))
                np.testing.assert_allclose(grad[off:off + size], theirs[name], rtol=1e-8, atol=1e-8)
                off += size
            expected = np.concatenate([np.ravel(a) for a in stored])
            np.testing.assert_allclose(density.expand(z), expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(offsets, offsets[0], atol=1e-8)


def test_gradient_is_the_compiled_densitys_own_slope():
    from benchmeasure.suite.coordinates import pilot_basis
    from benchmeasure.suite.density import suite_density
    from benchmeasure.suite.mirt_collapsed import benchmark_data

    counts, trials, which = _suite(models=7, benchmarks=4, per=4, seed=3)
    t, n_weak, _ = pilot_basis(counts, trials, which, 4)
    data = benchmark_data(counts, trials, which, 4)
    rng = np.random.default_rng(2)
    for r in sorted({0, 2, int(n_weak), 4}):
        density = suite_density(data, (t, r), n_models=7, eta=1.5, scales="half-normal", scale_sd=0.7, mean_sd=2.0)
        z = rng.uniform(-1.0, 1.0, density.n_dim)
        _, grad = density.logp(z)
        step = 1e-6
        slope = np.array([(density.logp(z + step * e)[0] - density.logp(z - step * e)[0]) / (2 * step)
                          for e in np.eye(density.n_dim)])
        np.testing.assert_allclose(grad, slope, rtol=1e-6, atol=1e-6)
