"""The collapsed route's log density, compiled once for nutpie (:mod:`benchmeasure.irt.compiled`): z ~ Normal(0, I),
θ = H·z (H the Householder reflection of :func:`benchmeasure.irt.model.build_collapsed_model`), plus the marginal
log-likelihood of θ with every b integrated out (:func:`.marginal.marginal_logp_grad`, or its holes / K-per-cell
form :func:`.holes.marginal_logp_grad_holes`); stored draws: θ."""

from __future__ import annotations

import numpy as np

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.compiled import _OK, Density, _buffer, _finish, _mat, _reflect, _vec, pack, register_pair
from benchmeasure.irt.routes.collapsed.holes import marginal_logp_grad_holes
from benchmeasure.irt.routes.collapsed.marginal import marginal_logp_grad


@numba.njit(cache=True)
def holes_loglik(theta, buf, first):
    """The holes / K-per-cell marginal log-likelihood of θ and its gradient, its 12 arrays (those of
    :meth:`~benchmeasure.irt.routes.collapsed.holes.CollapsedHolesData.args`) the buffer's fields ``first`` onwards."""
    f = first
    return marginal_logp_grad_holes(theta, _vec(buf, f), _vec(buf, f + 1), _mat(buf, f + 2),
                                    _vec(buf, f + 3).astype(np.int64), _vec(buf, f + 4), _vec(buf, f + 5),
                                    _vec(buf, f + 6), _mat(buf, f + 7), _mat(buf, f + 8), _vec(buf, f + 9),
                                    _vec(buf, f + 10), _vec(buf, f + 11).astype(np.int64))


# ---------------------------------------------------------------------------------------------
# the collapsed route: θ = H·z, every b integrated out


@numba.njit(cache=True)
def _complete_call(z, buf, out, logp):
    v = _vec(buf, 0)
    theta = np.empty(z.shape[0])
    _reflect(z, v, theta)
    value, grad_theta = marginal_logp_grad(theta, _vec(buf, 1), _mat(buf, 2), _vec(buf, 3), _vec(buf, 4)[0],
                                           _vec(buf, 5), _vec(buf, 6), _vec(buf, 7), _mat(buf, 8), _vec(buf, 9),
                                           _vec(buf, 10), _vec(buf, 11).astype(np.int64))
    grad = np.empty(z.shape[0])
    _reflect(grad_theta, v, grad)
    return _finish(value, grad, z, out, logp)


@numba.njit(cache=True)
def _holes_call(z, buf, out, logp):
    v = _vec(buf, 0)
    theta = np.empty(z.shape[0])
    _reflect(z, v, theta)
    value, grad_theta = holes_loglik(theta, buf, 1)
    grad = np.empty(z.shape[0])
    _reflect(grad_theta, v, grad)
    return _finish(value, grad, z, out, logp)


def _complete_logp(dim, x, grad, logp, data):
    buf = _buffer(data)
    return _complete_call(numba.carray(x, (dim,)), buf, numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


def _holes_logp(dim, x, grad, logp, data):
    buf = _buffer(data)
    return _holes_call(numba.carray(x, (dim,)), buf, numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


def _collapsed_expand(dim, n_expanded, x, out, data):
    buf = _buffer(data)
    z = numba.carray(x, (dim,))
    theta = numba.carray(out, (n_expanded,))
    _reflect(z, _vec(buf, 0), theta)
    return _OK


def collapsed_density(data, models) -> Density:
    """The collapsed route's density for a :class:`~benchmeasure.irt.routes.collapsed.marginal.CollapsedData` or
    :class:`~benchmeasure.irt.routes.collapsed.holes.CollapsedHolesData` (same model as
    :func:`benchmeasure.irt.model.build_collapsed_model`)."""
    from benchmeasure.irt.model import _householder

    v = _householder(data.n_models)
    # two compiled pairs, not one with a switch: a fit compiles only the likelihood its matrix needs (a cold
    # complete-matrix fit no longer compiles the holes kernel, and the reverse)
    route = "collapsed_holes" if hasattr(data, "patterns") else "collapsed"   # holes or K per cell
    return Density(route, pack(v, *data.args()), data.n_models, (("theta", "model"),), {"model": list(models)})




register_pair("collapsed", _complete_logp, _collapsed_expand)
register_pair("collapsed_holes", _holes_logp, _collapsed_expand)
