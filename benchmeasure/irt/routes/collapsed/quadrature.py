"""One-dimensional 1PL posteriors by quadrature: one parameter, Normal(0, 1) prior, the other side fixed.

In the paper's 1PL (Appendix C.3) model j solves item i with probability
p = g_i + (1 − g_i)·σ(θ_j − b_i), Y_ij ~ Binomial(K, p), θ_j and b_i ~ Normal(0, 1). With
one side fixed, every parameter of the other side has an independent one-dimensional
posterior:

* an item's difficulty given the abilities θ (``side="item"``, η_j = θ_j − x):
  p(x | θ, Y_i) ∝ N(x; 0, 1) · Π_j Binom(Y_ij | K, p(η_j, g_i));
* a model's ability given the difficulties b (``side="model"``, η_i = x − b_i):
  p(x | b, Y_j) ∝ N(x; 0, 1) · Π_i Binom(Y_ji | K, p(η_i, g_i)).

This module evaluates such a posterior on a fixed uniform grid (:func:`make_grid`):
:func:`log_marginal` (log ∫ N(x; 0, 1)·likelihood dx, the evidence of one row or column,
binomial coefficients left out unless asked for), :func:`posterior_moments` (mean and sd)
and :func:`sample` (exact draws). The collapsed 1PL sampler (:mod:`benchmeasure.irt.routes.collapsed`)
integrates every b_i out this way, and the anchored fits and item scoring use it with the
other side held fixed.

Accuracy. Per cell the log-likelihood's second derivative in η lies in [−1/4, 1/4] for any
g ∈ [0, 1) (log σ and log(g + (1 − g)σ) both curve by at most 1/4), so the log-integrand's
curvature is at most B = 1 + K·P/4 for P opposing parameters, and its posterior is never
narrower than σ_min = B^(−1/2). The trapezoid rule on a uniform grid converges
exponentially for such analytic integrands: the error of a Gaussian of sd σ with step h
is about 2·exp(−2π²σ²/h²), so the default step h = 0.7·σ_min gives relative errors near
1e−17. The grid spans [−L, L] with L = 12 + log(1 + K·P) (the prior alone puts 1e−32 of its
mass beyond 12); :func:`edge_weight` reports the normalized weight at the two end nodes, so
a caller can check that nothing lies beyond the grid.

Exact draws. Between two nodes the log density f is replaced by its chord; since
|f''| ≤ B, f − chord ∈ [−δ, δ] with δ = B·h²/8. Draws from the piecewise-exponential
density exp(chord + δ) (an envelope of exp f) are accepted with probability
exp(f − chord − δ): the accepted draws follow the posterior truncated to [−L, L] exactly.
A draw with log u < −2δ is accepted without evaluating f (the squeeze).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.rng import states, uniform

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
STEP_FACTOR = 0.7       # h = STEP_FACTOR · σ_min
BASE_HALF_WIDTH = 12.0  # L = BASE_HALF_WIDTH + log(1 + K·P)
SIDES = ("item", "model")


@dataclass(frozen=True)
class Grid:
    """Uniform nodes on [−L, L] with trapezoid weights times the Normal(0, 1) prior density.

    ``nodes`` (G,), ``log_weights`` (G,) = log(trapezoid weight) + log N(node; 0, 1),
    ``step`` h, ``curvature`` B (the bound on |f''| the grid was sized for).
    """

    nodes: np.ndarray
    log_weights: np.ndarray
    step: float
    curvature: float

    @property
    def size(self) -> int:
        return int(self.nodes.size)


def make_grid(n_opposing: int, n_trials: int, *, step_factor: float = STEP_FACTOR,
              half_width: float | None = None) -> Grid:
    """The grid for a parameter facing ``n_opposing`` parameters with ``n_trials`` trials per cell."""
    curvature = 1.0 + n_trials * n_opposing / 4.0
    step_target = step_factor / math.sqrt(curvature)
    width = BASE_HALF_WIDTH + math.log1p(n_trials * n_opposing) if half_width is None else float(half_width)
    intervals = max(2, math.ceil(2.0 * width / step_target))
    nodes = np.linspace(-width, width, intervals + 1)
    step = float(nodes[1] - nodes[0])
    weights = np.full(nodes.size, step)
    weights[0] = weights[-1] = step / 2.0
    log_weights = np.log(weights) - 0.5 * nodes ** 2 - LOG_SQRT_2PI
    return Grid(nodes=nodes, log_weights=log_weights, step=step, curvature=curvature)


# ---------------------------------------------------------------------------------------------
# the log-likelihood of one cell (matches benchmeasure.irt.likelihood without log C(K, Y))


def start_groups(data, y, guessing, n_trials: int, grid: Grid | None):
    """Set what every grouping of a matrix's items shares (the collapsed route's :class:`~.marginal.CollapsedData`
    and :class:`~.holes.CollapsedHolesData`): ``n_models``, ``n_items``, ``n_trials``, the ``grid`` (default
    :func:`make_grid`), ``item_kind`` (0 for g = 0, else 1) and a zeroed ``item_group``; returns (g per item, the
    g = 0 mask, the column sums)."""
    n_models, n_items = y.shape
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (n_items,))
    data.n_models, data.n_items, data.n_trials = n_models, n_items, int(n_trials)
    data.grid = grid or make_grid(n_models, n_trials)
    plain = g == 0.0
    data.item_kind = np.where(plain, 0, 1).astype(np.int64)
    data.item_group = np.zeros(n_items, dtype=np.int64)
    return g, plain, y.sum(axis=0)


@numba.njit(cache=True, inline="always")
def _log_sigmoid(x):
    return -(max(-x, 0.0) + math.log1p(math.exp(-abs(x))))


@numba.njit(cache=True)
def cell_loglik(y, k, eta, g):
    """Y·log p + (K − Y)·log(1 − p) with p = g + (1 − g)·σ(η), in log space."""
    log_wrong = _log_sigmoid(-eta) + (math.log1p(-g) if g > 0.0 else 0.0)
    if g > 0.0:
        a = math.log(g)
        c = math.log1p(-g) + _log_sigmoid(eta)
        hi, lo = (a, c) if a > c else (c, a)
        log_right = hi + math.log1p(math.exp(lo - hi))
    else:
        log_right = _log_sigmoid(eta)
    return y * log_right + (k - y) * log_wrong


@numba.njit(cache=True)
def _logf_general(x, y, opposing, sign, k, g):
    """log N(x; 0, 1)·likelihood (up to log √2π and log C(K, Y)) of one row or column at x."""
    total = -0.5 * x * x
    for p in range(opposing.shape[0]):
        eta = (opposing[p] - x) if sign < 0 else (x - opposing[p])
        total += cell_loglik(y[p], k, eta, g[p])
    return total


@numba.njit(cache=True)
def _log_integrand_rows(counts, opposing, sign, k, g, nodes, out):
    """out[u, n] = Σ_p ℓ(Y_up, η_p(node n), g_up) (likelihood part only; the caller adds the weights)."""
    for u in range(counts.shape[0]):
        for n in range(nodes.shape[0]):
            x = nodes[n]
            total = 0.0
            for p in range(opposing.shape[0]):
                eta = (opposing[p] - x) if sign < 0 else (x - opposing[p])
                total += cell_loglik(counts[u, p], k, eta, g[u, p])
            out[u, n] = total


def _prepare(counts, n_trials, opposing, guessing, side):
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    y = np.atleast_2d(np.asarray(counts, dtype=float))
    o = np.ascontiguousarray(opposing, dtype=float)
    if y.shape[1] != o.size:
        raise ValueError(f"counts have {y.shape[1]} cells per row but there are {o.size} opposing parameters")
    g = np.ascontiguousarray(np.broadcast_to(np.asarray(guessing, dtype=float), y.shape))
    return np.ascontiguousarray(y), o, g, (-1 if side == "item" else 1), float(n_trials)


def log_integrand(counts, n_trials: int, opposing, grid: Grid, guessing=0.0, side: str = "item") -> np.ndarray:
    """log of weight × prior × likelihood at every grid node, shape (U, G), for U rows of counts.

    ``counts`` (U, P): each row the counts of one item against P models (``side="item"``) or
    of one model against P items (``side="model"``); ``opposing`` (P,) the fixed θ or b;
    ``guessing`` broadcastable to (U, P). log √2π is included (``grid.log_weights``), the
    binomial coefficients are not.
    """
    y, o, g, sign, k = _prepare(counts, n_trials, opposing, guessing, side)
    out = np.empty((y.shape[0], grid.size))
    _log_integrand_rows(y, o, sign, k, g, grid.nodes, out)
    return out + grid.log_weights[None, :]


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    top = a.max(axis=1)
    return top + np.log(np.exp(a - top[:, None]).sum(axis=1))


def log_marginal(counts, n_trials: int, opposing, grid: Grid | None = None, guessing=0.0, side: str = "item",
                 with_constant: bool = False) -> np.ndarray:
    """log ∫ N(x; 0, 1)·Π_p Binom(Y_up | K, p(η_p(x), g_up)) dx for each row u, shape (U,).

    Without ``with_constant`` the binomial coefficients log C(K, Y) are left out (as in the
    sampled density); with it the value is the exact log-probability of the row's counts.
    """
    y = np.atleast_2d(np.asarray(counts, dtype=float))
    grid = grid or make_grid(y.shape[1], n_trials)
    value = _logsumexp_rows(log_integrand(y, n_trials, opposing, grid, guessing, side))
    if with_constant:
        from scipy.special import gammaln

        value = value + (gammaln(n_trials + 1) - gammaln(y + 1) - gammaln(n_trials - y + 1)).sum(axis=1)
    return value


def posterior_moments(counts, n_trials: int, opposing, grid: Grid | None = None, guessing=0.0,
                      side: str = "item") -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and sd of the parameter of each row, shapes (U,), by the same quadrature."""
    y = np.atleast_2d(np.asarray(counts, dtype=float))
    grid = grid or make_grid(y.shape[1], n_trials)
    a = log_integrand(y, n_trials, opposing, grid, guessing, side)
    w = np.exp(a - a.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    mean = w @ grid.nodes
    var = w @ grid.nodes ** 2 - mean ** 2
    return mean, np.sqrt(np.maximum(var, 0.0))


def edge_weight(log_values: np.ndarray) -> np.ndarray:
    """Normalized weight of the two end nodes of each row of log_integrand-like values (U, G)."""
    a = np.atleast_2d(log_values)
    lse = _logsumexp_rows(a)
    return np.exp(np.maximum(a[:, 0], a[:, -1]) - lse)


# ---------------------------------------------------------------------------------------------
# exact draws: piecewise-exponential envelope from the chords, corrected by rejection


@numba.njit(cache=True, nogil=True, inline="always")
def log1p_fast(x):
    """log(1 + x) for x > −1, to a relative error below 2e−12: a four-term series below |x| = 1e−4, else log(1 + x).

    Numba's ``math.log1p`` took 55 ns here against 20 ns for ``math.log`` (2-core development machine), and the
    inverse CDF of every exact draw takes one; the draws are stored as float32 (relative precision 6e−8)."""
    if abs(x) < 1e-4:
        return x * (1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x)))
    return math.log(1.0 + x)


