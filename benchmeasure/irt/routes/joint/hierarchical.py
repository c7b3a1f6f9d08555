"""The joint route's log density under the hierarchical prior, compiled once for nutpie (irt/compiled.py).

The model is :func:`benchmeasure.irt.model.build_model` with ``prior="hierarchical"``, which stays the reference
and runs ``--sampler pymc``, numpyro and the observation models with parameters of their own. This density uses
**the same coordinates as that PyMC graph** (:func:`benchmeasure.irt.priors.place_hierarchical`), in the order PyMC
lists them:

    z = (s_θ, s_b, u_0 … u_{M−1}, v_0 … v_{F−1}, w),   σ_θ = e^(s_θ), σ_b = e^(s_b),
    θ = H_M·u,   μ_b = w + mean(θ) − mean(H_F·v),   b_free = μ_b + H_F·v,

F the free items (every item without anchors), H_k the Householder reflection that makes coordinate 0 the scaled
mean (the identity with ``parametrization="direct"``, as in the graph). The log density in z is the model's, with
the log-Jacobian of σ = e^s (the only non-unit Jacobian: the reflections are orthogonal and the shift defining μ_b
has Jacobian 1), up to a constant:

    log p(z) = Σ_{σ ∈ (σ_θ, σ_b)} (−σ²/18 + s)                       HalfNormal(3) priors, Jacobian e^s
             − |u|²/(2σ_θ²) − M·s_θ − |v|²/(2σ_b²) − F·s_b            u ~ N(0, σ_θ), v ~ N(0, σ_b)
             − μ_b²/18 − Σ_a (b_a − μ_b)²/(2σ_b²) − A·s_b             μ_b ~ N(0, 3); the A anchors' fixed b_a
             + ℓ(θ, b).                                               ~ N(μ_b, σ_b), as in the graph

**Gradient.** With g_θ, g_b = ∂ℓ/∂θ, ∂ℓ/∂b from the kernel and G = Σ_free g_b − μ_b/9 + Σ_a (b_a − μ_b)/σ_b² the
derivative in μ_b of everything that sees it: ∂/∂w = G; ∂/∂u = H_M·(g_θ + G/M) − u/σ_θ² (μ_b moves with mean θ);
∂/∂v = H_F·(g_b,free − G/F) − v/σ_b² (b_free = μ_b + H_F·v, and μ_b moves against mean(H_F·v));
∂/∂s_θ = 1 − M − σ_θ²/9 + |u|²/σ_θ²; ∂/∂s_b = 1 − F − A − σ_b²/9 + (|v|² + Σ_a (b_a − μ_b)²)/σ_b².

**Likelihood: the fused kernel, with holes and K per cell.** ℓ is the binomial log-likelihood of
:func:`.kernel.loglik_and_grad` (guessing floors included). That kernel takes one K for every cell; a matrix with
holes or K per cell (T_ij trials, 0 for an absent cell, K = max T) is the same sum with every cell at K minus
what the cells with fewer trials do not have. Y_ij ≤ T_ij enters ℓ only through Y·η and the guessing term
Y·log1p(g·e^(−η)), both exact at K; the rest of the cell's term is −T_ij·softplus(η_ij) + (T_ij − Y_ij)·log1p(−g_i),
so

    ℓ_T(θ, b) = ℓ_K(θ, b) + Σ_{T_ij < K} (K − T_ij)·softplus(θ_j − b_i)       (the log1p(−g) part is a constant),

one pass of the kernel over the matrix and one per-cell pass over the cells with fewer trials (for a held-out
10 % of cells, a tenth of the work again). ``tests/test_compiled_density.py`` checks the value and gradient against
the PyMC graph's at random points (complete, holes with K per cell, guessing, anchors, direct) and the gradient
against finite differences; ``bench/bench_hier_density.py`` compares posterior moments with the graph's fit.
Stored draws: ``theta``, ``b`` (and ``b_free`` with anchors), ``sigma_theta``, ``mu_b``, ``sigma_b``.
"""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.compiled import (
    _BAD_GRAD,
    _BAD_VALUE,
    _OK,
    Density,
    _buffer,
    _mat,
    _reflect,
    _vec,
    pack,
    register_pair,
)
from benchmeasure.irt.routes.joint.kernel import loglik_and_grad

#: the hyperpriors' scale (σ_θ, σ_b ~ HalfNormal(3), μ_b ~ N(0, 3)): :data:`benchmeasure.irt.priors.HYPER_SCALE`
_INV_VAR = 1.0 / 9.0

