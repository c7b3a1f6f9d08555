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
def _collapsed_call(z, buf, out, logp):
    kind = int(_vec(buf, 0)[0])
    v = _vec(buf, 1)
    theta = np.empty(z.shape[0])
    _reflect(z, v, theta)
    if kind == 0:
        value, grad_theta = marginal_logp_grad(theta, _vec(buf, 2), _mat(buf, 3), _vec(buf, 4), _vec(buf, 5)[0],
                                               _vec(buf, 6), _vec(buf, 7), _vec(buf, 8), _mat(buf, 9), _vec(buf, 10),
                                               _vec(buf, 11), _vec(buf, 12).astype(np.int64))
    else:
        value, grad_theta = holes_loglik(theta, buf, 2)
    grad = np.empty(z.shape[0])
    _reflect(grad_theta, v, grad)
    return _finish(value, grad, z, out, logp)


def _collapsed_logp(dim, x, grad, logp, data):
    buf = _buffer(data)
    z = numba.carray(x, (dim,))
    out = numba.carray(grad, (dim,))
    value = numba.carray(logp, (1,))
    return _collapsed_call(z, buf, out, value)


def _collapsed_expand(dim, n_expanded, x, out, data):
    buf = _buffer(data)
    z = numba.carray(x, (dim,))
    theta = numba.carray(out, (n_expanded,))
    _reflect(z, _vec(buf, 1), theta)
    return _OK


def collapsed_density(data, models) -> Density:
    """The collapsed route's density for a :class:`~benchmeasure.irt.routes.collapsed.marginal.CollapsedData` or
    :class:`~benchmeasure.irt.routes.collapsed.holes.CollapsedHolesData` (same model as
    :func:`benchmeasure.irt.model.build_collapsed_model`)."""
    from benchmeasure.irt.model import _householder

    v = _householder(data.n_models)
    if hasattr(data, "patterns"):   # holes or K per cell
        args = data.args()
        fields = (1.0, v, *args)
    else:
        fields = (0.0, v, *data.args())
    return Density("collapsed", pack(*fields), data.n_models, (("theta", "model"),), {"model": list(models)})




register_pair("collapsed", _collapsed_logp, _collapsed_expand)
