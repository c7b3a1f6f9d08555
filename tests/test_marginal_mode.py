"""fit_irt.py --method map: the marginal posterior mode of b (benchmeasure/irt/routes/map/mode.py, issue 15 item 13).

Checked against an independent computation: the marginal log posterior of b evaluated with a plain fine
trapezoid over θ (not the quadrature module's grid) and maximized by Nelder–Mead; and against the joint
mode's known shrinkage on a LSAT6-shaped design (many models, five items).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from benchmeasure.irt.routes.map.mode import marginal_mode


def _brute_log_posterior(b, y, k, g):
    theta = np.linspace(-12, 12, 24001)
    log_prior = -0.5 * theta ** 2 - 0.5 * np.log(2 * np.pi)
    p = g + (1 - g) / (1 + np.exp(-(theta[:, None] - b[None, :])))
    total = 0.0
    for row in y:
        log_lik = (row * np.log(p) + (k - row) * np.log1p(-p)).sum(axis=1) + log_prior
        top = log_lik.max()
        total += top + np.log(np.trapezoid(np.exp(log_lik - top), theta))
    return total - 0.5 * b @ b


@pytest.mark.parametrize("g", [0.0, 0.25])
def test_the_mode_maximizes_the_marginal_posterior_computed_independently(g):
    y = np.array([[3, 1, 0], [2, 2, 1], [3, 3, 2], [1, 0, 0]])
    _theta, b, info = marginal_mode(y, 3, g)
    assert info["success"] and info["max_edge_weight"] < 1e-12
    brute = minimize(lambda v: -_brute_log_posterior(v, y, 3, g), b + 0.3, method="Nelder-Mead",
                     options={"xatol": 1e-9, "fatol": 1e-13, "maxiter": 20000})
    np.testing.assert_allclose(b, brute.x, atol=2e-5)


def test_abilities_are_each_models_mode_given_b():
    y = np.array([[3, 1, 0], [2, 2, 1], [3, 3, 2], [1, 0, 0]])
    theta, b, _ = marginal_mode(y, 3)
    for j in range(len(y)):
        def f(t, j=j):
            p = 1 / (1 + np.exp(-(t - b)))
            return -(y[j] * np.log(p) + (3 - y[j]) * np.log1p(-p)).sum() + 0.5 * t * t
        assert theta[j] == pytest.approx(minimize(lambda v: f(v[0]), [0.0], tol=1e-12).x[0], abs=1e-6)


def _joint_mode(y):
    """The joint posterior mode (θ, b) of the 1PL with K = 1 and N(0, 1) priors, by L-BFGS (written out here)."""
    m = y.shape[0]

    def objective(v):
        theta, b = v[:m], v[m:]
        eta = theta[:, None] - b[None, :]
        resid = y - 1 / (1 + np.exp(-eta))
        value = -(y * eta - np.logaddexp(0, eta)).sum() + 0.5 * (v @ v)
        return value, np.concatenate([-resid.sum(axis=1), resid.sum(axis=0)]) + v

    x = minimize(objective, np.zeros(m + y.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 5000}).x
    return x[:m], x[m:]


def test_the_marginal_mode_is_not_shrunk_like_the_joint_mode():
    rng = np.random.default_rng(3)
    b_true = np.array([-1.5, -0.5, 0.0, 0.5, 1.5])
    theta = rng.normal(size=2000)
    y = rng.binomial(1, 1 / (1 + np.exp(-(theta[:, None] - b_true[None, :]))))
    _, b_marginal, _ = marginal_mode(y, 1)
    _, b_joint = _joint_mode(y)
    spread = np.ptp
    # the joint mode pulls the outer items toward 0; the marginal mode keeps the spread of the truth
    assert spread(b_joint) < spread(b_marginal)
    assert abs(spread(b_marginal) - spread(b_true)) < 0.25