# the buffer's fields, in order (:func:`hierarchical_density`)
_HEAD, _V_MODELS, _V_FREE, _Y, _ROWS, _COLS, _G, _LOG_G, _FIXED, _FREE, _ANCHORS, _CELL_J, _CELL_I, _DEFICIT = range(14)


@numba.njit(cache=True)
def _hier_unpack(z, buf, theta, b, b_free):
    """θ, every b (anchors at their value), the free b from z; returns (σ_θ, σ_b, μ_b)."""
    head = _vec(buf, _HEAD)
    m, f = int(head[0]), int(head[1])
    rotated = head[3] > 0.5
    sigma_theta, sigma_b = math.exp(z[0]), math.exp(z[1])
    u = z[2:2 + m]
    v = z[2 + m:2 + m + f]
    if rotated:
        _reflect(u, _vec(buf, _V_MODELS), theta)
        _reflect(v, _vec(buf, _V_FREE), b_free)
    else:
        theta[:] = u
        b_free[:] = v
    mu_b = z[2 + m + f] + theta.mean() - b_free.mean()
    for k in range(f):
        b_free[k] += mu_b
    b[:] = _vec(buf, _FIXED)
    free = _vec(buf, _FREE)
    for k in range(f):
        b[int(free[k])] = b_free[k]
    return sigma_theta, sigma_b, mu_b


@numba.njit(cache=True)
def _hier_call(z, buf, out, logp):
    head = _vec(buf, _HEAD)
    m, f, n = int(head[0]), int(head[1]), int(head[2])
    rotated, guessing, k_max, constant = head[3] > 0.5, head[4] > 0.5, head[5], head[6]
    theta, b, b_free = np.empty(m), np.empty(n), np.empty(f)
    sigma_theta, sigma_b, mu_b = _hier_unpack(z, buf, theta, b, b_free)
    # the counts enter only the guessing terms, which take them as integers
    y = _mat(buf, _Y).astype(np.int64) if guessing else np.zeros((1, 1), dtype=np.int64)
    value, g_theta, g_b = loglik_and_grad(theta, b, y, _vec(buf, _ROWS), _vec(buf, _COLS), k_max, _vec(buf, _G),
                                          _vec(buf, _LOG_G), guessing, constant)
    cell_j, cell_i, deficit = _vec(buf, _CELL_J), _vec(buf, _CELL_I), _vec(buf, _DEFICIT)
    for c in range(deficit.shape[0]):   # the cells with fewer than K trials get back (K − T)·softplus(η)
        j, i, d = int(cell_j[c]), int(cell_i[c]), deficit[c]
        eta = theta[j] - b[i]
        e = math.exp(-abs(eta))
        value += d * (max(eta, 0.0) + math.log1p(e))
        s = d / (1.0 + e) if eta >= 0 else d * e / (1.0 + e)
        g_theta[j] += s
        g_b[i] -= s
    # the priors
    u = z[2:2 + m]
    v = z[2 + m:2 + m + f]
    inv_t, inv_b = 1.0 / (sigma_theta * sigma_theta), 1.0 / (sigma_b * sigma_b)
    uu, vv = 0.0, 0.0
    for j in range(m):
        uu += u[j] * u[j]
    for k in range(f):
        vv += v[k] * v[k]
    anchors = _vec(buf, _ANCHORS)
    n_anchors = anchors.shape[0]
    aa, a_sum = 0.0, 0.0
    for a in range(n_anchors):
        r = anchors[a] - mu_b
        aa += r * r
        a_sum += r
    value += (z[0] + z[1] - 0.5 * _INV_VAR * (sigma_theta * sigma_theta + sigma_b * sigma_b)
              - 0.5 * uu * inv_t - m * z[0] - 0.5 * (vv + aa) * inv_b - (f + n_anchors) * z[1]
              - 0.5 * _INV_VAR * mu_b * mu_b)
    free = _vec(buf, _FREE)
    g_free = np.empty(f)
    total = 0.0
    for k in range(f):
        g_free[k] = g_b[int(free[k])]
        total += g_free[k]
    big_g = total - _INV_VAR * mu_b + a_sum * inv_b   # ∂/∂μ_b of the likelihood, μ_b's prior and the anchors'
    for j in range(m):
        g_theta[j] += big_g / m
    for k in range(f):
        g_free[k] -= big_g / f
    grad = np.empty(z.shape[0])
    if rotated:
        _reflect(g_theta, _vec(buf, _V_MODELS), grad[2:2 + m])
        _reflect(g_free, _vec(buf, _V_FREE), grad[2 + m:2 + m + f])
    else:
        grad[2:2 + m] = g_theta
        grad[2 + m:2 + m + f] = g_free
    for j in range(m):
        grad[2 + j] -= u[j] * inv_t
    for k in range(f):
        grad[2 + m + k] -= v[k] * inv_b
    grad[2 + m + f] = big_g
    grad[0] = 1.0 - m - _INV_VAR * sigma_theta * sigma_theta + uu * inv_t
    grad[1] = 1.0 - f - n_anchors - _INV_VAR * sigma_b * sigma_b + (vv + aa) * inv_b
    for k in range(grad.shape[0]):   # the priors are in value and grad already (no N(0, I) to add: _finish's)
        out[k] = grad[k]
        if not math.isfinite(grad[k]):
            return _BAD_GRAD
    logp[0] = value
    return _OK if math.isfinite(value) else _BAD_VALUE


