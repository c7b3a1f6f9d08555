"""The collapsed 1PL sampler: NUTS on the abilities' marginal posterior, difficulties drawn exactly given each draw.

The paper's model (Appendix C.3): θ_j, b_i ~ Normal(0, 1), Y_ij ~ Binomial(K, g_i + (1 − g_i)·σ(θ_j − b_i)).
Given θ the difficulties are independent, so

    p(θ | Y) ∝ N(θ; 0, I) · Π_i ∫ N(b; 0, 1) Π_j Binom(Y_ij | K, p(θ_j − b, g_i)) db,        (1)
    p(b | θ, Y) = Π_i p(b_i | θ, Y_i),

and the joint posterior is sampled exactly by drawing θ from (1) with NUTS (M dimensions
instead of M + N) and then one b_i from its one-dimensional conditional for every θ draw
(:mod:`benchmeasure.irt.routes.collapsed.quadrature`: exact rejection draws from a piecewise-exponential
envelope). Each integral in (1) is a trapezoid sum on the grid of
:func:`benchmeasure.irt.routes.collapsed.quadrature.make_grid`, whose relative error (about 1e−17, checked
for every fit by :func:`quadrature_check`) is far below Monte Carlo error.

Items share integrals:

* g_i = 0: Σ_j Y_ij·η_ij − K·softplus(η_ij) = Σ_j Y_ij θ_j − C_i·b − K·Σ_j softplus(θ_j − b),
  so the integral depends on the item only through its column sum C_i (the Rasch model's
  sufficient statistic): at most M·K + 1 integrals whatever N is, all sharing one table
  S(x_k) = Σ_j softplus(θ_j − x_k) of M × G terms.
* g_i > 0: items with the same g and the same column of counts share one integral; for
  each distinct g the M × G tables log p and log(1 − p) are computed once and every
  column's log-integrand is one matrix product.

Cost of one log-density and gradient: O(M·G) for the table S, then per column-sum group a bisection and a
walk over the nodes within e^(−50) of its largest term (:func:`window_integral`: two exponentials per group,
none per term), plus one U × M × G product per distinct g with guessing; independent of the number of items.
"""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.routes.collapsed.quadrature import (
    Grid,
    cell_loglik,
    start_groups,
    window_integral,
    window_steps,
)


class CollapsedData:
    """Items grouped by what their integral depends on, with the grid (see the module docstring).

    ``c_values``/``c_counts``: distinct column sums of the g = 0 items and how many items
    have each; ``row_sums``: Σ over g = 0 items of Y_ij per model; ``yu``/``nu``/``gu``:
    distinct (g, column) pairs of the g > 0 items, sorted by g, with ``gbounds`` the start
    of each distinct g; ``item_kind``/``item_group``: per item, 0 = column-sum group
    (index into ``c_values``) or 1 = guessing group (index into ``yu``).
    """

    def __init__(self, counts, n_trials: int, guessing=0.0, grid: Grid | None = None):
        y = np.asarray(counts, dtype=np.int64)
        g, plain, col = start_groups(self, y, guessing, n_trials, grid)
        n_models = y.shape[0]
        c_values, c_index, c_counts = np.unique(col[plain], return_inverse=True, return_counts=True)
        self.c_values = c_values.astype(float)
        self.c_counts = c_counts.astype(float)
        self.item_group[plain] = c_index
        self.row_sums = y[:, plain].sum(axis=1).astype(float)
        guessed = np.flatnonzero(~plain)
        if guessed.size:
            keys = np.concatenate([g[guessed][:, None], y[:, guessed].T.astype(float)], axis=1)
            order = np.lexsort(keys.T[::-1])          # by g, then by the column
            sorted_keys = keys[order]
            new = np.ones(order.size, dtype=bool)
            new[1:] = np.any(sorted_keys[1:] != sorted_keys[:-1], axis=1)
            group_of_sorted = np.cumsum(new) - 1
            unique_keys = sorted_keys[new]
            self.gu = np.ascontiguousarray(unique_keys[:, 0])
            self.yu = np.ascontiguousarray(unique_keys[:, 1:])
            self.nu = np.bincount(group_of_sorted).astype(float)
            self.item_group[guessed[order]] = group_of_sorted
            starts = np.flatnonzero(np.r_[True, self.gu[1:] != self.gu[:-1]])
            self.gbounds = np.r_[starts, self.gu.size].astype(np.int64)
        else:
            self.gu = np.zeros(0)
            self.yu = np.zeros((0, n_models))
            self.nu = np.zeros(0)
            self.gbounds = np.zeros(1, dtype=np.int64)

    @property
    def n_integrals(self) -> int:
        """How many one-dimensional integrals one evaluation of (1) takes (groups, not items)."""
        return int(self.c_values.size + self.gu.size)

    def args(self):
        grid = self.grid
        return (grid.nodes, node_exps(grid.nodes), grid.log_weights, float(self.n_trials), self.c_values,
                self.c_counts, self.row_sums, self.yu, self.nu, self.gu, self.gbounds)

    def __call__(self, theta):
        """(log p(Y | θ) integrated over b, its gradient in θ) at a NumPy θ; the θ prior is not included."""
        return marginal_logp_grad(np.ascontiguousarray(theta, dtype=float), *self.args())


