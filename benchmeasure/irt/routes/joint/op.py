"""The fused 1PL log-likelihood (:mod:`.kernel`) as a PyTensor Op (:class:`~benchmeasure.irt.graph_op.ValueGradOp`).

``FusedLoglikGrad(theta, b, *constants)`` has three outputs, ℓ, ∂ℓ/∂θ and ∂ℓ/∂b, computed in one pass.
:class:`FusedLoglik` is the callable that builds the node from a matrix's constants (:func:`loglik_op`);
:func:`pytensor_loglik` writes the same elementwise expression with PyTensor operations, for back ends without the
Op (JAX) and as a cross-check.
"""

from __future__ import annotations

import numpy as np
import pytensor

from benchmeasure.irt.graph_op import ValueGradOp, source_version
from benchmeasure.irt.routes.joint.kernel import LoglikData, loglik_and_grad


def _unpack_and_run(theta, b, y, row_sums, col_sums, g, log_g_pos, scalars):
    return loglik_and_grad(theta, b, y, row_sums, col_sums, scalars[0], g, log_g_pos, scalars[1] > 0.5, scalars[2])


class FusedLoglikGrad(ValueGradOp):
    """(θ, b, Y, R, C, g, log g, [K, has_guessing, constant]) → (ℓ, ∂ℓ/∂θ, ∂ℓ/∂b)."""

    n_wrt = 2

    def compute(self, theta, b, *constants):
        return _unpack_and_run(np.ascontiguousarray(theta), np.ascontiguousarray(b), *constants)


class FusedLoglik:
    """``op(theta, b)`` → ℓ(θ, b) for one :class:`~.kernel.LoglikData`."""

    def __init__(self, data: LoglikData):
        self.data = data
        self._op = FusedLoglikGrad()

    def __call__(self, theta, b):
        d = self.data
        scalars = np.array([d.n_trials, 1.0 if d.has_guessing else 0.0, d.constant])
        constants = [d.y, d.row_sums, d.col_sums, d.g, d.log_g_pos, scalars]
        return self._op(theta, b, *[pytensor.shared(c, borrow=False) for c in constants])[0]


def loglik_op(counts, n_trials: int, guessing):
    """A PyTensor Op computing (ℓ, ∂ℓ/∂θ, ∂ℓ/∂b) for this matrix; ``op(theta, b)`` returns ℓ."""
    return FusedLoglik(LoglikData(counts, n_trials, guessing))


def pytensor_loglik(value, n_trials: int, guessing, theta, b):
    """The same log-likelihood as the fused kernel, elementwise in PyTensor (shape (M, N))."""
    import pytensor.tensor as pt

    g = np.asarray(guessing, dtype=float)
    eta = theta[:, None] - b[None, :]
    out = value * eta - n_trials * pt.softplus(eta)
    if np.any(g > 0):
        with np.errstate(divide="ignore"):
            log_g = np.where(g > 0, np.log(np.where(g > 0, g, 1.0)), -np.inf)
        log1m_g = np.log1p(-g)
        if g.ndim == 1:  # per item: broadcast along the item axis
            log_g, log1m_g = log_g[None, :], log1m_g[None, :]
        out = out + value * pt.softplus(log_g - eta) + (n_trials - value) * log1m_g
    return out


# the kernel is linked into the compiled wrapper that PyTensor caches on disk under the Op and this number
_KERNEL_VERSION = source_version("irt/routes/joint/kernel.py", "irt/routes/joint/op.py", "irt/graph_op.py")


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

        return fused, _KERNEL_VERSION


_register_numba()