def _hier_logp(dim, x, grad, logp, data):
    return _hier_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


@numba.njit(cache=True)
def _hier_expand_call(z, buf, out):
    head = _vec(buf, _HEAD)
    m, f, n = int(head[0]), int(head[1]), int(head[2])
    theta, b, b_free = np.empty(m), np.empty(n), np.empty(f)
    sigma_theta, sigma_b, mu_b = _hier_unpack(z, buf, theta, b, b_free)
    out[:m] = theta
    out[m:m + n] = b
    k = m + n
    if head[7] > 0.5:   # anchored: b_free stored too
        out[k:k + f] = b_free
        k += f
    out[k] = sigma_theta
    out[k + 1] = mu_b
    out[k + 2] = sigma_b


def _hier_expand(dim, n_expanded, x, out, data):
    _hier_expand_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(out, (n_expanded,)))
    return _OK


def hierarchical_density(counts, n_trials: int, guessing, *, models, items, trials=None,
                         parametrization: str = "rotated", fixed_b=None) -> Density | None:
    """The joint route's density under the hierarchical prior (module docstring): stored ``theta``, ``b`` (and
    ``b_free`` with anchors) and the hyperparameters ``sigma_theta``, ``mu_b``, ``sigma_b``. ``trials`` (M × N, 0 an
    absent cell) for a matrix with holes or K per cell. None when every item is anchored (nothing free to place)."""
    from benchmeasure.irt.model import _householder
    from benchmeasure.irt.routes.joint.kernel import LoglikData

    y = np.asarray(counts, dtype=np.int64)
    n_models, n_items = y.shape
    fixed = np.full(n_items, np.nan) if fixed_b is None else np.asarray(fixed_b, dtype=float)
    free = np.flatnonzero(np.isnan(fixed))
    if free.size == 0:
        return None
    t = None if trials is None else np.asarray(trials, dtype=np.int64)
    k_max = max(int(n_trials), 1) if t is None else max(int(t.max()), 1)
    lik = LoglikData(y, k_max, guessing)
    cells = np.argwhere(t < k_max) if t is not None else np.zeros((0, 2), dtype=np.int64)
    deficit = (k_max - t[cells[:, 0], cells[:, 1]]).astype(float) if t is not None else np.zeros(0)
    # Σ (T − Y)·log1p(−g): constant in θ and b, kept so ℓ is the binomial log-probability up to log C(T, Y)
    constant = float(np.sum(((k_max if t is None else t) - y) * np.log1p(-lik.g)[None, :]))
    anchored = fixed_b is not None
    head = (n_models, free.size, n_items, 1.0 if parametrization == "rotated" else 0.0, float(lik.has_guessing),
            float(k_max), constant, float(anchored))
    buf = pack(head, _householder(n_models), _householder(free.size), y, lik.row_sums, lik.col_sums, lik.g,
               lik.log_g_pos, np.nan_to_num(fixed), free.astype(float), fixed[np.isfinite(fixed)],
               cells[:, 0].astype(float), cells[:, 1].astype(float), deficit)
    variables = (("theta", "model"), ("b", "item"))
    coords = {"model": list(models), "item": list(items)}
    if anchored:
        variables += (("b_free", "free_item"),)
        coords["free_item"] = [items[i] for i in free]
    variables += (("sigma_theta", ()), ("mu_b", ()), ("sigma_b", ()))
    return Density("joint-hierarchical", buf, n_models + free.size + 3, variables, coords)


register_pair("joint-hierarchical", _hier_logp, _hier_expand)