# the log-height below max f under which an interval of the chord envelope is left out (chord_cumulative)
CHORD_FLOOR = -60.0


@numba.njit(cache=True)
def chord_cumulative(f, h, cum, shape, guide):
    """Prepare draws from exp(chord of f): cumulative interval masses (relative to exp(max f)) into ``cum``
    (G − 1,), each interval's inverse-CDF constant e^d − 1 (d the chord's rise over it) into ``shape`` (G − 1,), and
    a guide table into ``guide`` (G − 1,): guide[k] is an interval at or before the first whose cumulative mass
    exceeds k/(G − 1) of the total, so :func:`chord_draw` finds its interval in a step or two; returns max f.

    An interval whose two ends both lie more than 60 below max f gets no mass (and costs no exponential): the
    draws are then those of the density truncated to the other intervals, which differs from it by less than
    G·e^(−60) ≈ 1e−24 in total variation (the grid's own ends truncate it already)."""
    top = f.max()
    total = 0.0
    a = f[0] - top
    ea = -1.0                  # exp(a), not yet computed
    for n in range(f.shape[0] - 1):
        b = f[n + 1] - top
        if a < CHORD_FLOOR and b < CHORD_FLOOR:
            # both ends below e^(−60) of the largest: the interval's mass is left out (no exponential)
            shape[n] = 0.0
            cum[n] = total
            a, ea = b, -1.0
            continue
        if ea < 0.0:
            ea = math.exp(a)
        eb = math.exp(b)       # the next interval's exp(a): one exponential per node
        d = b - a
        # e^d − 1 without a second transcendental function: a series for small d, else the ratio of the two
        # exponentials (relative error below 3e−12 from |d| = 1e−4 up); expm1 only where e^a underflows
        if abs(d) < 1e-4:
            em1 = d * (1.0 + d * (0.5 + d * (1.0 / 6.0 + d * (1.0 / 24.0 + d / 120.0))))
        elif ea > 1e-290:
            em1 = eb / ea - 1.0
        else:
            em1 = math.expm1(d)
        shape[n] = em1
        # the interval's mass h·∫₀¹ e^(a + d·t) dt = h·e^a·(e^d − 1)/d (h·e^a when d = 0)
        mass = h * ea * (em1 / d) if d != 0.0 else h * ea
        total += mass
        cum[n] = total
        a, ea = b, eb
    buckets = guide.shape[0]
    n = 0
    for k in range(buckets):
        # a threshold a hair below k/buckets of the total: guide[k] never passes the interval a draw needs
        threshold = (k / buckets) * total * (1.0 - 1e-12)
        while n < buckets - 1 and cum[n] <= threshold:
            n += 1
        guide[k] = n
    return top


