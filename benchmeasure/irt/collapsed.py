"""The collapsed 1PL sampler: NUTS on the abilities' marginal posterior, difficulties drawn exactly given each draw.

The paper's model (Appendix C.3): θ_j, b_i ~ Normal(0, 1), Y_ij ~ Binomial(K, g_i + (1 − g_i)·σ(θ_j − b_i)).
Given θ the difficulties are independent, so

    p(θ | Y) ∝ N(θ; 0, I) · Π_i ∫ N(b; 0, 1) Π_j Binom(Y_ij | K, p(θ_j − b, g_i)) db,        (1)
    p(b | θ, Y) = Π_i p(b_i | θ, Y_i),

and the joint posterior is sampled exactly by drawing θ from (1) with NUTS (M dimensions
instead of M + N) and then one b_i from its one-dimensional conditional for every θ draw
(:mod:`benchmeasure.irt.quadrature`: exact rejection draws from a piecewise-exponential
envelope). Each integral in (1) is a trapezoid sum on the grid of
:func:`benchmeasure.irt.quadrature.make_grid`, whose relative error (about 1e−17, checked
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
from benchmeasure.irt.quadrature import Grid, _logf_general, cell_loglik, chord_cumulative, chord_draw, make_grid
from benchmeasure.irt.rng import private_state, states, uniform


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
        n_models, n_items = y.shape
        g = np.broadcast_to(np.asarray(guessing, dtype=float), (n_items,))
        self.n_models, self.n_items, self.n_trials = n_models, n_items, int(n_trials)
        self.grid = grid or make_grid(n_models, n_trials)
        plain = g == 0.0
        self.item_kind = np.where(plain, 0, 1).astype(np.int64)
        self.item_group = np.zeros(n_items, dtype=np.int64)
        col = y.sum(axis=0)
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
    :class:`~benchmeasure.irt.collapsed_holes.CollapsedHolesData`."""
    if trials is None:
        return CollapsedData(counts, n_trials, guessing)
    from benchmeasure.irt.collapsed_holes import CollapsedHolesData

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

    As in :mod:`benchmeasure.irt.kernel`, e^(±η) = e^(±θ_j)·e^(∓x_k) are products of
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


# terms of a log-integrand more than this far below its largest are left out: each changes the sum by
# < e^(−50) relative, and there are fewer than e^10 of them
WINDOW_DEPTH = 50.0


@numba.njit(cache=True)
def window_steps(base, nodes, incr, dx, up, down):
    """The increments of a concave log-integrand's part free of c, for :func:`window_integral`:
    incr_k = base_(k+1) − base_k, dx_k = x_(k+1) − x_k, up_k = e^(incr_k), down_k = 1 / up_k."""
    for k in range(nodes.shape[0] - 1):
        incr[k] = base[k + 1] - base[k]
        dx[k] = nodes[k + 1] - nodes[k]
        up[k] = math.exp(incr[k])
        down[k] = 1.0 / up[k]


@numba.njit(cache=True)
def window_integral(base, nodes, incr, dx, up, down, cv, scale, w, terms):
    """log Σ_k e^(r(k)) with r(k) = base_k − c·x_k, and w_k += scale·e^(r(k)) / Σ e^r (the node weights).

    r is concave in k: base is the prior's log density plus a log-likelihood that is concave in b (a sum of
    −T·softplus and linear terms), and the trapezoid's half weights at the two ends keep the increments
    decreasing. So the terms within ``WINDOW_DEPTH`` of the largest (the ones a full row sum keeps) form one run of
    nodes around the largest, found by bisection on the increments incr_k − c·dx_k. Within the run each term is
    its neighbour times e^(incr_k)·e^(∓c·h): two exponentials per call instead of one per term. The steps use the
    grid's spacing h where the depths use each node's own x_k; the two differ by a few units in the last place
    of x, so a term is off by at most c·1e−14 relative (1e−12 at c = 100), far below what NUTS can see.
    """
    n_steps = nodes.shape[0] - 1
    lo, hi = 0, n_steps
    while lo < hi:                          # the first k whose increment is negative: the largest term
        mid = (lo + hi) // 2
        if incr[mid] - cv * dx[mid] < 0.0:
            hi = mid
        else:
            lo = mid + 1
    top_k = lo
    h = (nodes[n_steps] - nodes[0]) / max(n_steps, 1)
    q = math.exp(-cv * h)
    q_inv = 1.0 / q
    terms[top_k] = 1.0
    total = 1.0
    depth = 0.0
    t = 1.0
    last = top_k
    for k in range(top_k, n_steps):         # to the right
        depth += incr[k] - cv * dx[k]
        if depth < -WINDOW_DEPTH:
            break
        t *= up[k] * q
        terms[k + 1] = t
        total += t
        last = k + 1
    depth = 0.0
    t = 1.0
    first = top_k
    for k in range(top_k - 1, -1, -1):      # to the left
        depth -= incr[k] - cv * dx[k]
        if depth < -WINDOW_DEPTH:
            break
        t *= down[k] * q_inv
        terms[k] = t
        total += t
        first = k
    norm = scale / total
    for k in range(first, last + 1):
        w[k] += norm * terms[k]
    return base[top_k] - cv * nodes[top_k] + math.log(total)


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