def collapsed_data(counts, n_trials: int, guessing=0.0, trials=None):
    """The grouped items of a matrix: :class:`CollapsedData`, or with a trials matrix (holes, K per cell)
    :class:`~benchmeasure.irt.routes.collapsed.holes.CollapsedHolesData`."""
    if trials is None:
        return CollapsedData(counts, n_trials, guessing)
    from benchmeasure.irt.routes.collapsed.holes import CollapsedHolesData

    return CollapsedHolesData(counts, trials, n_trials, guessing)


# ---------------------------------------------------------------------------------------------
# the marginal log-likelihood of θ and its gradient


@numba.njit(cache=True)
def node_exps(nodes):
    """(e^(−x_k), e^(x_k)) of every node as rows of a (2, G) array: the per-node factors of
    :func:`_softplus_table` and :func:`_subtract_weighted_sigmoids`, found once per grid instead of once per
    evaluation (for 12 models they were half the table's time)."""
    out = np.empty((2, nodes.shape[0]))
    for k in range(nodes.shape[0]):
        out[0, k] = math.exp(-nodes[k])
        out[1, k] = math.exp(nodes[k])
    return out


@numba.njit(cache=True)
def _softplus_table(theta, nodes, exps, s_sum):
    """s_sum[k] = Σ_j softplus(θ_j − x_k).

    As in :mod:`benchmeasure.irt.routes.joint.kernel`, e^(±η) = e^(±θ_j)·e^(∓x_k) are products of
    per-row and per-node factors and softplus(η) = max(η, 0) + log(1 + min(e^η, e^(−η))),
    the logarithm taken once per block of 512 factors (each in (1, 2]); no transcendental
    function per cell; the per-node factors e^(∓x_k) come from :func:`node_exps`, found once per
    grid. The loop runs over the models outside and the nodes inside, one running product and
    one running sum per node, so every node's operations come in the same order as in a loop
    over the models for each node (the same bits; measured no faster nor slower at 12 models).
    Falls back to one exp and one log1p per cell if some |θ_j| + |x_k| could exceed 600
    (:func:`_far`).
    """
    m, n_nodes = theta.shape[0], nodes.shape[0]
    if _far(theta, nodes):
        for k in range(n_nodes):
            total = 0.0
            for j in range(m):
                eta = theta[j] - nodes[k]
                total += max(eta, 0.0) + math.log1p(math.exp(-abs(eta)))
            s_sum[k] = total
        return
    e_x, e_mx = exps[0], exps[1]        # e^(−x_k), e^(x_k): node_exps
    relu = np.zeros(n_nodes)
    logs = np.zeros(n_nodes)
    prod = np.empty(n_nodes)
    for start in range(0, m, 512):
        prod[:] = 1.0
        for j in range(start, min(start + 512, m)):
            e_th, e_mth, th = math.exp(theta[j]), math.exp(-theta[j]), theta[j]
            for k in range(n_nodes):
                prod[k] *= 1.0 + min(e_th * e_x[k], e_mth * e_mx[k])     # 1 + min(e^η, e^(−η))
                relu[k] += max(th - nodes[k], 0.0)
        for k in range(n_nodes):
            logs[k] += math.log(prod[k])
    for k in range(n_nodes):
        s_sum[k] = relu[k] + logs[k]


@numba.njit(cache=True, inline="always")
def _far(theta, nodes):
    """True when some |θ_j| + |x_k| could reach 600, where products of e^(±θ) and e^(∓x) could overflow."""
    return np.max(np.abs(theta)) + np.max(np.abs(nodes)) >= 600.0


@numba.njit(cache=True)
def _subtract_weighted_sigmoids(theta, nodes, exps, w, scale, grad):
    """grad_j −= scale·Σ_k w_k·σ(θ_j − x_k) over the nodes with w_k ≠ 0 (σ(η) = 1 / (1 + e^(−θ_j)·e^(x_k)),
    one division per cell, none for the nodes outside every group's window)."""
    m = theta.shape[0]
    far = _far(theta, nodes)
    e_mth = np.exp(-theta) if not far else np.empty(0)
    for k in range(nodes.shape[0]):
        wk = scale * w[k]
        if wk == 0.0:
            continue
        if far:
            for j in range(m):
                eta = theta[j] - nodes[k]
                e = math.exp(-abs(eta))
                grad[j] -= wk * (1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e))
        else:
            e_x = exps[1, k]
            for j in range(m):
                grad[j] -= wk / (1.0 + e_mth[j] * e_x)


