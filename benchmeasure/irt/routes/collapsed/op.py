"""The collapsed route's marginal log-likelihood of θ (b integrated out: :mod:`.marginal`, :mod:`.holes`) as a
PyTensor Op (:class:`~benchmeasure.irt.graph_op.ValueGradOp`), for PyMC's NUTS and ``find_MAP``
(:func:`benchmeasure.irt.model.build_collapsed_model`)."""

from __future__ import annotations

import numpy as np
import pytensor

from benchmeasure.irt.graph_op import ValueGradOp, source_version
from benchmeasure.irt.routes.collapsed.holes import CollapsedHolesData, marginal_logp_grad_holes
from benchmeasure.irt.routes.collapsed.marginal import CollapsedData, marginal_logp_grad, node_exps


class MarginalLoglikGrad(ValueGradOp):
    """(θ, nodes, log weights, c, n_c, R, Y_u, n_u, g_u, g bounds, [K]) → (ℓ(θ) with b integrated out, ∂ℓ/∂θ)."""

    def compute(self, theta, nodes, log_w, c_values, c_counts, row_sums, yu, nu, gu, gbounds, scalars):
        return marginal_logp_grad(np.ascontiguousarray(theta), nodes, node_exps(nodes), log_w, scalars[0],
                                  c_values, c_counts, row_sums, yu, nu, gu, gbounds)


class MarginalHolesLoglikGrad(ValueGradOp):
    """(θ, nodes, log weights, patterns, c pattern, c, n_c, R, Y_u, T_u, n_u, g_u, g bounds) → (ℓ(θ), ∂ℓ/∂θ) with
    holes or K per cell (:mod:`.holes`)."""

    def compute(self, theta, *constants):
        return marginal_logp_grad_holes(np.ascontiguousarray(theta), *constants)


class MarginalLoglik:
    """``op(theta)`` → the marginal log-likelihood of θ for one :class:`~.marginal.CollapsedData` (or
    :class:`~.holes.CollapsedHolesData`)."""

    def __init__(self, data: CollapsedData):
        self.data = data
        self._op = MarginalLoglikGrad()

    def __call__(self, theta):
        d = self.data
        if isinstance(d, CollapsedHolesData):  # holes or K per cell: the trials patterns travel as constants
            return MarginalHolesLoglikGrad()(theta, *[pytensor.shared(np.ascontiguousarray(c), borrow=False)
                                                      for c in d.args()])[0]
        constants = [d.grid.nodes, d.grid.log_weights, d.c_values, d.c_counts, d.row_sums, d.yu, d.nu, d.gu,
                     d.gbounds, np.array([float(d.n_trials)])]
        return self._op(theta, *[pytensor.shared(c, borrow=False) for c in constants])[0]


# the kernels are linked into the compiled wrappers that PyTensor caches on disk under the Op and this number
_KERNEL_VERSION = source_version("irt/routes/collapsed/op.py", "irt/routes/collapsed/marginal.py",
                                 "irt/routes/collapsed/holes.py", "irt/routes/collapsed/quadrature.py",
                                 "irt/graph_op.py")


def _register_numba():
    from pytensor.link.numba.dispatch.basic import numba_njit, register_funcify_default_op_cache_key

    @register_funcify_default_op_cache_key(MarginalLoglikGrad)
    def _funcify_marginal(op, node=None, **kwargs):
        @numba_njit
        def marginal(theta, nodes, log_w, c_values, c_counts, row_sums, yu, nu, gu, gbounds, scalars):
            nodes = np.ascontiguousarray(nodes)
            value, grad = marginal_logp_grad(
                np.ascontiguousarray(theta), nodes, node_exps(nodes), np.ascontiguousarray(log_w), scalars[0],
                np.ascontiguousarray(c_values), np.ascontiguousarray(c_counts), np.ascontiguousarray(row_sums),
                np.ascontiguousarray(yu), np.ascontiguousarray(nu), np.ascontiguousarray(gu),
                np.ascontiguousarray(gbounds), )
            return np.asarray(value), grad

        return marginal, _KERNEL_VERSION

    @register_funcify_default_op_cache_key(MarginalHolesLoglikGrad)
    def _funcify_marginal_holes(op, node=None, **kwargs):
        @numba_njit
        def marginal_holes(theta, nodes, log_w, patterns, c_pattern, c_values, c_counts, row_sums, yu, ku, nu, gu,
                           gbounds):
            value, grad = marginal_logp_grad_holes(
                np.ascontiguousarray(theta), np.ascontiguousarray(nodes), np.ascontiguousarray(log_w),
                np.ascontiguousarray(patterns), np.ascontiguousarray(c_pattern), np.ascontiguousarray(c_values),
                np.ascontiguousarray(c_counts), np.ascontiguousarray(row_sums), np.ascontiguousarray(yu),
                np.ascontiguousarray(ku), np.ascontiguousarray(nu), np.ascontiguousarray(gu),
                np.ascontiguousarray(gbounds))
            return np.asarray(value), grad

        return marginal_holes, _KERNEL_VERSION


_register_numba()
