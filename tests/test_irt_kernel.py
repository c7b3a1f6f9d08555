"""The fused 1PL log-likelihood kernel: value against the NumPy reference, gradient against
finite differences, the stable fallback far from the posterior, and the PyTensor Op."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from benchmeasure.irt.likelihood import log_likelihood
from benchmeasure.irt.routes.joint.kernel import LoglikData
from benchmeasure.irt.simulate import simulate_counts

M, N, K = 5, 37, 6


def _case(guessing, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=M) * scale
    b = rng.normal(size=N) * scale
    counts = simulate_counts(theta, b, K, seed=seed + 1, guessing=guessing)
    return counts, theta, b


GUESSING_CASES = {
    "none": 0.0,
    "constant": 0.25,
    "per-item": np.where(np.arange(N) % 3 == 0, 0.0, np.linspace(0.05, 0.6, N)),
}


@pytest.mark.parametrize("name", list(GUESSING_CASES))
@pytest.mark.parametrize("scale", [1.0, 3.0, 500.0])
def test_value_matches_numpy_reference(name, scale):
    g = GUESSING_CASES[name]
    counts, theta, b = _case(g, scale=scale)
    data = LoglikData(counts, K, g)
    value, _, _ = data(theta, b)
    reference = log_likelihood(counts, K, theta[:, None] - b[None, :], g).sum()
    assert value == pytest.approx(reference, rel=1e-12, abs=1e-8)


@pytest.mark.parametrize("name", list(GUESSING_CASES))
@pytest.mark.parametrize("scale", [1.0, 500.0])  # 500: the per-cell fallback beyond |η| ≈ 600
def test_gradient_matches_finite_differences(name, scale):
    g = GUESSING_CASES[name]
    counts, theta, b = _case(g, seed=3, scale=scale)
    data = LoglikData(counts, K, g)
    _, grad_theta, grad_b = data(theta, b)
    eps = 1e-6 * max(scale, 1.0)
    for j in range(M):
        step = np.zeros(M)
        step[j] = eps
        fd = (data(theta + step, b)[0] - data(theta - step, b)[0]) / (2 * eps)
        assert fd == pytest.approx(grad_theta[j], rel=1e-5, abs=1e-4 * max(scale, 1.0))
    for i in range(0, N, 5):
        step = np.zeros(N)
        step[i] = eps
        fd = (data(theta, b + step)[0] - data(theta, b - step)[0]) / (2 * eps)
        assert fd == pytest.approx(grad_b[i], rel=1e-5, abs=1e-4 * max(scale, 1.0))


def test_gradient_sums_to_zero_along_the_common_shift():
    # ℓ depends on θ − b only: moving every θ and b together changes nothing
    counts, theta, b = _case(0.2, seed=5)
    _, grad_theta, grad_b = LoglikData(counts, K, 0.2)(theta, b)
    assert grad_theta.sum() + grad_b.sum() == pytest.approx(0.0, abs=1e-8)


@pytest.mark.parametrize("b1", [0.3, 302.5])  # max|θ| + max|b| = 599 (fast path) or 600.5 (fallback)
def test_both_paths_match_the_reference_near_the_switch(b1):
    counts, theta, b = _case(0.0, seed=7)
    theta, b = theta.copy(), b.copy()
    theta[0], b[0], b[1] = 298.0, -301.0, b1
    value, _, _ = LoglikData(counts, K, 0.0)(theta, b)
    reference = log_likelihood(counts, K, theta[:, None] - b[None, :]).sum()
    assert value == pytest.approx(reference, rel=1e-12)


def test_constant_items_stay_finite():
    counts = np.zeros((3, 4), dtype=np.int64)
    counts[:, 0] = K
    value, grad_theta, grad_b = LoglikData(counts, K, 0.0)(np.zeros(3), np.zeros(4))
    assert np.isfinite(value) and np.all(np.isfinite(grad_theta)) and np.all(np.isfinite(grad_b))


@pytest.mark.parametrize("name", list(GUESSING_CASES))
def test_pytensor_op_and_elementwise_graph_agree(name):
    pytensor = pytest.importorskip("pytensor")
    import pytensor.tensor as pt

    from benchmeasure.irt.routes.joint.op import loglik_op, pytensor_loglik

    g = GUESSING_CASES[name]
    counts, theta0, b0 = _case(g, seed=11)
    theta = pt.dvector("theta")
    b = pt.dvector("b")
    fused = loglik_op(counts, K, g)(theta, b)
    plain = pytensor_loglik(counts, K, g, theta, b).sum()
    outs = []
    for expr in (fused, plain):
        grads = pt.grad(expr, [theta, b])
        for mode in ("NUMBA", "FAST_RUN"):
            f = pytensor.function([theta, b], [expr, *grads], mode=mode)
            outs.append(f(theta0, b0))
    for value, grad_theta, grad_b in outs[1:]:
        assert value == pytest.approx(outs[0][0], rel=1e-10)
        np.testing.assert_allclose(grad_theta, outs[0][1], rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(grad_b, outs[0][2], rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("n_trials", [1, 2, 31, 1500])  # 1500: beyond the blocked guessing path
def test_guessing_value_and_gradient_for_any_number_of_trials(n_trials):
    rng = np.random.default_rng(n_trials)
    theta, b = rng.normal(size=4) * 3, rng.normal(size=9) * 3
    g = np.linspace(0.0, 0.5, 9)
    counts = simulate_counts(theta, b, n_trials, seed=2, guessing=g)
    data = LoglikData(counts, n_trials, g)
    value, grad_theta, grad_b = data(theta, b)
    assert value == pytest.approx(log_likelihood(counts, n_trials, theta[:, None] - b[None, :], g).sum(), rel=1e-12)
    eps = 1e-6
    fd = (data(theta, b + eps * np.eye(9)[4])[0] - data(theta, b - eps * np.eye(9)[4])[0]) / (2 * eps)
    assert fd == pytest.approx(grad_b[4], rel=1e-5, abs=1e-4 * n_trials)
    fd = (data(theta + eps * np.eye(4)[1], b)[0] - data(theta - eps * np.eye(4)[1], b)[0]) / (2 * eps)
    assert fd == pytest.approx(grad_theta[1], rel=1e-5, abs=1e-4 * n_trials)
