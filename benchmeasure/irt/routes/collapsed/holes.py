"""The collapsed 1PL sampler on a matrix with holes or K per cell (``prepare --allow-missing``).

The same exact posterior as :mod:`benchmeasure.irt.routes.collapsed`, with the trials matrix T (T_ij = 0 for an
absent cell, 1 … K otherwise) in place of one K: Y_ij ~ Binomial(T_ij, g_i + (1 − g_i)·σ(θ_j − b_i)), so an
absent cell (T = Y = 0) adds exactly nothing to the likelihood (the masked likelihood), and

    p(θ | Y) ∝ N(θ; 0, I) · Π_i ∫ N(b; 0, 1) Π_j Binom(Y_ij | T_ij, p(θ_j − b, g_i)) db.

Which items share one integral:

* g_i = 0: Σ_j Y_ij·η_ij − T_ij·softplus(η_ij) = Σ_j Y_ij θ_j − C_i·b − Σ_j T_ij·softplus(θ_j − b): the integral
  depends on the item only through its column sum C_i **and its trials column** T_i (which cells are present and
  with how many trials). Items share an integral when both are identical. For each distinct trials column p
  the table S_p(x_k) = Σ_j T_pj·softplus(θ_j − x_k) is one row of the product T_patterns · softplus(θ − x)
  (P × M times M × G).
* g_i > 0: items share an integral when g, the column of counts and the column of trials are all identical.

The grid (:func:`benchmeasure.irt.routes.collapsed.quadrature.make_grid` with K the largest trials count) stays
valid: fewer trials only flatten the integrand, so its curvature bound and the exact draws' envelope still hold.

Cost of one log-density and gradient: O(M·G·(1 + P) + groups·G), P the number of distinct trials columns (8 on
MMLU-Pro's 29 × 12,032 matrix with 1,713 holes), independent of the number of items. The tables take no
transcendental function per cell up to :data:`FEW_PATTERNS` trials columns (:func:`_pattern_tables`): the suite
model's likelihood on MMLU-Pro (14 such sub-matrices) went from 1.2–1.3 to 0.54–0.77 ms per evaluation with it
(one core, interleaved runs, 2026-12-04).
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


def _unique_columns(keys: np.ndarray):
    """(unique rows of ``keys`` in lexicographic order, index of each row's unique row, how many rows each)."""
    if keys.shape[0] == 0:
        return keys, np.zeros(0, dtype=np.int64), np.zeros(0)
    unique, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    return unique, inverse.reshape(-1).astype(np.int64), counts.astype(float)


class CollapsedHolesData:
    """Items grouped by what their integral depends on (module docstring), for a counts and a trials matrix.

    ``patterns`` (P, M): distinct trials columns of the g = 0 items; ``c_pattern``/``c_values``/``c_counts``:
    per (trials column, column sum) group its pattern index, its sum and how many items share it; ``row_sums``:
    Σ over g = 0 items of Y_ij per model; ``gu``/``yu``/``ku``/``nu``: distinct (g, counts column, trials column)
    of the g > 0 items, sorted by g, with ``gbounds`` the start of each distinct g; ``item_kind``/``item_group``
    as in :class:`benchmeasure.irt.routes.collapsed.marginal.CollapsedData`.
    """

    def __init__(self, counts, trials, n_trials: int, guessing=0.0, grid: Grid | None = None):
        y = np.asarray(counts, dtype=np.int64)
        t = np.asarray(trials, dtype=np.int64)
        if y.shape != t.shape:
            raise ValueError(f"counts {y.shape} and trials {t.shape} differ in shape")
        if np.any(y > t) or np.any(y < 0):
            raise ValueError("every count must lie in [0, its cell's trials]")
        g, plain, col = start_groups(self, y, guessing, n_trials, grid)
        n_models = y.shape[0]
        plain_idx = np.flatnonzero(plain)
        patterns, pattern_of, _ = _unique_columns(t[:, plain_idx].T)
        self.patterns = np.ascontiguousarray(patterns, dtype=float).reshape(-1, n_models)
        keys = np.stack([pattern_of, col[plain_idx]], axis=1) if plain_idx.size else np.zeros((0, 2), np.int64)
        groups, group_of, group_counts = _unique_columns(keys)
        self.c_pattern = np.ascontiguousarray(groups[:, 0], dtype=np.int64)
        self.c_values = np.ascontiguousarray(groups[:, 1], dtype=float)
        self.c_counts = group_counts
        self.item_group[plain_idx] = group_of
        self.row_sums = y[:, plain].sum(axis=1).astype(float)
        guessed = np.flatnonzero(~plain)
        keys = np.concatenate([g[guessed][:, None], y[:, guessed].T, t[:, guessed].T], axis=1).astype(float)
        unique, group_of, group_counts = _unique_columns(keys)   # sorted by g first
        self.gu = np.ascontiguousarray(unique[:, 0]) if guessed.size else np.zeros(0)
        self.yu = np.ascontiguousarray(unique[:, 1:1 + n_models]) if guessed.size else np.zeros((0, n_models))
        self.ku = np.ascontiguousarray(unique[:, 1 + n_models:]) if guessed.size else np.zeros((0, n_models))
        self.nu = group_counts
        self.item_group[guessed] = group_of
        starts = np.flatnonzero(np.r_[True, self.gu[1:] != self.gu[:-1]]) if guessed.size else np.zeros(0, int)
        self.gbounds = np.r_[starts, self.gu.size].astype(np.int64)

    @property
    def n_integrals(self) -> int:
        """How many one-dimensional integrals one evaluation takes (groups, not items)."""
        return int(self.c_values.size + self.gu.size)

    @property
    def n_patterns(self) -> int:
        """How many distinct trials columns the g = 0 items have."""
        return int(self.patterns.shape[0])

    def args(self):
        grid = self.grid
        return (grid.nodes, grid.log_weights, self.patterns, self.c_pattern, self.c_values, self.c_counts,
                self.row_sums, self.yu, self.ku, self.nu, self.gu, self.gbounds)

    def __call__(self, theta):
        """(log p(Y | θ) integrated over b, its gradient in θ) at a NumPy θ; the θ prior is not included."""
        return marginal_logp_grad_holes(np.ascontiguousarray(theta, dtype=float), *self.args())

    def log_integrands(self, theta) -> np.ndarray:
        """Every group's log-integrand on the grid at θ (groups × G), for the edge-weight check."""
        grid = self.grid
        eta = theta[:, None] - grid.nodes[None, :]
        soft = np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))
        rows = []
        if self.c_values.size:
            s = self.patterns @ soft
            rows.append(grid.log_weights[None, :] - self.c_values[:, None] * grid.nodes[None, :]
                        - s[self.c_pattern])
        log_sig = -np.logaddexp(0.0, -eta)                        # log σ(η)
        log_sig_neg = -np.logaddexp(0.0, eta)                     # log(1 − σ(η))
        for block in range(self.gbounds.size - 1):
            lo, hi = self.gbounds[block], self.gbounds[block + 1]
            g = float(self.gu[lo])
            log_wrong = np.log1p(-g) + log_sig_neg
            log_right = np.logaddexp(np.log(g), np.log1p(-g) + log_sig)
            rows.append(grid.log_weights[None, :] + self.yu[lo:hi] @ (log_right - log_wrong)
                        + self.ku[lo:hi] @ log_wrong)
        return np.concatenate(rows, axis=0) if rows else np.zeros((0, grid.size))


