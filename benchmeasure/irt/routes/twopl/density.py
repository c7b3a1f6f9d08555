"""The 2pl route's log density, compiled once for nutpie (:mod:`benchmeasure.irt.compiled`): the same model as
:func:`benchmeasure.irt.routes.twopl.model.build_2pl_model` (which stays the reference), in the coordinates
z = (z_θb, u) with (θ, b) = Q·z_θb and log a = 0.5·u, so every coordinate has a Normal(0, 1) prior. A cell with
K = 0 (absent) contributes nothing. Stored draws: ``theta``, ``b``, ``a`` (and with ``slopes=False`` every a is 1
and u is not sampled: the 1PL of the comparison).

Q is the joint route's rotation (:class:`benchmeasure.irt.model.Rotation`): orthogonal, so the prior is unchanged,
and it turns the common shift of every θ and b (θ + c, b + c: the likelihood does not see it, only the priors
hold it) into one coordinate. Without it the shift mixed worst of all directions: on a simulated 51 × 800
(θ, b ~ N(0, 1), log a ~ N(0, 0.5)) the mean θ had a bulk ESS of 43 in 2 × 300 draws, against 600 for the
contrast mean θ − mean b; nutpie's low-rank mass matrix did not help (ESS 36, seven times slower)
(bench/bench_2pl.py). ``parametrization="direct"`` samples (θ, b) themselves."""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.compiled import (
    _OK,
    Density,
    _buffer,
    _finish,
    _mat,
    _rotate_gradient,
    _unrotate,
    _vec,
    pack,
    register_pair,
)
from benchmeasure.irt.routes.twopl.model import SLOPE_SD


@numba.njit(cache=True)
def _twopl_unpack(z, buf, theta, b):
    """θ and b from the sampler's coordinates: (θ, b) = Q·z[:M + N] (rotated) or z[:M + N] itself."""
    head = _vec(buf, 0)
    m, n = int(head[0]), int(head[1])
    if head[4] > 0.5:
        _unrotate(z, m, n, head[5], head[6], _vec(buf, 4), _vec(buf, 5), theta, b)
    else:
        theta[:] = z[:m]
        b[:] = z[m:m + n]


@numba.njit(cache=True)
def _twopl_call(z, buf, out, logp):
    head = _vec(buf, 0)
    m, n, slopes, sd = int(head[0]), int(head[1]), head[2] > 0.5, head[3]
    y, k, g = _mat(buf, 1), _mat(buf, 2), _vec(buf, 3)   # y and K stored item-major (N, M): contiguous columns
    theta, b = np.empty(m), np.empty(n)
    _twopl_unpack(z, buf, theta, b)
    grad = np.zeros(z.shape[0])
    grad_theta = np.zeros(m)
    grad_b = np.empty(n)
    value = 0.0
    for i in range(n):
        a = math.exp(sd * z[m + n + i]) if slopes else 1.0
        gi = g[i]
        bi = b[i]
        yi, ki = y[i], k[i]
        d_eta_a = 0.0   # Σ_j dL/dη · (θ_j − b_i)
        d_eta_sum = 0.0  # Σ_j dL/dη
        if gi == 0.0:   # y·η − K·softplus(η); an absent cell (K = 0, y = 0) adds nothing
            for j in range(m):
                diff = theta[j] - bi
                eta = a * diff
                e = math.exp(-abs(eta))
                s = 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)
                value += yi[j] * eta - ki[j] * (max(eta, 0.0) + math.log1p(e))
                de = yi[j] - ki[j] * s
                grad_theta[j] += de * a
                d_eta_sum += de
                d_eta_a += de * diff
        else:
            log_q0 = math.log1p(-gi)
            for j in range(m):
                diff = theta[j] - bi
                eta = a * diff
                e = math.exp(-abs(eta))
                s = 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)
                p = gi + (1.0 - gi) * s
                value += yi[j] * math.log(p) + (ki[j] - yi[j]) * (log_q0 - max(eta, 0.0) - math.log1p(e))
                de = yi[j] * (1.0 - gi) * s * (1.0 - s) / p - (ki[j] - yi[j]) * s
                grad_theta[j] += de * a
                d_eta_sum += de
                d_eta_a += de * diff
        grad_b[i] = -a * d_eta_sum
        if slopes:
            grad[m + n + i] = sd * a * d_eta_a
    if head[4] > 0.5:   # the chain rule through Q
        _rotate_gradient(grad_theta, grad_b, head[5], head[6], _vec(buf, 4), _vec(buf, 5), grad)
    else:
        grad[:m] = grad_theta
        grad[m:m + n] = grad_b
    return _finish(value, grad, z, out, logp)


def _twopl_logp(dim, x, grad, logp, data):
    return _twopl_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


@numba.njit(cache=True)
def _twopl_expand_call(z, buf, out):
    head = _vec(buf, 0)
    m, n, slopes, sd = int(head[0]), int(head[1]), head[2] > 0.5, head[3]
    theta, b = np.empty(m), np.empty(n)
    _twopl_unpack(z, buf, theta, b)
    out[:m] = theta
    out[m:m + n] = b
    if slopes:
        for i in range(n):
            out[m + n + i] = math.exp(sd * z[m + n + i])


def _twopl_expand(dim, n_expanded, x, out, data):
    _twopl_expand_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(out, (n_expanded,)))
    return _OK


def twopl_density(counts, trials, guessing, *, models, items, slopes: bool = True,
                  parametrization: str = "rotated") -> Density:
    """The 2PL's density (``slopes=False``: the 1PL's, every a = 1) with stored ``theta``, ``b`` (and ``a``),
    sampled in the rotated coordinates (default) or directly in (θ, b) (``parametrization="direct"``)."""
    from benchmeasure.irt.model import _householder

    y = np.asarray(counts, dtype=float)
    m, n = y.shape
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (n,))
    c, s = math.sqrt(m / (m + n)), math.sqrt(n / (m + n))
    head = (m, n, 1.0 if slopes else 0.0, SLOPE_SD, 1.0 if parametrization == "rotated" else 0.0, c, s)
    buf = pack(head, y.T, np.asarray(trials, dtype=float).T, g, _householder(m), _householder(n))
    variables = (("theta", "model"), ("b", "item")) + ((("a", "item"),) if slopes else ())
    return Density("2pl", buf, m + n + (n if slopes else 0), variables,
                   {"model": list(models), "item": list(items)})


register_pair("2pl", _twopl_logp, _twopl_expand)
