"""The 2pl route's log density, compiled once for nutpie (:mod:`benchmeasure.irt.compiled`): the same model as
:func:`benchmeasure.irt.routes.twopl.model.build_2pl_model` (which stays the reference), in the coordinates
z = (θ, b, u) with log a = 0.5·u, so every coordinate has a Normal(0, 1) prior. A cell with K = 0 (absent)
contributes nothing. Stored draws: ``theta``, ``b``, ``a`` (and with ``slopes=False`` every a is 1 and u is not
sampled: the 1PL of the comparison)."""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.compiled import _OK, Density, _buffer, _finish, _mat, _vec, pack, register_pair
from benchmeasure.irt.routes.twopl.model import SLOPE_SD


@numba.njit(cache=True)
def _twopl_call(z, buf, out, logp):
    head = _vec(buf, 0)
    m, n, slopes, sd = int(head[0]), int(head[1]), head[2] > 0.5, head[3]
    y, k, g = _mat(buf, 1), _mat(buf, 2), _vec(buf, 3)   # y and K stored item-major (N, M): contiguous columns
    theta, b = z[:m], z[m:m + n]
    grad = np.zeros(z.shape[0])
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
                grad[j] += de * a
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
                grad[j] += de * a
                d_eta_sum += de
                d_eta_a += de * diff
        grad[m + i] = -a * d_eta_sum
        if slopes:
            grad[m + n + i] = sd * a * d_eta_a
    return _finish(value, grad, z, out, logp)


def _twopl_logp(dim, x, grad, logp, data):
    return _twopl_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


@numba.njit(cache=True)
def _twopl_expand_call(z, buf, out):
    head = _vec(buf, 0)
    m, n, slopes, sd = int(head[0]), int(head[1]), head[2] > 0.5, head[3]
    out[:m + n] = z[:m + n]
    if slopes:
        for i in range(n):
            out[m + n + i] = math.exp(sd * z[m + n + i])


def _twopl_expand(dim, n_expanded, x, out, data):
    _twopl_expand_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(out, (n_expanded,)))
    return _OK


def twopl_density(counts, trials, guessing, *, models, items, slopes: bool = True) -> Density:
    """The 2PL's density (``slopes=False``: the 1PL's, every a = 1) with stored ``theta``, ``b`` (and ``a``)."""
    y = np.asarray(counts, dtype=float)
    m, n = y.shape
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (n,))
    buf = pack((m, n, 1.0 if slopes else 0.0, SLOPE_SD), y.T, np.asarray(trials, dtype=float).T, g)
    variables = (("theta", "model"), ("b", "item")) + ((("a", "item"),) if slopes else ())
    return Density("2pl", buf, m + n + (n if slopes else 0), variables,
                   {"model": list(models), "item": list(items)})


register_pair("2pl", _twopl_logp, _twopl_expand)