@numba.njit(cache=True)
def _many_pattern_tables(theta, nodes, patterns, one_plus, s_tab):
    """s_tab = patterns @ softplus(θ − x) with one log per cell and one matrix product (BLAS): cheaper than a
    product per trials column when there are many columns."""
    soft = np.empty(one_plus.shape)
    for j in range(theta.shape[0]):
        th = theta[j]
        for k in range(nodes.shape[0]):
            soft[j, k] = max(th - nodes[k], 0.0) + math.log(one_plus[j, k])
    np.dot(patterns, soft, s_tab)


#: up to this many distinct trials columns the tables multiply factors per column (no log per cell); beyond it one
#: log per cell and a matrix product are cheaper (measured: 3 columns 0.07 against 0.12 ms, 918 columns 20 ms
#: against 35 ms, on MMLU-Pro-shaped and growing-benchmark-shaped matrices)
FEW_PATTERNS = 16


@numba.njit(cache=True)
def _pattern_tables(theta, nodes, patterns, s_tab, sig):
    """s_tab[p, k] = Σ_j T_pj·softplus(θ_j − x_k) for every trials column p, and sig[j, k] = σ(θ_j − x_k).

    The trick of :func:`.marginal._softplus_table`: e^(±η) = e^(±θ_j)·e^(∓x_k) are products
    of per-model and per-node factors, softplus(η) = max(η, 0) + log(1 + min(e^η, e^(−η))), and the logarithms
    of a trials column's factors (each in (1, 2]) are taken once per node, distinct trials count t and block of 512
    of them (Σ_j T_pj·log(1 + e^(−|η_jk|)) = Σ_t t·log Π_{j: T_pj = t} (1 + e^(−|η_jk|))). No transcendental
    function per cell; one exp per cell if some |θ_j| + |x_k| could exceed 600.
    """
    m, n_nodes, n_patterns = theta.shape[0], nodes.shape[0], patterns.shape[0]
    # plain loops throughout (no array expressions or matrix products): each of those costs seconds of compiling
    bound = 0.0
    for j in range(m):
        bound = max(bound, abs(theta[j]))
    extreme = bound + max(abs(nodes[0]), abs(nodes[n_nodes - 1])) >= 600.0
    e_x = np.empty(n_nodes)
    e_mx = np.empty(n_nodes)
    for k in range(n_nodes):
        e_x[k] = 0.0 if extreme else math.exp(-nodes[k])
        e_mx[k] = 0.0 if extreme else math.exp(nodes[k])
    one_plus = np.empty((m, n_nodes))    # 1 + e^(−|η|)
    for j in range(m):
        th = theta[j]
        if extreme:                           # e^(±η) could overflow: one exp per cell
            for k in range(n_nodes):
                eta = th - nodes[k]
                e = math.exp(-abs(eta))
                one_plus[j, k] = 1.0 + e
                sig[j, k] = 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)
        else:
            a, b = math.exp(th), math.exp(-th)
            for k in range(n_nodes):
                t = a * e_x[k]                # e^η
                ti = b * e_mx[k]              # e^(−η)
                one_plus[j, k] = 1.0 + min(t, ti)
                sig[j, k] = 1.0 / (1.0 + ti)
    if n_patterns > FEW_PATTERNS:
        _many_pattern_tables(theta, nodes, patterns, one_plus, s_tab)
        return
    for p in range(n_patterns):               # Σ_j T_pj·max(η_jk, 0)
        for k in range(n_nodes):
            s_tab[p, k] = 0.0
        for j in range(m):
            weight, th = patterns[p, j], theta[j]
            if weight != 0.0:
                for k in range(n_nodes):
                    s_tab[p, k] += weight * max(th - nodes[k], 0.0)
    prod = np.empty(n_nodes)
    for p in range(n_patterns):
        # Σ_j T_pj·log(1 + e^(−|η_jk|)) = Σ_t t·log Π_{j: T_pj = t} (1 + e^(−|η_jk|)), one product per trials count
        t = 0.0
        while True:   # the trials counts of this column in increasing order (a handful: 1 … K)
            t_next = np.inf
            for j in range(m):
                if t < patterns[p, j] < t_next:
                    t_next = patterns[p, j]
            if t_next == np.inf:
                break
            t = t_next
            for k in range(n_nodes):
                prod[k] = 1.0
            factors = 0
            for j in range(m):
                if patterns[p, j] != t:
                    continue
                for k in range(n_nodes):
                    prod[k] *= one_plus[j, k]
                factors += 1
                if factors == 512:
                    for k in range(n_nodes):
                        s_tab[p, k] += t * math.log(prod[k])
                        prod[k] = 1.0
                    factors = 0
            for k in range(n_nodes):
                s_tab[p, k] += t * math.log(prod[k])


