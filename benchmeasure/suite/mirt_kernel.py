"""One PyTensor Op for the collapsed LKJ model's likelihood: every benchmark's b-integrated marginal at once.

``SuiteMarginal(data)(theta)`` → Σ_k log ∫ … db of benchmark k's sub-matrix at θ_{·,k} (θ is M × B), with its
gradient, by one Numba call that loops over the benchmarks and runs
:func:`benchmeasure.irt.routes.collapsed.holes.marginal_logp_grad_holes` on each (the per-benchmark arrays packed into
flat arrays with offsets). Why one Op and not one per benchmark: PyTensor's Numba back end compiles every node
of the graph on its own, kernel included; with one node per benchmark, compiling the 6-benchmark model took
336 s against 44 s for 2 benchmarks (and > 10 min for MMLU-Pro's 14, stopped), measured on this machine.
"""

from __future__ import annotations

import numpy as np
import pytensor

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.graph_op import ValueGradOp, source_version
from benchmeasure.irt.routes.collapsed.holes import marginal_logp_grad_holes


def pack(datas: list) -> list:
    """The flat arrays (and offsets) of a list of
    :class:`~benchmeasure.irt.routes.collapsed.holes.CollapsedHolesData`."""
    def offsets(sizes):
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    m = datas[0].n_models
    args = [d.args() for d in datas]   # nodes, log w, patterns, c_pattern, c, n_c, R, Y_u, T_u, n_u, g_u, g bounds
    return [
        np.concatenate([a[0] for a in args]), np.concatenate([a[1] for a in args]),
        offsets([a[0].size for a in args]),
        np.concatenate([a[2].reshape(-1, m) for a in args], axis=0), offsets([a[2].shape[0] for a in args]),
        np.concatenate([a[3] for a in args]).astype(np.int64), np.concatenate([a[4] for a in args]),
        np.concatenate([a[5] for a in args]), offsets([a[4].size for a in args]),
        np.stack([a[6] for a in args]),
        np.concatenate([a[7].reshape(-1, m) for a in args], axis=0),
        np.concatenate([a[8].reshape(-1, m) for a in args], axis=0),
        np.concatenate([a[9] for a in args]), np.concatenate([a[10] for a in args]),
        offsets([a[10].size for a in args]),
        np.concatenate([a[11] for a in args]).astype(np.int64), offsets([a[11].size for a in args]),
    ]


@numba.njit(cache=True)
def suite_logp_grad(theta, nodes, log_w, grid_off, patterns, pat_off, c_pattern, c_values, c_counts, c_off,
                    row_sums, yu, ku, nu, gu, u_off, gbounds, gb_off):
    """Σ_k marginal_logp_grad_holes(θ[:, k], benchmark k's arrays) and the (M, B) gradient."""
    m, n_bench = theta.shape
    value = 0.0
    grad = np.zeros((m, n_bench))
    for k in range(n_bench):
        g0, g1 = grid_off[k], grid_off[k + 1]
        p0, p1 = pat_off[k], pat_off[k + 1]
        c0, c1 = c_off[k], c_off[k + 1]
        u0, u1 = u_off[k], u_off[k + 1]
        b0, b1 = gb_off[k], gb_off[k + 1]
        v, g = marginal_logp_grad_holes(
            np.ascontiguousarray(theta[:, k]), np.ascontiguousarray(nodes[g0:g1]),
            np.ascontiguousarray(log_w[g0:g1]), np.ascontiguousarray(patterns[p0:p1]),
            np.ascontiguousarray(c_pattern[c0:c1]), np.ascontiguousarray(c_values[c0:c1]),
            np.ascontiguousarray(c_counts[c0:c1]), np.ascontiguousarray(row_sums[k]),
            np.ascontiguousarray(yu[u0:u1]), np.ascontiguousarray(ku[u0:u1]), np.ascontiguousarray(nu[u0:u1]),
            np.ascontiguousarray(gu[u0:u1]), np.ascontiguousarray(gbounds[b0:b1]))
        value += v
        for j in range(m):
            grad[j, k] = g[j]
    return value, grad


class SuiteMarginalGrad(ValueGradOp):
    """(θ (M × B), packed constants) → (Σ_k ℓ_k(θ_{·,k}) with every b integrated out, its gradient)."""

    def compute(self, theta, *constants):
        return suite_logp_grad(np.ascontiguousarray(theta), *[np.ascontiguousarray(c) for c in constants])


def suite_marginal(datas: list, theta):
    """The graph Σ_k ℓ_k(θ_{·,k}) for the per-benchmark data ``datas`` (one node)."""
    constants = [pytensor.shared(np.ascontiguousarray(c), borrow=False) for c in pack(datas)]
    return SuiteMarginalGrad()(theta, *constants)[0]


def _register_numba():
    from pytensor.link.numba.dispatch.basic import numba_njit, register_funcify_default_op_cache_key

    version = source_version("suite/mirt_kernel.py", "irt/routes/collapsed/holes.py",
                             "irt/routes/collapsed/quadrature.py", "irt/graph_op.py")

    @register_funcify_default_op_cache_key(SuiteMarginalGrad)
    def _funcify(op, node=None, **kwargs):
        @numba_njit
        def suite(theta, nodes, log_w, grid_off, patterns, pat_off, c_pattern, c_values, c_counts, c_off, row_sums,
                  yu, ku, nu, gu, u_off, gbounds, gb_off):
            value, grad = suite_logp_grad(np.ascontiguousarray(theta), nodes, log_w, grid_off, patterns, pat_off,
                                          c_pattern, c_values, c_counts, c_off, row_sums, yu, ku, nu, gu, u_off,
                                          gbounds, gb_off)
            return np.asarray(value), grad

        return suite, version


_register_numba()