# ---------------------------------------------------------------------------------------------
# exact draws of b given θ


@numba.njit(cache=True)
def _logf_plain(x, c, theta, n_trials):
    """log N(x; 0, 1)·likelihood of a g = 0 item with column sum c given θ, without terms free of x."""
    # Σ_j softplus(η_j) = Σ_j max(η_j, 0) + log Π_j (1 + e^−|η_j|): one log for every model (each factor lies in
    # (1, 2], so the product of up to 1,000 of them stays finite; longer panels log it in runs)
    total = -0.5 * x * x - c * x
    product = 1.0
    for j in range(theta.shape[0]):
        eta = theta[j] - x
        total -= n_trials * max(eta, 0.0)
        product *= 1.0 + math.exp(-abs(eta))
        if product > 1e300:
            total -= n_trials * math.log(product)
            product = 1.0
    return total - n_trials * math.log(product)


@numba.njit(cache=True, nogil=True)
def draw_b_block(theta_draws, nodes, step, delta, n_trials, c_values, yu, gu, gbounds, members_c, starts_c,
                 members_u, starts_u, state, out):
    """out[s, i] = one exact draw of b_i given θ = theta_draws[s], for every draw s and item i (the items of each
    group as :func:`group_members` lists them)."""
    m, n_nodes = theta_draws.shape[1], nodes.shape[0]
    n_c, n_u = c_values.shape[0], gu.shape[0]
    f_c = np.empty((n_c, n_nodes))
    cum_c = np.empty((n_c, n_nodes - 1))
    shape_c = np.empty((n_c, n_nodes - 1))
    guide_c = np.empty((n_c, n_nodes - 1), dtype=np.int64)
    f_u = np.empty((n_u, n_nodes))
    cum_u = np.empty((n_u, n_nodes - 1))
    shape_u = np.empty((n_u, n_nodes - 1))
    guide_u = np.empty((n_u, n_nodes - 1), dtype=np.int64)
    s_sum = np.empty(n_nodes)
    d = np.empty((m, n_nodes))
    dd = np.empty((m, n_nodes))
    dbl = np.empty((m, n_nodes))
    e_sum = np.empty(n_nodes)
    exps = node_exps(nodes)
    g_item = np.zeros(m)
    squeeze = math.exp(-2.0 * delta)
    # g = 0: the log density is concave, so it lies on or above its chord and log w < −δ is accepted by the
    # exact test below whatever x is: the test is skipped, the decision (and every draw) is the same
    squeeze_plain = math.exp(-delta)
    for s in range(theta_draws.shape[0]):
        theta = theta_draws[s]
        if n_c:
            _softplus_table(theta, nodes, exps, s_sum)
            for c in range(n_c):
                for k in range(n_nodes):
                    x = nodes[k]
                    f_c[c, k] = -0.5 * x * x - c_values[c] * x - n_trials * s_sum[k]
                chord_cumulative(f_c[c], step, cum_c[c], shape_c[c], guide_c[c])
        for block in range(gbounds.shape[0] - 1):
            lo, hi = gbounds[block], gbounds[block + 1]
            _guess_tables(theta, nodes, gu[lo], n_trials, d, e_sum, dd, dbl)
            f_u[lo:hi] = np.ascontiguousarray(yu[lo:hi]) @ d
            for u in range(lo, hi):
                for k in range(n_nodes):
                    f_u[u, k] += e_sum[k] - 0.5 * nodes[k] * nodes[k]
                chord_cumulative(f_u[u], step, cum_u[u], shape_u[u], guide_u[u])
        # group by group: each group's tables are looked up once, then its items' draws (i.i.d. given θ) are made
        for c in range(n_c):
            f, cum, shp, gd = f_c[c], cum_c[c], shape_c[c], guide_c[c]
            for q in range(starts_c[c], starts_c[c + 1]):
                while True:
                    x, chord = chord_draw(f, cum, shp, gd, nodes[0], step, state)
                    w = uniform(state)
                    if w < squeeze_plain:
                        break
                    if math.log(w) < _logf_plain(x, c_values[c], theta, n_trials) - chord - delta:
                        break
                out[s, members_c[q]] = x
        for u in range(n_u):
            f, cum, shp, gd = f_u[u], cum_u[u], shape_u[u], guide_u[u]
            for j in range(m):
                g_item[j] = gu[u]
            for q in range(starts_u[u], starts_u[u + 1]):
                while True:
                    x, chord = chord_draw(f, cum, shp, gd, nodes[0], step, state)
                    w = uniform(state)
                    if w < squeeze:
                        break
                    if math.log(w) < _logf_general(x, yu[u], theta, -1, n_trials, g_item) - chord - delta:
                        break
                out[s, members_u[q]] = x


