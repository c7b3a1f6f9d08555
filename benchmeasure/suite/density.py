"""The suite's correlated-abilities posterior (collapsed route) as a log density compiled once and cached.

:func:`benchmeasure.suite.mirt_collapsed.build_collapsed_model` writes this posterior as a PyMC model, and nutpie
compiled its PyTensor graph again in every process (43–60 s of CPU on a 2-core machine, more than the sampling
of a small suite). Here the same density and its gradient are one Numba function, compiled once per package
version into the kernel cache and handed to nutpie like the 1PL's (:mod:`benchmeasure.irt.compiled`). The PyMC
model stays the reference: ``tests/test_suite_density.py`` holds this density and its gradient to it at random
points, up to one additive constant.

Coordinates (the PyMC model's, in this order):

* ``x`` — B(B − 1)/2 reals: row i of the correlation's Cholesky factor L_R is (x_i, 1)/|(x_i, 1)|, x_i the next i
  reals (PyMC 6's ``CholeskyCorrTransform`` fills the same rows in another order; a permutation of coordinates
  changes no density). The LKJ(η) density of L_R, Σ_i (2η − 2 + B − i − 1) log L_R,ii (0-based i), plus the
  log Jacobian of x → L_R, Σ_i (i + 2) log L_R,ii, is (2η + B − 1) Σ_i log L_R,ii.
* ``log s`` — B reals with half-normal scales: −s²/(2σ²) + log s each (the prior and the log transform's
  Jacobian); absent with unit scales (s = 1).
* ``θ̄``, ``w_strong`` ((M − 1) × (B − r)), ``z`` ((M − 1) × r) — the partial coordinates of the abilities with
  the benchmark means integrated out (:mod:`benchmeasure.suite.coordinates`): with C = diag(s) L_R, S = T⁻¹ C Cᵀ T⁻ᵀ
  = L Lᵀ, u = L₁₁⁻¹ w_strong, w_weak = L₂₁ u + L₂₂ z and θ = 1 θ̄ᵀ + Hᵀ (T w)ᵀ,

      −(M − 1) Σ log diag L₁₁ − ½ |u|² − ½ |z|² + log N(θ̄; 0, C Cᵀ/M + τ² I)     (+ constants)

* the likelihood: Σ_k of benchmark k's collapsed marginal at θ_{·,k}
  (:func:`benchmeasure.irt.routes.collapsed.holes.marginal_logp_grad_holes`, every b integrated out).

The gradient is written by hand in reverse mode (:func:`_call`): through the Helmert contrasts in O(M·B), the
triangular solves, the Cholesky factor of S (S̄ = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹, Φ the lower triangle with half its diagonal;
Murray 2016, "Differentiation of the Cholesky decomposition", arXiv:1602.07527), the Gaussian of θ̄ in its
covariance, and the rows' normalization. Stored draws: θ (M × B), the correlation R = L_R L_Rᵀ and, with
half-normal scales, s.
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
    _vec,
    pack,
    register_pair,
)
from benchmeasure.irt.routes.collapsed.density import holes_loglik

ROUTE = "suite"
_FIRST = 3   # the buffer's fields: head, T, T⁻¹, then 12 per benchmark


@numba.njit(cache=True, inline="always")
def _cholesky(a, out):
    """out = the lower Cholesky factor of the symmetric a; False when a is not positive definite."""
    n = a.shape[0]
    for i in range(n):
        for j in range(i + 1):
            acc = a[i, j]
            for k in range(j):
                acc -= out[i, k] * out[j, k]
            if i == j:
                if not acc > 0.0:
                    return False
                out[i, i] = math.sqrt(acc)
            else:
                out[i, j] = acc / out[j, j]
        for j in range(i + 1, n):
            out[i, j] = 0.0
    return True


@numba.njit(cache=True, inline="always")
def _solve_lower(low, b):
    """low⁻¹ b for a lower triangular ``low`` (b a matrix, solved in place)."""
    n = low.shape[0]
    for c in range(b.shape[1]):
        for i in range(n):
            acc = b[i, c]
            for k in range(i):
                acc -= low[i, k] * b[k, c]
            b[i, c] = acc / low[i, i]


@numba.njit(cache=True, inline="always")
def _solve_upper_t(low, b):
    """low⁻ᵀ b for a lower triangular ``low`` (b a matrix, solved in place)."""
    n = low.shape[0]
    for c in range(b.shape[1]):
        for i in range(n - 1, -1, -1):
            acc = b[i, c]
            for k in range(i + 1, n):
                acc -= low[k, i] * b[k, c]
            b[i, c] = acc / low[i, i]


@numba.njit(cache=True, inline="always")
def _helmert_t(u, out):
    """out (M × B) = Hᵀ u for the Helmert contrasts H ((M − 1) × M, :func:`.coordinates.helmert`), u (M − 1) × B."""
    m1, b = u.shape
    for k in range(b):
        tail = 0.0   # Σ_{r > j} u_r / √(r(r + 1)), rows r = 1 … M − 1
        for j in range(m1, -1, -1):
            own = 0.0
            if j >= 1:
                own = -j / math.sqrt(j * (j + 1.0)) * u[j - 1, k]
            out[j, k] = own + tail
            if j >= 1:
                tail += u[j - 1, k] / math.sqrt(j * (j + 1.0))


@numba.njit(cache=True, inline="always")
def _helmert(x, out):
    """out ((M − 1) × B) = H x for x (M × B)."""
    m, b = x.shape
    for k in range(b):
        head = 0.0
        for r in range(1, m):
            head += x[r - 1, k]
            out[r - 1, k] = (head - r * x[r, k]) / math.sqrt(r * (r + 1.0))


@numba.njit(cache=True)
def _forward(z, buf):
    """Every intermediate of the density at z (the expand function needs θ, R and s only)."""
    head = _vec(buf, 0)
    m, b, n_strong, half = int(head[0]), int(head[1]), int(head[2]), head[4] > 0.0
    t = _mat(buf, 1)
    t_inv = _mat(buf, 2)
    n_weak = b - n_strong
    off = 0
    root = np.zeros((b, b))      # L_R
    norms = np.empty(b)
    for i in range(b):
        acc = 1.0
        for j in range(i):
            root[i, j] = z[off]
            acc += z[off] * z[off]
            off += 1
        root[i, i] = 1.0
        norms[i] = math.sqrt(acc)
        for j in range(i + 1):
            root[i, j] /= norms[i]
    s = np.ones(b)
    if half:
        for k in range(b):
            s[k] = math.exp(z[off + k])
        off += b
    centre = z[off:off + b].copy()
    off += b
    strong = z[off:off + (m - 1) * n_strong].copy().reshape((m - 1, n_strong))
    off += (m - 1) * n_strong
    weak = z[off:off + (m - 1) * n_weak].copy().reshape((m - 1, n_weak))
    chol = np.empty((b, b))      # C = diag(s) L_R
    for i in range(b):
        for j in range(b):
            chol[i, j] = s[i] * root[i, j]
    a = t_inv @ chol
    low = np.empty((b, b))
    ok = _cholesky(a @ a.T, low)
    u = np.ascontiguousarray(strong.T)          # L₁₁⁻¹ w_strongᵀ
    w = np.empty((b, m - 1))                    # in T's coordinates
    if ok:
        _solve_lower(low[:n_strong, :n_strong], u)
        w[:n_strong] = strong.T
        if n_weak:
            w[n_strong:] = np.ascontiguousarray(low[n_strong:, n_strong:]) @ np.ascontiguousarray(weak.T)
            if n_strong:
                w[n_strong:] += np.ascontiguousarray(low[n_strong:, :n_strong]) @ u
    theta = np.empty((m, b))
    _helmert_t(np.ascontiguousarray((t @ w).T), theta)
    for j in range(m):
        for k in range(b):
            theta[j, k] += centre[k]
    return ok, root, norms, s, centre, strong, weak, chol, a, low, u, theta


@numba.njit(cache=True)
def _call(z, buf, out, logp):
    head = _vec(buf, 0)
    m, b, n_strong, half = int(head[0]), int(head[1]), int(head[2]), head[4] > 0.0
    eta, scale_sd, tau, constant = head[3], head[4], head[5], head[6]
    t = _mat(buf, 1)
    t_inv = _mat(buf, 2)
    n_weak = b - n_strong
    ok, root, norms, s, centre, _, weak, chol, a, low, u, theta = _forward(z, buf)
    if not ok:
        logp[0] = -math.inf
        return _BAD_VALUE
    # the centre's Gaussian: P = C Cᵀ/M + τ² I = O Oᵀ
    cov = chol @ chol.T / m
    for k in range(b):
        cov[k, k] += tau * tau
    outer = np.empty((b, b))
    if not _cholesky(cov, outer):
        logp[0] = -math.inf
        return _BAD_VALUE
    q = centre.copy().reshape((b, 1))
    _solve_lower(outer, q)
    value = constant
    for k in range(b):
        value -= 0.5 * q[k, 0] * q[k, 0] + math.log(outer[k, k])
    _solve_upper_t(outer, q)                               # q = P⁻¹ θ̄
    # θ's coordinates
    for k in range(n_strong):
        value -= (m - 1.0) * math.log(low[k, k])
    value -= 0.5 * (np.sum(u * u) + np.sum(weak * weak))
    # the priors of R (with its Jacobian) and s (with the log transform's)
    for i in range(b):
        value -= (2.0 * eta + b - 1.0) * math.log(norms[i])
    if half:
        for k in range(b):
            value += -0.5 * (s[k] / scale_sd) ** 2 + math.log(s[k])
    # the likelihood, benchmark by benchmark
    grad_theta = np.empty((m, b))
    for k in range(b):
        v, g = holes_loglik(np.ascontiguousarray(theta[:, k]), buf, _FIRST + 12 * k)
        value += v
        grad_theta[:, k] = g
    if not math.isfinite(value):
        logp[0] = value
        return _BAD_VALUE

    # reverse mode
    bar_centre = np.empty(b)
    for k in range(b):
        bar_centre[k] = np.sum(grad_theta[:, k]) - q[k, 0]
    hg = np.empty((m - 1, b))
    _helmert(grad_theta, hg)
    bar_w = t.T @ hg.T                                     # B × (M − 1)
    bar_low = np.zeros((b, b))
    bar_strong = np.ascontiguousarray(bar_w[:n_strong].T)
    bar_u = -u
    bar_weak = -weak.copy()
    if n_weak:
        bw = np.ascontiguousarray(bar_w[n_strong:])      # r × (M − 1)
        l22 = np.ascontiguousarray(low[n_strong:, n_strong:])
        bar_weak += (l22.T @ bw).T
        bar_low[n_strong:, n_strong:] += bw @ weak
        if n_strong:
            bar_low[n_strong:, :n_strong] += bw @ np.ascontiguousarray(u.T)
            bar_u += np.ascontiguousarray(low[n_strong:, :n_strong].T) @ bw
    for k in range(n_strong):
        bar_low[k, k] -= (m - 1.0) / low[k, k]
    if n_strong:
        l11 = np.ascontiguousarray(low[:n_strong, :n_strong])
        v = bar_u.copy()
        _solve_upper_t(l11, v)                           # L₁₁⁻ᵀ ū
        bar_strong += v.T
        bar_low[:n_strong, :n_strong] -= v @ np.ascontiguousarray(u.T)
    # through S = L Lᵀ: S̄ = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹, then A = T⁻¹ C, S = A Aᵀ
    for i in range(b):
        for j in range(i + 1, b):
            bar_low[i, j] = 0.0
    phi = low.T @ bar_low
    for i in range(b):
        phi[i, i] *= 0.5
        for j in range(i + 1, b):
            phi[i, j] = 0.0
    _solve_upper_t(low, phi)                               # X = L⁻ᵀ Φ
    bar_s = np.ascontiguousarray(phi.T)
    _solve_upper_t(low, bar_s)                             # L⁻ᵀ Xᵀ = S̄ᵀ
    bar_s = bar_s.T + bar_s                                # S̄ + S̄ᵀ
    bar_chol = t_inv.T @ (bar_s @ a)
    # the centre's Gaussian in its covariance: P̄ = ½(q qᵀ − P⁻¹), C̄ += 2 P̄ C / M
    p_inv = np.eye(b)
    _solve_lower(outer, p_inv)
    _solve_upper_t(outer, p_inv)
    bar_chol += ((q @ q.T) - p_inv) @ chol / m
    # C = diag(s) L_R
    grad = np.empty(z.shape[0])
    off = b * (b - 1) // 2
    bar_root = np.zeros((b, b))
    for i in range(b):
        bar_scale = 0.0
        for j in range(i + 1):
            bar_scale += bar_chol[i, j] * root[i, j]
            bar_root[i, j] = s[i] * bar_chol[i, j]
        if half:
            grad[off + i] = bar_scale * s[i] - (s[i] / scale_sd) ** 2 + 1.0
    # the LKJ term and the rows' normalization
    pos = 0
    for i in range(b):
        bar_root[i, i] += (2.0 * eta + b - 1.0) / root[i, i]
        dot = 0.0
        for j in range(i + 1):
            dot += bar_root[i, j] * root[i, j]
        for j in range(i):
            grad[pos] = (bar_root[i, j] - dot * root[i, j]) / norms[i]
            pos += 1
    if half:
        off += b
    grad[off:off + b] = bar_centre
    off += b
    grad[off:off + (m - 1) * n_strong] = bar_strong.reshape(-1)
    off += (m - 1) * n_strong
    grad[off:] = bar_weak.reshape(-1)
    for j in range(grad.shape[0]):
        out[j] = grad[j]
        if not math.isfinite(grad[j]):
            return _BAD_GRAD
    logp[0] = value
    return _OK


def _logp(dim, x, grad, logp, data):
    return _call(numba.carray(x, (dim,)), _buffer(data), numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


@numba.njit(cache=True)
def _expand_call(z, buf, out):
    b = int(_vec(buf, 0)[1])
    half = _vec(buf, 0)[4] > 0.0
    _, root, _, s, _, _, _, _, _, _, _, theta = _forward(z, buf)
    n = theta.size
    out[:n] = theta.reshape(-1)
    corr = root @ root.T
    out[n:n + b * b] = corr.reshape(-1)
    if half:
        out[n + b * b:n + b * b + b] = s


def _expand(dim, n_expanded, x, out, data):
    _expand_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(out, (n_expanded,)))
    return _OK


register_pair(ROUTE, _logp, _expand)


def coordinate_names(n_models: int, n_benchmarks: int, n_weak: int, half_normal: bool) -> list:
    """(name, shape) of each block of the sampler's coordinates, in order (PyMC's value variables' names)."""
    blocks = [("chol_corr", (n_benchmarks * (n_benchmarks - 1) // 2,))]
    if half_normal:
        blocks.append(("scale_log__", (n_benchmarks,)))
    blocks.append(("theta_centre", (n_benchmarks,)))
    if n_weak < n_benchmarks:
        blocks.append(("theta_strong", (n_models - 1, n_benchmarks - n_weak)))
    if n_weak:
        blocks.append(("theta_weak", (n_models - 1, n_weak)))
    return blocks


def suite_density(data: list, basis, *, n_models: int, eta: float, scales: str, scale_sd: float, mean_sd: float,
                  models=None, benchmarks=None) -> Density:
    """The density above for the per-benchmark data of :func:`benchmeasure.suite.mirt_collapsed.benchmark_data`
    and the partial coordinates' (T, r) (:func:`benchmeasure.suite.coordinates.pilot_basis`)."""
    t, n_weak = basis
    t = np.asarray(t, dtype=float)
    b = t.shape[0]
    half = scales == "half-normal"
    m = float(n_models)
    constant = (-(m - 1.0) * b / 2.0 * math.log(2.0 * math.pi) - (m - 1.0) * np.linalg.slogdet(t)[1]
                - b / 2.0 * math.log(m) - b / 2.0 * math.log(2.0 * math.pi))
    head = (n_models, b, b - int(n_weak), eta, scale_sd if half else 0.0, mean_sd, constant)
    fields = [head, t, np.linalg.inv(t)]
    for _, sub in data:
        fields.extend(sub.args())
    n_dim = sum(math.prod(shape) for _, shape in coordinate_names(n_models, b, int(n_weak), half))
    models = list(models) if models is not None else list(range(n_models))
    benchmarks = list(benchmarks) if benchmarks is not None else list(range(b))
    variables = (("theta", ("theta_dim_0", "theta_dim_1")), ("corr", ("corr_dim_0", "corr_dim_1")))
    coords = {"theta_dim_0": models, "theta_dim_1": benchmarks, "corr_dim_0": benchmarks,
              "corr_dim_1": benchmarks}
    if half:
        variables += (("scale", "scale_dim_0"),)
        coords["scale_dim_0"] = benchmarks
    return Density(ROUTE, pack(*fields), n_dim, variables, coords)
