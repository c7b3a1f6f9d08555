"""The 1PL binomial log-likelihood and its gradient in one fused, numerically stable pass.

For a count matrix Y (M models × N items, K trials per cell) and η_ij = θ_j − b_i, the
sampled log-density of the likelihood is (log C(K, Y) left out, it is constant)

* g = 0:  ℓ = Σ_ij Y_ij·η_ij − K·softplus(η_ij)
          = Σ_j θ_j·R_j − Σ_i b_i·C_i − K·Σ_ij softplus(η_ij)
  with R_j, C_i the row and column sums of Y; ∂ℓ/∂θ_j = R_j − K·Σ_i σ(η_ij) and
  ∂ℓ/∂b_i = −C_i + K·Σ_j σ(η_ij).
* g_i > 0: p = g + (1 − g)·σ(η) = σ(η)·(1 + g·e^(−η)), so
          ℓ = Σ_ij Y·η − K·softplus(η) + Y·log1p(g·e^(−η)) + (K − Y)·log1p(−g),
  and ∂ℓ/∂η = Y − K·σ(η) − Y·x/(1 + x) with x = g·e^(−η).

Per cell the g = 0 pass needs no transcendental function: e^(±η) = e^(±θ_j)·e^(∓b_i) is a
product of per-row and per-column factors computed once per evaluation;
softplus(η) = max(η, 0) + log(1 + min(e^η, e^(−η))), and the logarithm of the second
term is taken once per block of cells as the log of a product (each factor lies in
(1, 2], so a block of 512 stays below 2^512); σ(η) = 1/(1 + e^(−η)). When some |θ_j| + |b_i|
could exceed 600 (far outside any posterior here, possible in early warm-up), the kernel
switches to the textbook per-cell form, which is stable for any η.

:func:`benchmeasure.irt.routes.joint.op.loglik_op` wraps the kernel as a PyTensor Op with
outputs (ℓ, ∂ℓ/∂θ, ∂ℓ/∂b), so the log-density and its gradient come from one node; it runs compiled
in nutpie's Numba back end and through ``perform`` in PyMC's own NUTS.
:func:`benchmeasure.irt.routes.joint.op.pytensor_loglik` writes the same elementwise expression with
PyTensor operations, for back ends without the Op (JAX) and as a cross-check.
"""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.kernel_cache import numba

BLOCK = 512        # cells per product before one log is taken; each factor ≤ 2, so ≤ 2^512
SAFE_RANGE = 600.0  # fast path only while every |η| ≤ max|θ| + max|b| stays below this
_FLAGS = {"reassoc", "contract", "nsz"}  # allow vectorized reductions; keep inf/nan semantics


@numba.njit(cache=True, fastmath=_FLAGS, error_model="numpy")
def _softplus_sigma_rowwise(theta, b, sig_row, sig_col):
    """Σ softplus(θ_j − b_i) over all cells; σ sums per row and column written into the buffers."""
    m = theta.shape[0]
    n = b.shape[0]
    e_b = np.exp(-b)      # e^(−b_i)
    e_mb = np.exp(b)      # e^(b_i)
    total = 0.0
    for i in range(n):
        sig_col[i] = 0.0
    for j in range(m):
        th = theta[j]
        a = math.exp(th)
        ai = math.exp(-th)
        relu = 0.0
        logs = 0.0
        srow = 0.0
        for start in range(0, n, BLOCK):
            stop = min(start + BLOCK, n)
            prod = 1.0
            for i in range(start, stop):
                t = a * e_b[i]       # e^η
                ti = ai * e_mb[i]    # e^(−η)
                prod *= 1.0 + min(t, ti)
                relu += max(th - b[i], 0.0)
                s = 1.0 / (1.0 + ti)
                srow += s
                sig_col[i] += s
            logs += math.log(prod)
        sig_row[j] = srow
        total += relu + logs
    return total


@numba.njit(cache=True, error_model="numpy")
def _softplus_sigma_safe(theta, b, sig_row, sig_col):
    """The same sums as :func:`_softplus_sigma_rowwise`, one exp and one log1p per cell (any η)."""
    m = theta.shape[0]
    n = b.shape[0]
    total = 0.0
    for i in range(n):
        sig_col[i] = 0.0
    for j in range(m):
        srow = 0.0
        for i in range(n):
            eta = theta[j] - b[i]
            e = math.exp(-abs(eta))
            total += max(eta, 0.0) + math.log1p(e)
            s = 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)
            srow += s
            sig_col[i] += s
        sig_row[j] = srow
    return total


@numba.njit(cache=True, error_model="numpy")
def _guessing_terms(theta, b, y, g, log_g_pos, grad_theta, grad_b):
    """Σ Y·log1p(g·e^(−η)) over cells with g_i > 0; its gradient is added into the buffers."""
    m = theta.shape[0]
    n = b.shape[0]
    total = 0.0
    for j in range(m):
        for i in range(n):
            if g[i] <= 0.0 or y[j, i] == 0:
                continue
            eta = theta[j] - b[i]
            lx = log_g_pos[i] - eta          # log x, x = g·e^(−η)
            if lx > 0:
                ex = math.exp(-lx)           # 1/x ≤ 1
                total += y[j, i] * (lx + math.log1p(ex))
                frac = 1.0 / (1.0 + ex)      # x/(1+x)
            else:
                x = math.exp(lx)
                total += y[j, i] * math.log1p(x)
                frac = x / (1.0 + x)
            d = y[j, i] * frac              # −∂/∂η of the term is −d
            grad_theta[j] -= d
            grad_b[i] += d
    return total


