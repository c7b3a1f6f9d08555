"""The marginal posterior mode of the difficulties: ``fit_irt.py --method map``.

The joint mode of (θ, b) is biased toward 0 when a model answers few items: maximizing over every θ_j
along with b rewards shrinking both (LSAT6, five items per person, is up to 2 posterior SD off). Marginal
maximum likelihood avoids this by integrating the abilities out. Here, with the paper's priors
(Appendix C.3: θ_j, b_i ~ Normal(0, 1)), the difficulties' marginal posterior is

    log p(b | Y) = Σ_i log N(b_i; 0, 1) + Σ_j log ∫ N(θ; 0, 1) Π_i Binom(Y_ji | K, p(θ − b_i, g_i)) dθ + const,

and its mode is found by L-BFGS. With holes or K per cell (``prepare --allow-missing``) the trials matrix T
replaces K: an absent cell has T = Y = 0 and adds exactly nothing to a model's integrand (the masked likelihood).
Each model's integral is one-dimensional and is computed on the uniform
trapezoid grid of :mod:`benchmeasure.irt.routes.collapsed.quadrature` (the same grid and error bound as the collapsed
sampler and the anchored fits: relative error near 1e-17, so the mode is exact for this model to
optimizer tolerance). The grid is shared by all models, so the log-likelihood at every (model, node) is two
matrix products, and the gradient is two more: d/db_i = E[∂ℓ/∂b_i | b, Y_j] summed over models.

The abilities reported beside this b are each model's posterior mode given b (one-dimensional Newton from
the best grid node): the scale b defines.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.irt.routes.collapsed.quadrature import make_grid


def _log_probs(eta: np.ndarray, g: np.ndarray):
    """log p, log(1 − p) and their derivatives in η, for p = g + (1 − g)·σ(η) (shapes of ``eta``)."""
    log_sig = -np.logaddexp(0.0, -eta)
    log_one_minus_sig = -np.logaddexp(0.0, eta)
    sig = np.exp(log_sig)
    if not np.any(g):
        return log_sig, log_one_minus_sig, 1.0 - sig, -sig
    log_g = np.log(np.where(g > 0, g, 1.0))
    log_p = np.where(g > 0, np.logaddexp(log_g, np.log1p(-g) + log_sig), log_sig)
    log_q = np.log1p(-g) + log_one_minus_sig
    dp = (1.0 - g) * sig * (1.0 - sig)  # dp/dη
    return log_p, log_q, dp * np.exp(-log_p), -dp * np.exp(-log_q)


def _model_posteriors(y: np.ndarray, k, b: np.ndarray, g: np.ndarray, grid):
    """Per model (M, G): log weight × prior × likelihood at each θ node; and the pieces for the gradient.
    ``k`` the trials: a number, or the (M, N) trials matrix (0 for an absent cell)."""
    eta = grid.nodes[:, None] - b[None, :]  # (G, N)
    log_p, log_q, dlog_p, dlog_q = _log_probs(eta, g[None, :])
    loglik = y @ log_p.T + (k - y) @ log_q.T  # (M, G)
    return loglik + grid.log_weights[None, :], dlog_p, dlog_q


def marginal_mode(counts, n_trials: int, guessing=0.0, *, trials=None,
                  tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray, dict]:
    """(θ, b, info): b the mode of p(b | Y) with θ integrated out, θ each model's mode given that b.

    ``counts`` (M, N), ``guessing`` a constant or (N,); ``trials`` None (K = ``n_trials`` in every cell) or the
    (M, N) trials matrix of a matrix with holes (0 absent, ≤ ``n_trials`` otherwise). ``info`` holds the
    optimizer's record and the largest normalized weight at the grid's two ends (should be ~0: nothing
    beyond the grid).
    """
    from scipy.optimize import minimize

    y = np.asarray(counts, dtype=float)
    n_items = y.shape[1]
    k = float(n_trials) if trials is None else np.asarray(trials, dtype=float)
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (n_items,)).copy()
    grid = make_grid(n_items, n_trials)

    def objective(b):
        a, dlog_p, dlog_q = _model_posteriors(y, k, b, g, grid)
        top = a.max(axis=1, keepdims=True)
        w = np.exp(a - top)
        total = w.sum(axis=1, keepdims=True)
        log_marg = (top + np.log(total)).sum()
        w /= total  # (M, G) posterior weights of θ per model
        # ∂ℓ_ji/∂b_i = −∂ℓ_ji/∂η = −(Y_ji dlog p + (K − Y_ji) dlog q)
        # nodes where no model has weight above 1e-18 change the gradient by less than that: skip them
        used = w.max(axis=0) > 1e-18
        w, dlog_p, dlog_q = w[:, used], dlog_p[used], dlog_q[used]
        right, wrong = y.T @ w, (k - y).T @ w  # (N, G'): expected correct / wrong counts at each node
        grad = -((right * dlog_p.T).sum(axis=1) + (wrong * dlog_q.T).sum(axis=1))
        value = log_marg - 0.5 * b @ b
        return -value, -(grad - b)

    start = np.zeros(n_items)
    opt = minimize(objective, start, jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "ftol": 1e-15, "gtol": tol * max(1.0, n_items) ** 0.5})
    b = opt.x
    a, _, _ = _model_posteriors(y, k, b, g, grid)
    edge = np.exp(np.maximum(a[:, 0], a[:, -1]) - (a.max(axis=1) + np.log(np.exp(a - a.max(axis=1)[:, None])
                                                                             .sum(axis=1))))
    theta = _ability_modes(y, k, b, g, grid.nodes[np.argmax(a, axis=1)])
    info = {"objective": "marginal posterior of b (theta integrated out by quadrature)",
            "iterations": int(opt.nit), "evaluations": int(opt.nfev), "success": bool(opt.success),
            "message": str(opt.message), "max_abs_gradient": float(np.max(np.abs(opt.jac))),
            "grid_nodes": int(grid.size), "max_edge_weight": float(edge.max())}
    return theta, b, info


def _ability_modes(y, k, b, g, start, iterations: int = 50):
    """Each model's posterior mode of θ given b (Newton on a strictly concave 1-D function when g = 0)."""
    theta = np.asarray(start, dtype=float).copy()
    for _ in range(iterations):
        eta = theta[:, None] - b[None, :]
        _, _, dlog_p, dlog_q = _log_probs(eta, g[None, :])
        grad = (y * dlog_p + (k - y) * dlog_q).sum(axis=1) - theta
        h = 1e-5  # second derivative by a central difference of the exact gradient
        e2 = eta + h
        _, _, dp2, dq2 = _log_probs(e2, g[None, :])
        grad2 = (y * dp2 + (k - y) * dq2).sum(axis=1) - (theta + h)
        curvature = np.minimum((grad2 - grad) / h, -1e-6)
        step = -grad / curvature
        theta += np.clip(step, -1.0, 1.0)
        if np.max(np.abs(step)) < 1e-12:
            break
    return theta
