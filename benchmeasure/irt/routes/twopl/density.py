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
from benchmeasure.irt.vector_exp import AVAILABLE as VECTOR_EXP
from benchmeasure.irt.vector_exp import exp_in_place


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


#: the cells a product of per-cell factors takes before its one log (each factor ≤ 2, so a product ≤ 2^512)
_BLOCK = 512
# the item pass's floating-point licence: sums and products may be regrouped (so they vectorize) and a·b + c
# fused; nothing about infinities or NaN is assumed, so a non-finite value still reaches _finish's check. Its
# divisions are by 1 + e ≥ 1 and by p ≥ g > 0, so they skip Python's zero-divisor check (error_model="numpy"),
# whose branch kept the loop from vectorizing.
_REGROUP = {"reassoc", "nsz", "contract"}


@numba.njit(cache=True, fastmath=_REGROUP, error_model="numpy")
def _item_pass(theta, bi, a, gi, log_q0, yi, ki, shared_k, block, e, q, grad_theta):
    """One item's log-likelihood terms over every model, adding dL/dθ_j to ``grad_theta``; returns (value,
    Σ_j dL/dη_ij, Σ_j dL/dη_ij·(θ_j − b_i)). η = a(θ_j − b_i), e = exp(−|η|), σ(η) = 1/(1 + e) or e/(1 + e).

    g = 0: log L = y·η − K·softplus(η), softplus(η) = max(η, 0) + log(1 + e); dL/dη = y − K·σ(η).
    g > 0: log L = y·log p + (K − y)·(log(1 − g) − softplus(η)), p = g + (1 − g)σ(η);
    dL/dη = y(1 − g)σ(1 − σ)/p − (K − y)σ.

    ``e`` holds the item's exp(−|η|) already (:func:`_exps` or :func:`_exps_vector`: in a loop of their own, so
    the loop over the rest has no call and vectorizes; the logs of an item without a shared K come last, in a
    loop of their own too, p kept in ``q``). Where
    every present cell of the item has the same K (``shared_k`` > 0; absent cells have K = 0) the logs are one
    per ``block`` cells: for g = 0, Σ K·log(1 + e) = K·log Π (1 + min(K_j, 1)·e_j), each factor in [1, 2]; for g > 0
    and K = 1 a present cell's log term is log p (y = 1) or −log(1 + e) (y = 0), so their sum is log Π f with
    f = p, 1/(1 + e) or 1 (absent), each factor in [min(g, 1/2), 1], and ``block`` keeps the product above
    1e-282. A log of a product equals the sum of the logs to rounding (about 1e-16 per factor), far inside what
    NUTS can see. Otherwise every cell takes its own logs. An absent cell (K = y = 0) adds nothing either way."""
    m = theta.shape[0]
    product = shared_k > 0.0 and (gi == 0.0 or shared_k == 1.0)
    value = 0.0
    d_eta_sum = 0.0
    d_eta_a = 0.0
    for j0 in range(0, m, block):
        j1 = min(j0 + block, m)
        # the block's cells as arrays of their own: an index from 0 (not j0) is what lets the loop vectorize
        th, y, k, ex, p_out, gt = theta[j0:j1], yi[j0:j1], ki[j0:j1], e[j0:j1], q[j0:j1], grad_theta[j0:j1]
        prod = 1.0
        if gi == 0.0:
            for j in range(th.shape[0]):
                diff = th[j] - bi
                eta = a * diff
                ej = ex[j]
                r = 1.0 / (1.0 + ej)
                s = r if eta >= 0.0 else ej * r
                value += y[j] * eta - k[j] * max(eta, 0.0)
                prod *= 1.0 + min(k[j], 1.0) * ej   # unused (and harmless) without a shared K
                de = y[j] - k[j] * s
                gt[j] += de * a
                d_eta_sum += de
                d_eta_a += de * diff
        else:
            for j in range(th.shape[0]):
                diff = th[j] - bi
                eta = a * diff
                ej = ex[j]
                r = 1.0 / (1.0 + ej)
                s = r if eta >= 0.0 else ej * r
                p = gi + (1.0 - gi) * s
                fail = k[j] - y[j]
                value += fail * (log_q0 - max(eta, 0.0))
                prod *= p if y[j] > 0.0 else (r if fail > 0.0 else 1.0)   # likewise
                p_out[j] = p
                de = y[j] * (1.0 - gi) * s * (1.0 - s) / p - fail * s
                gt[j] += de * a
                d_eta_sum += de
                d_eta_a += de * diff
        if product:
            value += math.log(prod) if gi > 0.0 else -shared_k * math.log(prod)
    if not product:   # a log per cell, in a loop of their own
        if gi == 0.0:
            for j in range(m):
                value -= ki[j] * math.log1p(e[j])
        else:
            for j in range(m):
                value += yi[j] * math.log(q[j]) - (ki[j] - yi[j]) * math.log1p(e[j])
    return value, d_eta_sum, d_eta_a


@numba.njit(cache=True, inline="always")
def _exps(theta, bi, a, e):
    """e = exp(−|a(θ_j − b_i)|), one scalar exp a cell."""
    for j in range(theta.shape[0]):
        e[j] = math.exp(-abs(a * (theta[j] - bi)))