@numba.njit(cache=True)
def _guess_tables_cells(theta, nodes, g, d, lw, dd, dbl):
    """For one g: d = log p − log(1 − p), lw = log(1 − p) per (model, node), and their η-derivatives."""
    log1m_g = math.log1p(-g)
    for j in range(theta.shape[0]):
        for k in range(nodes.shape[0]):
            eta = theta[j] - nodes[k]
            e = math.exp(-abs(eta))
            s = 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)
            log_wrong = cell_loglik(0.0, 1.0, eta, g)
            d[j, k] = cell_loglik(1.0, 1.0, eta, g) - log_wrong
            lw[j, k] = log_wrong
            p = g + (1.0 - g) * s
            dbl[j, k] = -s
            dd[j, k] = math.exp(log1m_g) * s * (1.0 - s) / p + s


@numba.njit(cache=True)
def _lse_into(row, n_nodes):
    """row ← softmax(row) in place; returns log Σ exp(row) (terms below e^(−50) of the top dropped)."""
    top = -np.inf
    for k in range(n_nodes):
        top = max(top, row[k])
    total = 0.0
    for k in range(n_nodes):
        z = row[k] - top
        row[k] = math.exp(z) if z > -50.0 else 0.0
        total += row[k]
    for k in range(n_nodes):
        row[k] /= total
    return top + math.log(total)