@numba.njit(cache=True)
def _softmax_rows(a, out):
    """out = row-wise softmax of a; returns the row-wise log-sum-exp."""
    lse = np.empty(a.shape[0])
    for u in range(a.shape[0]):
        top = a[u].max()
        total = 0.0
        for k in range(a.shape[1]):
            out[u, k] = math.exp(a[u, k] - top)
            total += out[u, k]
        for k in range(a.shape[1]):
            out[u, k] /= total
        lse[u] = top + math.log(total)
    return lse


@numba.njit(cache=True)
def _guess_tables(theta, nodes, g, n_trials, d, e_sum, dd, dbl):
    """For one g: d = log p − log(1 − p), e_sum[k] = K·Σ_j log(1 − p), and their η-derivatives."""
    m, n_nodes = theta.shape[0], nodes.shape[0]
    log1m_g = math.log1p(-g)
    for k in range(n_nodes):
        e_sum[k] = 0.0
    for j in range(m):
        for k in range(n_nodes):
            eta = theta[j] - nodes[k]
            e = math.exp(-abs(eta))
            s = 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)       # σ(η)
            log_right = cell_loglik(1.0, 1.0, eta, g)                   # log p
            log_wrong = cell_loglik(0.0, 1.0, eta, g)                   # log(1 − p)
            d[j, k] = log_right - log_wrong
            e_sum[k] += n_trials * log_wrong
            # ∂ log p/∂η = (1 − g)σ(1 − σ)/p, ∂ log(1 − p)/∂η = −σ
            p = g + (1.0 - g) * s
            dbl[j, k] = -s
            dd[j, k] = math.exp(log1m_g) * s * (1.0 - s) / p + s



@numba.njit(cache=True)
def _column_sum_integrals(nodes, log_weights, n_trials, s_sum, c_values, c_counts, w):
    """Σ_c n_c · log ∫ over the g = 0 groups (one base for all: log w_k − K·S(x_k)); adds n_c times each group's
    normalized terms to ``w`` (the nodes' posterior weights, for the gradient)."""
    n_nodes = nodes.shape[0]
    base = np.empty(n_nodes)
    for k in range(n_nodes):
        base[k] = log_weights[k] - n_trials * s_sum[k]
    size = max(n_nodes - 1, 1)
    incr, dx, up, down = np.empty(size), np.empty(size), np.empty(size), np.empty(size)
    window_steps(base, nodes, incr, dx, up, down)
    terms = np.empty(n_nodes)
    value = 0.0
    for c in range(c_values.shape[0]):
        value += c_counts[c] * window_integral(base, nodes, incr, dx, up, down, c_values[c], c_counts[c], w, terms)
    return value


@numba.njit(cache=True)
def marginal_logp_grad(theta, nodes, exps, log_weights, n_trials, c_values, c_counts, row_sums, yu, nu, gu,
                       gbounds):
    """Σ_i log ∫ N(b; 0, 1) Π_j Binom(Y_ij | K, p(θ_j − b, g_i)) db (without log C(K, Y)) and its θ-gradient."""
    m, n_nodes = theta.shape[0], nodes.shape[0]
    value = 0.0
    grad = np.zeros(m)
    if c_values.shape[0]:
        s_sum = np.empty(n_nodes)
        _softplus_table(theta, nodes, exps, s_sum)
        w = np.zeros(n_nodes)
        value += _column_sum_integrals(nodes, log_weights, n_trials, s_sum, c_values, c_counts, w)
        for j in range(m):
            value += row_sums[j] * theta[j]
            grad[j] += row_sums[j]
        _subtract_weighted_sigmoids(theta, nodes, exps, w, n_trials, grad)
    if gu.shape[0]:
        d = np.empty((m, n_nodes))
        dd = np.empty((m, n_nodes))
        dbl = np.empty((m, n_nodes))
        e_sum = np.empty(n_nodes)
        for block in range(gbounds.shape[0] - 1):
            lo, hi = gbounds[block], gbounds[block + 1]
            _guess_tables(theta, nodes, gu[lo], n_trials, d, e_sum, dd, dbl)
            ys = np.ascontiguousarray(yu[lo:hi])
            a = ys @ d
            for u in range(hi - lo):
                for k in range(n_nodes):
                    a[u, k] += log_weights[k] + e_sum[k]
            pi = np.empty_like(a)
            lse = _softmax_rows(a, pi)
            for u in range(hi - lo):
                value += nu[lo + u] * lse[u]
                for k in range(n_nodes):
                    pi[u, k] *= nu[lo + u]
            t = ys.T @ pi              # (M, G): Σ_u n_u π_uk Y_uj
            w = pi.sum(axis=0)         # Σ_u n_u π_uk
            for j in range(m):
                acc = 0.0
                for k in range(n_nodes):
                    acc += t[j, k] * dd[j, k] + n_trials * w[k] * dbl[j, k]
                grad[j] += acc
    return value, grad