@numba.njit(cache=True)
def chord_draw(f, cum, shape, guide, x0, h, state):
    """One draw from the density ∝ exp(chord of f) on [x0, x0 + (G − 1)·h]; returns (x, chord(x)); its two uniforms
    come from the generator ``state`` (:mod:`benchmeasure.irt.rng`).

    The interval is the first whose cumulative mass exceeds u·total (found from the guide table, the same
    interval a binary search finds), then the position inside it by the inverse CDF."""
    u = uniform(state)
    last = cum.shape[0] - 1
    target = u * cum[last]
    n = guide[min(int(u * guide.shape[0]), guide.shape[0] - 1)]
    while n < last and cum[n] <= target:
        n += 1
    d = f[n + 1] - f[n]
    v = uniform(state)
    # inverse CDF of the density ∝ exp(d·t) on [0, 1]: t = log1p(v·(e^d − 1))/d, either sign of d
    t = v if abs(d) < 1e-10 else log1p_fast(v * shape[n]) / d
    t = min(max(t, 0.0), 1.0)
    return x0 + (n + t) * h, f[n] + d * t


@numba.njit(cache=True, inline="always")
def chord_propose(f, cum, shape, guide, x0, h, state, squeeze):
    """One proposal of an exact draw by rejection from exp(chord of f + δ): (x, chord(x), w, sure) with x from
    :func:`chord_draw` and w the uniform of its test; ``sure`` when w < ``squeeze`` accepts x whatever its exact
    density (the caller's exact test, log w < log f(x) − chord − δ, runs only otherwise)."""
    x, chord = chord_draw(f, cum, shape, guide, x0, h, state)
    w = uniform(state)
    return x, chord, w, w < squeeze