@numba.njit(cache=True)
def marginal_logp_grad_holes(theta, nodes, log_weights, patterns, c_pattern, c_values, c_counts, row_sums, yu,
                             ku, nu, gu, gbounds):
    """Σ_i log ∫ N(b; 0, 1) Π_j Binom(Y_ij | T_ij, p(θ_j − b, g_i)) db (without log C(T, Y)) and its θ-gradient."""
    m, n_nodes = theta.shape[0], nodes.shape[0]
    value = 0.0
    grad = np.zeros(m)
    if c_values.shape[0]:
        sig = np.empty((m, n_nodes))
        s_tab = np.empty((patterns.shape[0], n_nodes))   # (P, G): Σ_j T_pj softplus(θ_j − x_k)
        _pattern_tables(theta, nodes, patterns, s_tab, sig)
        w = np.zeros((patterns.shape[0], n_nodes))    # Σ over a pattern's groups of n·softmax
        # each pattern's integrands share log w_k − s_tab[p, k] and its increments (collapsed.window_integral)
        base = np.empty((patterns.shape[0], n_nodes))
        size = max(n_nodes - 1, 1)
        incr, dx = np.empty((patterns.shape[0], size)), np.empty((patterns.shape[0], size))
        up, down = np.empty((patterns.shape[0], size)), np.empty((patterns.shape[0], size))
        for p in range(patterns.shape[0]):
            for k in range(n_nodes):
                base[p, k] = log_weights[k] - s_tab[p, k]
            window_steps(base[p], nodes, incr[p], dx[p], up[p], down[p])
        terms = np.empty(n_nodes)
        for c in range(c_values.shape[0]):
            p = c_pattern[c]
            value += c_counts[c] * window_integral(base[p], nodes, incr[p], dx[p], up[p], down[p], c_values[c],
                                                   c_counts[c], w[p], terms)
        for j in range(m):
            value += row_sums[j] * theta[j]
            grad[j] += row_sums[j]
        a = np.ascontiguousarray(patterns.T) @ w     # (M, G): Σ_p T_pj w_pk
        for j in range(m):
            acc = 0.0
            for k in range(n_nodes):
                acc += a[j, k] * sig[j, k]
            grad[j] -= acc
    if gu.shape[0]:
        d = np.empty((m, n_nodes))
        lw = np.empty((m, n_nodes))
        dd = np.empty((m, n_nodes))
        dbl = np.empty((m, n_nodes))
        for block in range(gbounds.shape[0] - 1):
            lo, hi = gbounds[block], gbounds[block + 1]
            _guess_tables_cells(theta, nodes, gu[lo], d, lw, dd, dbl)
            ys = np.ascontiguousarray(yu[lo:hi])
            ks = np.ascontiguousarray(ku[lo:hi])
            a = ys @ d + ks @ lw
            for u in range(hi - lo):
                for k in range(n_nodes):
                    a[u, k] += log_weights[k]
                value += nu[lo + u] * _lse_into(a[u], n_nodes)
                for k in range(n_nodes):
                    a[u, k] *= nu[lo + u]
            t_y = ys.T @ a
            t_k = ks.T @ a
            for j in range(m):
                acc = 0.0
                for k in range(n_nodes):
                    acc += t_y[j, k] * dd[j, k] + t_k[j, k] * dbl[j, k]
                grad[j] += acc
    return value, grad
