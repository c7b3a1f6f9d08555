"""The joint route's log density, compiled once for nutpie (:mod:`benchmeasure.irt.compiled`): the paper's joint
1PL in the rotated coordinates (θ, b) = Q·z of :class:`benchmeasure.irt.model.Rotation` or directly in (θ, b), with
the fused binomial kernel (:func:`.kernel.loglik_and_grad`); with anchors, the free b only. Stored draws: θ and b
(and ``b_free`` with anchors), as the PyMC model names them."""

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
from benchmeasure.irt.routes.joint.kernel import loglik_and_grad


@numba.njit(cache=True, inline="always")
def _head(buf):
    """(rotated, M, cos, sin of the rotation, the free items' indices) from the joint density's buffer."""
    head = _vec(buf, 0)
    return head[0] == 0.0, int(head[1]), head[2], head[3], _vec(buf, 10)


@numba.njit(cache=True)
def _joint_unpack(z, buf, theta, b):
    """θ and every b (anchors at their value) from the sampler's coordinates z; returns the free b."""
    rotated, m, c, s, free = _head(buf)
    n_free = free.shape[0]
    b_free = np.empty(n_free)
    if rotated:
        _unrotate(z, m, n_free, c, s, _vec(buf, 1), _vec(buf, 2), theta, b_free)
    else:
        theta[:] = z[:m]
        b_free[:] = z[m:]
    b[:] = _vec(buf, 9)
    for f in range(n_free):
        b[int(free[f])] = b_free[f]
    return b_free


@numba.njit(cache=True)
def _joint_call(z, buf, out, logp):
    rotated, m, c, s, free = _head(buf)
    theta = np.empty(m)
    b = np.empty(_vec(buf, 9).shape[0])
    _joint_unpack(z, buf, theta, b)
    scalars = _vec(buf, 6)
    guessing = scalars[1] > 0.5
    # the counts enter only the guessing terms, which take them as integers
    y = _mat(buf, 3).astype(np.int64) if guessing else np.zeros((1, 1), dtype=np.int64)
    value, grad_theta, grad_b = loglik_and_grad(theta, b, y, _vec(buf, 4), _vec(buf, 5), scalars[0],
                                                _vec(buf, 7), _vec(buf, 8), guessing, scalars[2])
    grad_free = np.empty(free.shape[0])
    for f in range(free.shape[0]):
        grad_free[f] = grad_b[int(free[f])]
    grad = np.empty(z.shape[0])
    if rotated:
        _rotate_gradient(grad_theta, grad_free, c, s, _vec(buf, 1), _vec(buf, 2), grad)
    else:
        grad[:m] = grad_theta
        grad[m:] = grad_free
    return _finish(value, grad, z, out, logp)


def _joint_logp(dim, x, grad, logp, data):
    buf = _buffer(data)
    return _joint_call(numba.carray(x, (dim,)), buf, numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


@numba.njit(cache=True)
def _joint_expand_call(z, buf, out):
    m = int(_vec(buf, 0)[1])
    n = _vec(buf, 9).shape[0]
    theta = np.empty(m)
    b = np.empty(n)
    b_free = _joint_unpack(z, buf, theta, b)
    out[:m] = theta
    out[m:m + n] = b
    if out.shape[0] > m + n:   # anchored: b_free stored too
        out[m + n:] = b_free


def _joint_expand(dim, n_expanded, x, out, data):
    _joint_expand_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(out, (n_expanded,)))
    return _OK


def joint_density(counts, n_trials: int, guessing, *, models, items, parametrization: str = "rotated",
                  fixed_b=None) -> Density:
    """The joint route's density (same model as :func:`benchmeasure.irt.model.build_model` with the fused
    binomial kernel): stored ``theta``, ``b`` and, with anchors, ``b_free``."""
    from benchmeasure.irt.model import _householder
    from benchmeasure.irt.routes.joint.kernel import LoglikData

    y = np.asarray(counts, dtype=np.int64)
    n_models, n_items = y.shape
    fixed = np.full(n_items, np.nan) if fixed_b is None else np.asarray(fixed_b, dtype=float)
    free = np.flatnonzero(np.isnan(fixed))
    total = n_models + free.size
    c, s = math.sqrt(n_models / total), math.sqrt(free.size / total)
    lik = LoglikData(y, n_trials, guessing)
    head = (0.0 if parametrization == "rotated" else 1.0, n_models, c, s)
    buf = pack(head, _householder(n_models), _householder(free.size) if free.size else np.zeros(1), y,
               lik.row_sums, lik.col_sums, (lik.n_trials, float(lik.has_guessing), lik.constant), lik.g,
               lik.log_g_pos, np.nan_to_num(fixed), free.astype(float) if free.size else np.zeros(0))
    variables = (("theta", "model"), ("b", "item"))
    coords = {"model": list(models), "item": list(items)}
    if fixed_b is not None:
        variables += (("b_free", "free_item"),)
        coords["free_item"] = [items[i] for i in free]
    return Density("joint", buf, total, variables, coords)


register_pair("joint", _joint_logp, _joint_expand)