def group_members(item_kind, item_group, n_plain: int, n_guessed: int):
    """The items of each group, group by group: (members_c, starts_c, members_u, starts_u), the items of plain
    group c being members_c[starts_c[c]:starts_c[c + 1]] (in item order), and likewise for the guessing groups."""
    out = []
    for kind, count in ((0, n_plain), (1, n_guessed)):
        items = np.flatnonzero(item_kind == kind)
        members = items[np.argsort(item_group[items], kind="stable")].astype(np.int64)
        starts = np.searchsorted(item_group[members], np.arange(count + 1)).astype(np.int64)
        out += [members, starts]
    return tuple(out)


#: measured costs (ns, 2-core development machine) behind :func:`draw_grid`'s choice: one group's table per node,
#: one draw besides its exact test, one model's term of an exact test
DRAW_COSTS = {"node": 40.0, "draw": 60.0, "exact_term": 15.0}
#: the draw grids tried, as multiples of the quadrature grid's number of intervals
DRAW_REFINEMENTS = (0.25, 0.5, 1.0, 2.0, 4.0)


def draw_grid(data: CollapsedData, refinement: float | None = None) -> tuple[np.ndarray, float, float]:
    """(nodes, step, δ) of the grid the exact b draws use: uniform on the quadrature grid's [−L, L].

    Any uniform grid gives exact draws (the envelope exp(chord + δ) lies above the density wherever δ = B·h²/8,
    B the curvature bound), so the grid is chosen for speed alone: each θ draw tables every group on it (cost ∝
    groups × nodes), and each draw runs the exact test with probability about 1 − e^(−δ) (cost ∝ models), so a
    matrix with many items per group (12 × 41,871 binary: 13 groups) draws fastest on a finer grid and one with
    few (12 × 675 with K = 8: 77 groups) on a coarser one. ``refinement`` (a multiple of the quadrature grid's
    intervals) overrides the choice; otherwise the one of :data:`DRAW_REFINEMENTS` that :data:`DRAW_COSTS`
    predicts cheapest."""
    grid = data.grid
    intervals = grid.size - 1
    groups, items, models = max(data.n_integrals, 1), data.n_items, data.n_models
    guessed = data.gu.size > 0

    def plan(r):
        n = max(2, round(intervals * r))
        step = (grid.nodes[-1] - grid.nodes[0]) / n
        return n, step, grid.curvature * step * step / 8.0

    def cost(r):
        n, _, delta = plan(r)
        tests = 1.0 - math.exp(-(2.0 if guessed else 1.0) * delta)
        tries = math.exp(delta)   # acceptance is at least e^(−δ) (e^(−2δ) with guessing)
        return (groups * (n + 1) * DRAW_COSTS["node"]
                + items * tries * (DRAW_COSTS["draw"] + tests * models * DRAW_COSTS["exact_term"]))

    r = float(refinement) if refinement is not None else min(DRAW_REFINEMENTS, key=cost)
    n, step, delta = plan(r)
    if n == intervals:
        return grid.nodes, grid.step, grid.curvature * grid.step ** 2 / 8.0
    return np.linspace(grid.nodes[0], grid.nodes[-1], n + 1), float(step), float(delta)