@numba.njit(cache=True, fastmath=_FLAGS, error_model="numpy")
def _guessing_rowwise(theta, b, y, g, log_g_pos, n_trials, grad_theta, grad_b):
    """Σ Y·log1p(g·e^(−η)) and its gradient (added into the buffers), without a log per cell.

    With x = g·e^(−η) = g·e^(−θ_j)·e^(b_i): log1p(x) = log(1 + x) for x ≤ 1, and
    (log g − η) + log(1 + 1/x) for x > 1; the first part of the second case is linear in
    θ and b, and (1 + w)^Y with w = min(x, 1/x) ∈ [0, 1] is at most 2^K, so a block of
    ⌊1000/K⌋ cells can be multiplied before one log is taken. (1 + w)^Y is formed by
    binary exponentiation over the bits of K. Only for |θ| + |b| < 600 (caller checks).
    """
    m = theta.shape[0]
    n = b.shape[0]
    k = int(n_trials)
    n_bits = 0
    while (1 << n_bits) <= k:
        n_bits += 1
    block = max(1, 1000 // max(k, 1))
    e_mb = np.exp(b)
    inv_g = np.zeros(n)
    for i in range(n):
        if g[i] > 0.0:
            inv_g[i] = 1.0 / g[i]
    e_b = np.exp(-b)
    dcol = np.zeros(n)
    total = 0.0
    for j in range(m):
        th = theta[j]
        ai = math.exp(-th)
        a = math.exp(th)
        linear = 0.0
        logs = 0.0
        drow = 0.0
        for start in range(0, n, block):
            stop = min(start + block, n)
            prod = 1.0
            for i in range(start, stop):
                yy = y[j, i]
                yf = float(yy)
                x = g[i] * ai * e_mb[i]           # g·e^(−η)
                xi = inv_g[i] * a * e_b[i]         # 1/x (0 where g = 0, then unused)
                big = x > 1.0
                w = xi if big else x
                linear += yf * (log_g_pos[i] - th + b[i]) if big else 0.0
                base = 1.0 + w
                power = 1.0
                for bit in range(n_bits):
                    power *= base if (yy >> bit) & 1 else 1.0
                    base *= base
                prod *= power
                q = 1.0 / (1.0 + w)
                d = yf * (q if big else w * q)     # Y·x/(1 + x)
                drow += d
                dcol[i] += d
            logs += math.log(prod)
        total += linear + logs
        grad_theta[j] -= drow
    for i in range(n):
        grad_b[i] += dcol[i]
    return total


@numba.njit(cache=True, error_model="numpy")
def loglik_and_grad(theta, b, y, row_sums, col_sums, n_trials, g, log_g_pos, has_guessing, constant):
    """ℓ(θ, b) and its gradient (see the module docstring); returns (ℓ, ∂ℓ/∂θ, ∂ℓ/∂b)."""
    m = theta.shape[0]
    n = b.shape[0]
    sig_row = np.empty(m)
    sig_col = np.empty(n)
    bound = np.max(np.abs(theta)) + np.max(np.abs(b))
    if bound < SAFE_RANGE:
        softplus_sum = _softplus_sigma_rowwise(theta, b, sig_row, sig_col)
    else:
        softplus_sum = _softplus_sigma_safe(theta, b, sig_row, sig_col)
    value = constant - n_trials * softplus_sum
    grad_theta = np.empty(m)
    grad_b = np.empty(n)
    for j in range(m):
        value += theta[j] * row_sums[j]
        grad_theta[j] = row_sums[j] - n_trials * sig_row[j]
    for i in range(n):
        value -= b[i] * col_sums[i]
        grad_b[i] = n_trials * sig_col[i] - col_sums[i]
    if has_guessing:
        if bound < SAFE_RANGE and n_trials <= 1000:
            value += _guessing_rowwise(theta, b, y, g, log_g_pos, n_trials, grad_theta, grad_b)
        else:
            value += _guessing_terms(theta, b, y, g, log_g_pos, grad_theta, grad_b)
    return value, grad_theta, grad_b


class LoglikData:
    """The constants the kernel needs for one count matrix and guessing vector."""

    def __init__(self, counts, n_trials: int, guessing):
        y = np.ascontiguousarray(counts, dtype=np.int64)
        n_items = y.shape[1]
        g = np.ascontiguousarray(np.broadcast_to(np.asarray(guessing, dtype=float), (n_items,)))
        self.y = y
        self.n_trials = float(n_trials)
        self.g = g
        self.has_guessing = bool(np.any(g > 0))
        with np.errstate(divide="ignore"):
            self.log_g_pos = np.where(g > 0, np.log(np.where(g > 0, g, 1.0)), -np.inf)
        self.row_sums = y.sum(axis=1).astype(float)
        self.col_sums = y.sum(axis=0).astype(float)
        # Σ (K − Y)·log1p(−g): constant in θ and b, kept so ℓ is the binomial log-probability
        # up to log C(K, Y) exactly.
        self.constant = float(np.sum((n_trials - y) * np.log1p(-g)[None, :]))

    def args(self):
        return (self.y, self.row_sums, self.col_sums, self.n_trials, self.g, self.log_g_pos,
                self.has_guessing, self.constant)

    def __call__(self, theta, b):
        """(ℓ, ∂ℓ/∂θ, ∂ℓ/∂b) at NumPy arrays ``theta`` and ``b``."""
        return loglik_and_grad(np.ascontiguousarray(theta, dtype=float), np.ascontiguousarray(b, dtype=float),
                               *self.args())