@numba.njit(cache=True, inline="always")
def chord_tables(groups, n_nodes):
    """Empty tables (f, cum, shape, guide) for ``groups`` densities on ``n_nodes`` nodes (:func:`chord_cumulative`)."""
    return (np.empty((groups, n_nodes)), np.empty((groups, n_nodes - 1)), np.empty((groups, n_nodes - 1)),
            np.empty((groups, n_nodes - 1), dtype=np.int64))


@numba.njit(cache=True)
def _sample_rows(counts, opposing, sign, k, g, nodes, h, delta, f_grid, size, state, out):
    cum = np.empty(nodes.shape[0] - 1)
    shape = np.empty(nodes.shape[0] - 1)
    guide = np.empty(nodes.shape[0] - 1, dtype=np.int64)
    squeeze = math.exp(-2.0 * delta)
    for u in range(counts.shape[0]):
        f = f_grid[u]
        chord_cumulative(f, h, cum, shape, guide)
        for s in range(size):
            while True:
                x, chord, w, sure = chord_propose(f, cum, shape, guide, nodes[0], h, state, squeeze)
                if sure or math.log(w) < _logf_general(x, counts[u], opposing, sign, k, g[u]) - chord - delta:
                    break
            out[u, s] = x


def sample(counts, n_trials: int, opposing, size: int, seed: int, grid: Grid | None = None, guessing=0.0,
           side: str = "item") -> np.ndarray:
    """``size`` exact posterior draws of the parameter of each row, shape (U, size) (see the module docstring)."""
    y, o, g, sign, k = _prepare(counts, n_trials, opposing, guessing, side)
    grid = grid or make_grid(y.shape[1], n_trials)
    f = np.empty((y.shape[0], grid.size))
    _log_integrand_rows(y, o, sign, k, g, grid.nodes, f)
    f -= 0.5 * grid.nodes[None, :] ** 2   # the prior, as _logf_general writes it
    delta = grid.curvature * grid.step ** 2 / 8.0
    out = np.empty((y.shape[0], int(size)))
    _sample_rows(y, o, sign, k, g, grid.nodes, grid.step, delta, f, int(size), states(int(seed) % (2**32), 1)[0], out)
    return out


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