def draw_difficulties(data: CollapsedData, theta_draws: np.ndarray, seed: int, *, block: int = 100,
                      on_block=None, threads: int | None = None, refinement: float | None = None) -> np.ndarray:
    """Exact draws of b given each θ draw: theta_draws (chains, draws, M) → float32 (chains, draws, N).

    Draws are made in blocks of ``block`` θ draws, each block seeded from ``seed`` and its
    index (so the result depends neither on the block's position in time nor on the thread
    that draws it), on the grid of :func:`draw_grid` (``refinement`` overrides its choice); blocks are drawn by
    ``threads`` threads (default: the CPUs this process may
    use, at most 4; the Numba kernels release the GIL). ``on_block(done, total)`` is called
    after each block (progress).
    """
    import os
    from concurrent.futures import ThreadPoolExecutor

    chains, draws, m = theta_draws.shape
    flat = np.ascontiguousarray(theta_draws.reshape(chains * draws, m), dtype=float)
    out = np.empty((chains * draws, data.n_items), dtype=np.float32)
    nodes, step, delta = draw_grid(data, refinement)
    starts = list(range(0, flat.shape[0], block))
    block_states = states(seed, len(starts))   # one generator per block (irt/rng.py)
    members = group_members(data.item_kind, data.item_group, data.c_values.size, data.gu.size)
    if threads is None:
        threads = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)

    def one(index):
        start = starts[index]
        stop = min(start + block, flat.shape[0])
        part = out[start:stop]   # the kernels write float32 in place (rounded as NumPy would)
        if hasattr(data, "draw_block"):  # holes or K per cell (collapsed_holes.CollapsedHolesData)
            data.draw_block(flat[start:stop], nodes, step, delta, members, private_state(block_states[index]), part)
        else:
            draw_b_block(flat[start:stop], nodes, step, delta, float(data.n_trials), data.c_values,
                         data.yu, data.gu, data.gbounds, *members, private_state(block_states[index]), part)
        return stop

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for stop in pool.map(one, range(len(starts))):  # in block order: stop grows
            if on_block is not None:
                on_block(stop, flat.shape[0])
    return out.reshape(chains, draws, data.n_items)


# ---------------------------------------------------------------------------------------------
# the quadrature's accuracy on the fitted posterior


def quadrature_check(data: CollapsedData, theta_draws: np.ndarray, n_check: int = 20, seed: int = 0) -> dict:
    """Quadrature error of (1) at ``n_check`` θ draws: the grid against one with half the step.

    Returns ``max_abs_log_marginal_error`` (largest |Δ| of the summed log-integral over the
    draws checked), ``max_abs_gradient_error``, ``max_edge_weight`` (largest normalized
    weight at an end node of any group's grid, i.e. how much could lie beyond ±L),
    ``grid_nodes``, ``grid_step``, ``grid_half_width`` and ``integrals`` per evaluation.
    """
    flat = theta_draws.reshape(-1, theta_draws.shape[-1])
    rng = np.random.default_rng(seed)
    picks = rng.choice(flat.shape[0], size=min(n_check, flat.shape[0]), replace=False)
    fine = make_grid(data.n_models, data.n_trials, step_factor=0.5 * _step_factor(data.grid, data),
                     half_width=float(data.grid.nodes[-1]))
    fine_data = _with_grid(data, fine)
    value_err = grad_err = edge = 0.0
    for s in picks:
        theta = np.ascontiguousarray(flat[s], dtype=float)
        v1, g1 = data(theta)
        v2, g2 = fine_data(theta)
        value_err = max(value_err, abs(v1 - v2))
        grad_err = max(grad_err, float(np.max(np.abs(g1 - g2))))
        edge = max(edge, _edge_weight(data, theta))
    return {"max_abs_log_marginal_error": value_err, "max_abs_gradient_error": grad_err,
            "max_edge_weight": edge, "grid_nodes": data.grid.size, "grid_step": data.grid.step,
            "grid_half_width": float(data.grid.nodes[-1]), "integrals": data.n_integrals,
            "checked_draws": int(picks.size)}


def _step_factor(grid: Grid, data: CollapsedData) -> float:
    return grid.step * math.sqrt(grid.curvature)


def _with_grid(data: CollapsedData, grid: Grid) -> CollapsedData:
    clone = object.__new__(type(data))
    clone.__dict__.update(data.__dict__)
    clone.grid = grid
    return clone


def _edge_weight(data: CollapsedData, theta: np.ndarray) -> float:
    """Largest normalized end-node weight over every group's integrand at θ."""
    from benchmeasure.irt.quadrature import edge_weight

    if hasattr(data, "log_integrands"):  # holes or K per cell
        a = data.log_integrands(theta)
        return float(edge_weight(a).max()) if a.size else 0.0
    grid = data.grid
    worst = 0.0
    if data.c_values.size:
        eta = theta[:, None] - grid.nodes[None, :]
        s_sum = (np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))).sum(axis=0)
        a = grid.log_weights[None, :] - data.c_values[:, None] * grid.nodes[None, :] - data.n_trials * s_sum[None, :]
        worst = max(worst, float(edge_weight(a).max()))
    if data.gu.size:
        from benchmeasure.irt.quadrature import log_integrand

        a = log_integrand(data.yu, data.n_trials, theta, grid, guessing=data.gu[:, None], side="item")
        worst = max(worst, float(edge_weight(a).max()))
    return worst
