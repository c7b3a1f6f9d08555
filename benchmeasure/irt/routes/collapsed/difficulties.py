"""Exact draws of every b_i given each θ draw of the collapsed route, and the quadrature's accuracy check.

Given θ the difficulties are independent; each b_i is drawn from its one-dimensional conditional by exact
rejection from a piecewise-exponential envelope (:func:`~.quadrature.chord_draw`), on the grid of
:func:`draw_grid` (see :mod:`benchmeasure.irt.routes.collapsed.marginal` for the model and the grouping of items).
"""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.rng import private_state, states
from benchmeasure.irt.routes.collapsed.holes import _guess_tables_cells, _pattern_tables
from benchmeasure.irt.routes.collapsed.marginal import CollapsedData, _guess_tables, _softplus_table, node_exps
from benchmeasure.irt.routes.collapsed.quadrature import (
    Grid,
    _logf_general,
    cell_loglik,
    chord_cumulative,
    chord_propose,
    chord_tables,
    make_grid,
)

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


@numba.njit(cache=True)
def _logf_pattern(x, c, prow, theta):
    """log N(x; 0, 1)·likelihood of a g = 0 item with column sum c and trials column ``prow`` at b = x, without the
    terms free of x (Σ_j Y_ij θ_j): −x²/2 − c·x − Σ_j T_pj softplus(θ_j − x)."""
    exact = -0.5 * x * x - c * x
    for j in range(theta.shape[0]):
        eta = theta[j] - x
        if prow[j] > 0.0:
            exact -= prow[j] * (max(eta, 0.0) + math.log(1.0 + math.exp(-abs(eta))))
    return exact


@numba.njit(cache=True)
def _logf_exact(x, y, k, theta, g):
    """log N(x; 0, 1)·likelihood of one item at b = x, cells with 0 trials skipped (up to constants)."""
    total = -0.5 * x * x
    for j in range(theta.shape[0]):
        if k[j] > 0.0:
            total += cell_loglik(y[j], k[j], theta[j] - x, g)
    return total


@numba.njit(cache=True, nogil=True)
def draw_b_block(theta_draws, nodes, step, delta, n_trials, holes, patterns, c_pattern, c_values, yu, ku, gu, gbounds,
                 members_c, starts_c, members_u, starts_u, state, out):
    """out[s, i] = one exact draw of b_i given θ = theta_draws[s], for every draw s and item i (the items of each
    group as :func:`group_members` lists them), of a :class:`~.marginal.CollapsedData` (one K: ``n_trials``) or,
    with ``holes``, a :class:`~.holes.CollapsedHolesData` (its trials columns ``patterns``, ``c_pattern`` and
    ``ku``; empty arrays without holes)."""
    m, n_nodes = theta_draws.shape[1], nodes.shape[0]
    n_c, n_u = c_values.shape[0], gu.shape[0]
    f_c, cum_c, shape_c, guide_c = chord_tables(n_c, n_nodes)
    f_u, cum_u, shape_u, guide_u = chord_tables(n_u, n_nodes)
    s_sum = np.empty(n_nodes)                             # one K: Σ_j softplus(θ_j − x_k)
    s_tab = np.empty((patterns.shape[0], n_nodes))        # holes: the same per trials column, times T
    sig = np.empty((m, n_nodes))
    d = np.empty((m, n_nodes))
    lw = np.empty((m, n_nodes))
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
            if holes:
                _pattern_tables(theta, nodes, patterns, s_tab, sig)
            else:
                _softplus_table(theta, nodes, exps, s_sum)
            for c in range(n_c):
                for k in range(n_nodes):
                    x = nodes[k]
                    f_c[c, k] = -0.5 * x * x - c_values[c] * x - (s_tab[c_pattern[c], k] if holes
                                                                  else n_trials * s_sum[k])
                chord_cumulative(f_c[c], step, cum_c[c], shape_c[c], guide_c[c])
        for block in range(gbounds.shape[0] - 1):
            lo, hi = gbounds[block], gbounds[block + 1]
            if holes:
                _guess_tables_cells(theta, nodes, gu[lo], d, lw, dd, dbl)
                f_u[lo:hi] = np.ascontiguousarray(yu[lo:hi]) @ d + np.ascontiguousarray(ku[lo:hi]) @ lw
                for u in range(lo, hi):
                    for k in range(n_nodes):
                        f_u[u, k] -= 0.5 * nodes[k] * nodes[k]
            else:
                _guess_tables(theta, nodes, gu[lo], n_trials, d, e_sum, dd, dbl)
                f_u[lo:hi] = np.ascontiguousarray(yu[lo:hi]) @ d
                for u in range(lo, hi):
                    for k in range(n_nodes):
                        f_u[u, k] += e_sum[k] - 0.5 * nodes[k] * nodes[k]
            for u in range(lo, hi):
                chord_cumulative(f_u[u], step, cum_u[u], shape_u[u], guide_u[u])
        # group by group: each group's tables are looked up once, then its items' draws (i.i.d. given θ) are made
        for c in range(n_c):
            f, cum, shp, gd = f_c[c], cum_c[c], shape_c[c], guide_c[c]
            for q in range(starts_c[c], starts_c[c + 1]):
                while True:
                    x, chord, w, sure = chord_propose(f, cum, shp, gd, nodes[0], step, state, squeeze_plain)
                    if sure:
                        break
                    exact = (_logf_pattern(x, c_values[c], patterns[c_pattern[c]], theta) if holes
                             else _logf_plain(x, c_values[c], theta, n_trials))
                    if math.log(w) < exact - chord - delta:
                        break
                out[s, members_c[q]] = x
        for u in range(n_u):
            f, cum, shp, gd = f_u[u], cum_u[u], shape_u[u], guide_u[u]
            if not holes:
                for j in range(m):
                    g_item[j] = gu[u]
            for q in range(starts_u[u], starts_u[u + 1]):
                while True:
                    x, chord, w, sure = chord_propose(f, cum, shp, gd, nodes[0], step, state, squeeze)
                    if sure:
                        break
                    exact = (_logf_exact(x, yu[u], ku[u], theta, gu[u]) if holes
                             else _logf_general(x, yu[u], theta, -1, n_trials, g_item))
                    if math.log(w) < exact - chord - delta:
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
    if hasattr(data, "patterns"):   # holes or K per cell (holes.CollapsedHolesData): its trials columns
        trials_columns, ku = (True, data.patterns, data.c_pattern), data.ku
    else:
        empty = np.zeros((0, data.n_models))
        trials_columns, ku = (False, empty, np.zeros(0, dtype=np.int64)), empty
    if threads is None:
        threads = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)

    def one(index):
        start = starts[index]
        stop = min(start + block, flat.shape[0])
        part = out[start:stop]   # the kernels write float32 in place (rounded as NumPy would)
        draw_b_block(flat[start:stop], nodes, step, delta, float(data.n_trials), *trials_columns, data.c_values,
                     data.yu, ku, data.gu, data.gbounds, *members, private_state(block_states[index]), part)
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
    from benchmeasure.irt.routes.collapsed.quadrature import edge_weight

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
        from benchmeasure.irt.routes.collapsed.quadrature import log_integrand

        a = log_integrand(data.yu, data.n_trials, theta, grid, guessing=data.gu[:, None], side="item")
        worst = max(worst, float(edge_weight(a).max()))
    return worst