@numba.njit(cache=True, inline="always", fastmath=_REGROUP)
def _exps_vector(theta, bi, a, e):
    """The same through libmvec, four cells a call (:mod:`benchmeasure.irt.vector_exp`; only where it runs)."""
    for j in range(theta.shape[0]):
        e[j] = -abs(a * (theta[j] - bi))
    exp_in_place(e)


@numba.njit(cache=True, inline="always")
def _twopl_item(i, z, buf, theta, b, e, q, grad, grad_theta, grad_b):
    """Item i's terms (e holding its exps): its value returned, its gradient added."""
    head = _vec(buf, 0)
    m, n, slopes, sd = int(head[0]), int(head[1]), head[2] > 0.5, head[3]
    y, k, g = _mat(buf, 1), _mat(buf, 2), _vec(buf, 3)   # y and K stored item-major (N, M): contiguous columns
    shared_k, blocks = _vec(buf, 6), _vec(buf, 7)        # per item: the K of its present cells if one; cells per log
    a = math.exp(sd * z[m + n + i]) if slopes else 1.0
    gi = g[i]
    v, d_eta_sum, d_eta_a = _item_pass(theta, b[i], a, gi, math.log1p(-gi), y[i], k[i], shared_k[i],
                                       int(blocks[i]), e, q, grad_theta)
    grad_b[i] = -a * d_eta_sum
    if slopes:
        grad[m + n + i] = sd * a * d_eta_a
    return v


@numba.njit(cache=True, inline="always")
def _twopl_slope(i, z, buf):
    head = _vec(buf, 0)
    m, n = int(head[0]), int(head[1])
    return math.exp(head[3] * z[m + n + i]) if head[2] > 0.5 else 1.0


@numba.njit(cache=True, inline="always")
def _twopl_done(value, z, buf, out, logp, grad, grad_theta, grad_b):
    head = _vec(buf, 0)
    m, n = int(head[0]), int(head[1])
    if head[4] > 0.5:   # the chain rule through Q
        _rotate_gradient(grad_theta, grad_b, head[5], head[6], _vec(buf, 4), _vec(buf, 5), grad)
    else:
        grad[:m] = grad_theta
        grad[m:m + n] = grad_b
    return _finish(value, grad, z, out, logp)


@numba.njit(cache=True)
def _twopl_call(z, buf, out, logp):
    """The log density and its gradient, one scalar exp a cell."""
    head = _vec(buf, 0)
    m, n = int(head[0]), int(head[1])
    theta, b = np.empty(m), np.empty(n)
    _twopl_unpack(z, buf, theta, b)
    grad, grad_theta, grad_b = np.zeros(z.shape[0]), np.zeros(m), np.empty(n)
    e, q = np.empty(m), np.empty(m)   # scratch: exp(−|η|) and p of one item's cells
    value = 0.0
    for i in range(n):
        _exps(theta, b[i], _twopl_slope(i, z, buf), e)
        value += _twopl_item(i, z, buf, theta, b, e, q, grad, grad_theta, grad_b)
    return _twopl_done(value, z, out=out, logp=logp, buf=buf, grad=grad, grad_theta=grad_theta, grad_b=grad_b)


@numba.njit(cache=True)
def _twopl_call_vector(z, buf, out, logp):
    """The same with libmvec's exp (compiled only where :data:`~benchmeasure.irt.vector_exp.AVAILABLE`)."""
    head = _vec(buf, 0)
    m, n = int(head[0]), int(head[1])
    theta, b = np.empty(m), np.empty(n)
    _twopl_unpack(z, buf, theta, b)
    grad, grad_theta, grad_b = np.zeros(z.shape[0]), np.zeros(m), np.empty(n)
    e, q = np.empty(m), np.empty(m)
    value = 0.0
    for i in range(n):
        _exps_vector(theta, b[i], _twopl_slope(i, z, buf), e)
        value += _twopl_item(i, z, buf, theta, b, e, q, grad, grad_theta, grad_b)
    return _twopl_done(value, z, out=out, logp=logp, buf=buf, grad=grad, grad_theta=grad_theta, grad_b=grad_b)


def _twopl_logp(dim, x, grad, logp, data):
    return _twopl_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


def _twopl_logp_vector(dim, x, grad, logp, data):
    return _twopl_call_vector(numba.carray(x, (dim,)), _buffer(data), numba.carray(grad, (dim,)),
                              numba.carray(logp, (1,)))


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
    k = np.asarray(trials, dtype=float)
    top = k.max(axis=0) if k.size else np.zeros(n)
    shared_k = np.where(np.all((k == 0.0) | (k == top), axis=0), top, 0.0)   # 0: the item's K differ
    # a binary column's product of factors in [g, 1] (g > 0) stays above e^-650 ≈ 1e-282 over this many cells
    blocks = np.minimum(_BLOCK, np.maximum(1, np.floor(650.0 / -np.log(np.minimum(np.where(g > 0, g, 0.5), 0.5)))))
    buf = pack(head, y.T, k.T, g, _householder(m), _householder(n), shared_k, blocks)
    variables = (("theta", "model"), ("b", "item")) + ((("a", "item"),) if slopes else ())
    return Density("2pl", buf, m + n + (n if slopes else 0), variables,
                   {"model": list(models), "item": list(items)})


# the route's pair: with libmvec's exp where it runs, else the scalar one; "2pl-scalar" is always the scalar one
register_pair("2pl", _twopl_logp_vector if VECTOR_EXP else _twopl_logp, _twopl_expand)
register_pair("2pl-scalar", _twopl_logp, _twopl_expand)
