"""The fused 1PL log-likelihood (:mod:`benchmeasure.irt.kernel`) as a PyTensor Op.

``FusedLoglikGrad(theta, b, *constants)`` has three outputs, ℓ, ∂ℓ/∂θ and ∂ℓ/∂b, computed
in one pass. Its pullback (reverse-mode gradient) reuses the node's own gradient outputs,
so the log-density and its gradient cost one kernel call per leapfrog step.
:class:`FusedLoglik` is the callable that builds the node from a matrix's constants.
:class:`MarginalLoglikGrad` / :class:`MarginalLoglik` do the same for the collapsed sampler's
marginal log-likelihood of θ (:mod:`benchmeasure.irt.collapsed`, b integrated out). The Op runs compiled in
PyTensor's Numba back end (nutpie) and through ``perform`` (PyMC's NUTS, ``find_MAP``).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from benchmeasure.irt.collapsed import CollapsedData, marginal_logp_grad, node_exps
from benchmeasure.irt.collapsed_holes import CollapsedHolesData, marginal_logp_grad_holes
from benchmeasure.irt.kernel import LoglikData, loglik_and_grad


def _unpack_and_run(theta, b, y, row_sums, col_sums, g, log_g_pos, scalars):
    return loglik_and_grad(theta, b, y, row_sums, col_sums, scalars[0], g, log_g_pos, scalars[1] > 0.5, scalars[2])


class FusedLoglikGrad(Op):
    """(θ, b, Y, R, C, g, log g, [K, has_guessing, constant]) → (ℓ, ∂ℓ/∂θ, ∂ℓ/∂b)."""

    __props__ = ()

    def make_node(self, theta, b, *constants):
        theta = pt.as_tensor_variable(theta).astype("float64")
        b = pt.as_tensor_variable(b).astype("float64")
        constants = [pt.as_tensor_variable(c) for c in constants]
        return Apply(self, [theta, b, *constants], [pt.dscalar(), pt.dvector(), pt.dvector()])

    def perform(self, node, inputs, outputs):
        theta, b, *constants = inputs
        value, grad_theta, grad_b = _unpack_and_run(np.ascontiguousarray(theta), np.ascontiguousarray(b), *constants)
        outputs[0][0] = np.asarray(value, dtype=np.float64)
        outputs[1][0] = grad_theta
        outputs[2][0] = grad_b

    def infer_shape(self, node, input_shapes):
        return [(), input_shapes[0], input_shapes[1]]

    def pullback(self, inputs, outputs, cotangents):
        # The gradient outputs of this very node are ∂ℓ/∂θ and ∂ℓ/∂b: no second kernel call.
        gz = cotangents[0]
        if any(not isinstance(c.type, DisconnectedType) for c in cotangents[1:]):
            raise NotImplementedError("only the log-likelihood output of FusedLoglikGrad is differentiable")
        return [gz * outputs[1], gz * outputs[2]] + [DisconnectedType()() for _ in inputs[2:]]

    def connection_pattern(self, node):
        # ℓ depends on θ and b; the constants never receive a gradient
        return [[True, True, True], [True, True, True]] + [[False, False, False]] * (len(node.inputs) - 2)


class FusedLoglik:
    """``op(theta, b)`` → ℓ(θ, b) for one :class:`~benchmeasure.irt.kernel.LoglikData`."""

    def __init__(self, data: LoglikData):
        self.data = data
        self._op = FusedLoglikGrad()

    def __call__(self, theta, b):
        d = self.data
        scalars = np.array([d.n_trials, 1.0 if d.has_guessing else 0.0, d.constant])
        constants = [d.y, d.row_sums, d.col_sums, d.g, d.log_g_pos, scalars]
        return self._op(theta, b, *[pytensor.shared(c, borrow=False) for c in constants])[0]


class MarginalLoglikGrad(Op):
    """(θ, nodes, log weights, c, n_c, R, Y_u, n_u, g_u, g bounds, [K]) → (ℓ(θ) with b integrated out, ∂ℓ/∂θ)."""

    __props__ = ()

    def make_node(self, theta, *constants):
        theta = pt.as_tensor_variable(theta).astype("float64")
        constants = [pt.as_tensor_variable(c) for c in constants]
        return Apply(self, [theta, *constants], [pt.dscalar(), pt.dvector()])

    def perform(self, node, inputs, outputs):
        theta, nodes, log_w, c_values, c_counts, row_sums, yu, nu, gu, gbounds, scalars = inputs
        value, grad = marginal_logp_grad(np.ascontiguousarray(theta), nodes, node_exps(nodes), log_w, scalars[0],
                                         c_values, c_counts, row_sums, yu, nu, gu, gbounds)
        outputs[0][0] = np.asarray(value, dtype=np.float64)
        outputs[1][0] = grad

    def infer_shape(self, node, input_shapes):
        return [(), input_shapes[0]]

    def pullback(self, inputs, outputs, cotangents):
        if not isinstance(cotangents[1].type, DisconnectedType):
            raise NotImplementedError("only the log-likelihood output of MarginalLoglikGrad is differentiable")
        return [cotangents[0] * outputs[1]] + [DisconnectedType()() for _ in inputs[1:]]

    def connection_pattern(self, node):
        return [[True, True]] + [[False, False]] * (len(node.inputs) - 1)


class MarginalLoglik:
    """``op(theta)`` → the marginal log-likelihood of θ for one :class:`~benchmeasure.irt.collapsed.CollapsedData`."""

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


class MarginalHolesLoglikGrad(MarginalLoglikGrad):
    """(θ, nodes, log weights, patterns, c pattern, c, n_c, R, Y_u, T_u, n_u, g_u, g bounds) → (ℓ(θ), ∂ℓ/∂θ) with
    holes or K per cell (:mod:`benchmeasure.irt.collapsed_holes`)."""

    def perform(self, node, inputs, outputs):
        theta, *constants = inputs
        value, grad = marginal_logp_grad_holes(np.ascontiguousarray(theta), *constants)
        outputs[0][0] = np.asarray(value, dtype=np.float64)
        outputs[1][0] = grad


def _kernel_version() -> int:
    """A number that changes whenever kernel.py or this file changes (PyTensor's cache key salt)."""
    import hashlib
    import importlib.resources

    here = importlib.resources.files(__package__)
    digest = hashlib.sha256()
    for name in ("kernel.py", "pytensor_op.py", "collapsed.py", "collapsed_holes.py", "quadrature.py"):
        digest.update(here.joinpath(name).read_bytes())
    return int.from_bytes(digest.digest()[:6], "big")


_KERNEL_VERSION = _kernel_version()


def _register_numba():
    from pytensor.link.numba.dispatch.basic import numba_njit, register_funcify_default_op_cache_key

    @register_funcify_default_op_cache_key(FusedLoglikGrad)
    def _funcify(op, node=None, **kwargs):
        @numba_njit
        def fused(theta, b, y, row_sums, col_sums, g, log_g_pos, scalars):
            # PyTensor hands arrays over with layout "any"; asking for C-contiguous views (no
            # copy) makes Numba use the kernel's vectorized C-layout specialization.
            value, grad_theta, grad_b = loglik_and_grad(
                np.ascontiguousarray(theta), np.ascontiguousarray(b), np.ascontiguousarray(y),
                np.ascontiguousarray(row_sums), np.ascontiguousarray(col_sums), scalars[0],
                np.ascontiguousarray(g), np.ascontiguousarray(log_g_pos), scalars[1] > 0.5, scalars[2])
            return np.asarray(value), grad_theta, grad_b

        # PyTensor caches this compiled wrapper on disk under a key made of the Op and this
        # number; the kernel is linked into it, so the number must change with the kernel.
        return fused, _KERNEL_VERSION

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
