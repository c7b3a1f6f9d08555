"""Exact one-dimensional ability posteriors when the fixed items have slopes: new models scored against a 2PL's items.

The 2PL of ``fit --model 2pl`` (:mod:`benchmeasure.irt.routes.twopl`): model j solves item i with probability
p_ij = g_i + (1 − g_i)·σ(a_i(θ_j − b_i)), Y_ij ~ Binomial(K_ij, p_ij), θ_j ~ N(0, 1). With every item's (b_i, a_i)
held fixed, one model's ability has the one-dimensional posterior

    p(θ | y, b, a) ∝ N(θ; m, s) · Π_i Binomial(y_i; K_i, g_i + (1 − g_i)·σ(a_i(θ − b_i))),

(m, s) = (0, 1) the 2PL's prior (or the ``--prior`` of :mod:`.fixed_prior`), evaluated on a uniform grid as the
1PL's is (:mod:`.anchored`), with the bounds that set that grid rederived for slopes:

* **Step.** Per cell the log-likelihood's second derivative in η = a(θ − b) lies in [−K/4, K/4]
  (:mod:`benchmeasure.irt.routes.collapsed.quadrature`), and d²η/dθ² = 0, so in θ it lies in [−K·a²/4, K·a²/4]:
  the log density curves by at most B = 1/s² + Σ_i K_i·a_i²/4, the 1PL's bound with each item weighted by a_i².
  The fine grid's step is :data:`~benchmeasure.irt.anchored.SUMMARY_STEP_FACTOR`/√B, as the 1PL's.
* **Where the mass is.** A coarse pass of :data:`~benchmeasure.irt.anchored.COARSE_NODES` nodes over
  m ± max(s, 1)·(12 + log(1 + Σ K_i·a_i²))/min(1, min a) finds the nodes within
  :data:`~benchmeasure.irt.anchored.WINDOW_NATS` (plus the chord slack B·h²/8) of the peak; the fine grid covers
  them and one coarse node more on each side. The span is the 1PL's scaled by 1/min a because a likelihood that
  pulls θ past the items decays as e^(−a·distance): a flat item lets the posterior sit further out. Should the mass
  still reach an end of the span, the span is doubled and the pass repeated, so no posterior is cut off.

With every a_i = 1 the posterior is the 1PL's (the same density on another grid: equal to ~1e−9, tested). Posterior
draws of (b, a) are integrated over as the 1PL's draws of b are: the mixture over draws of p(θ | y, b⁽ˢ⁾, a⁽ˢ⁾) on
one common grid. K per cell enters each cell with its own K_i (no expansion into single trials is needed here).
"""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.anchored import (
    COARSE_NODES,
    HDI_PROB,
    SUMMARY_STEP_FACTOR,
    WINDOW_NATS,
    GridPosterior,
    ModelScore,
    predict_accuracy,
)
from benchmeasure.irt.routes.collapsed.quadrature import BASE_HALF_WIDTH, cell_loglik

MAX_WIDENINGS = 12   # doublings of the coarse span (2^12 times the first): far beyond any finite data's reach


@numba.njit(cache=True)
def _loglik_on_nodes(y, k, b, a, g, nodes, out):
    """out[n] = Σ_i log Binomial(y_i | K_i, g_i + (1 − g_i)·σ(a_i(node_n − b_i))) without log C(K, y)."""
    for n in range(nodes.shape[0]):
        x = nodes[n]
        total = 0.0
        for i in range(b.shape[0]):
            total += cell_loglik(y[i], k[i], a[i] * (x - b[i]), g[i])
        out[n] = total


def _log_density(y, k, b, a, g, nodes, prior) -> np.ndarray:
    """log prior + log-likelihood at ``nodes`` (up to constants)."""
    out = np.empty(nodes.size)
    _loglik_on_nodes(y, k, np.ascontiguousarray(b, dtype=float), np.ascontiguousarray(a, dtype=float), g, nodes, out)
    mean, sd = prior
    return out - 0.5 * ((nodes - mean) / sd) ** 2


def curvature(k, a, prior) -> float:
    """B = 1/s² + Σ K_i·a_i²/4, the bound on the log density's curvature in θ (module docstring)."""
    return 1.0 / prior[1] ** 2 + float(np.sum(np.asarray(k) * np.asarray(a) ** 2)) / 4.0


def mass_window(y, k, b, a, g, prior) -> tuple[float, float]:
    """(low, high) holding every node within :data:`WINDOW_NATS` of the peak, from coarse passes (module docstring)."""
    mean, sd = prior
    bound = curvature(k, a, prior)
    a_min = float(np.min(a)) if np.size(a) else 1.0
    half = max(sd, 1.0) * (BASE_HALF_WIDTH + math.log1p(float(np.sum(np.asarray(k) * np.asarray(a) ** 2))))
    half /= min(1.0, a_min)
    for _ in range(MAX_WIDENINGS + 1):
        nodes = np.linspace(mean - half, mean + half, COARSE_NODES)
        values = _log_density(y, k, b, a, g, nodes, prior)
        step = float(nodes[1] - nodes[0])
        inside = np.flatnonzero(values >= values.max() - WINDOW_NATS - bound * step**2 / 8.0)
        if inside[0] > 0 and inside[-1] < nodes.size - 1:
            return float(nodes[inside[0] - 1]), float(nodes[inside[-1] + 1])
        half *= 2.0
    raise ValueError("the ability posterior's mass reaches the end of every span tried")


def fine_nodes(window, bound: float) -> np.ndarray:
    """The uniform grid over ``window`` with step :data:`SUMMARY_STEP_FACTOR`/√B."""
    low, high = window
    return np.linspace(low, high, max(3, math.ceil((high - low) * math.sqrt(bound) / SUMMARY_STEP_FACTOR) + 1))


def ability_posterior(counts, trials, difficulties, slopes, guessing=0.0, prior=None, nodes=None) -> GridPosterior:
    """p(θ | y, b, a) of one model: ``counts`` correct of ``trials`` on items with difficulties ``difficulties`` and
    slopes ``slopes`` (arrays of one length; ``trials`` a number or one per item), ``guessing`` g_i, ``prior`` (m, s)
    (default the 2PL's N(0, 1)); ``nodes`` a common grid (for a mixture), else the window's fine grid."""
    y = np.asarray(counts, dtype=float)
    k = np.ascontiguousarray(np.broadcast_to(np.asarray(trials, dtype=float), y.shape))
    b, a = np.asarray(difficulties, dtype=float), np.asarray(slopes, dtype=float)
    if not (y.shape == b.shape == a.shape) or y.ndim != 1:
        raise ValueError(f"counts {y.shape}, difficulties {b.shape} and slopes {a.shape} must be equal-length vectors")
    if np.any(y < 0) or np.any(y > k):
        raise ValueError("counts must lie in [0, trials]")
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(a)) and np.all(a > 0)):
        raise ValueError("difficulties must be finite and slopes finite and positive")
    g = np.ascontiguousarray(np.broadcast_to(np.asarray(guessing, dtype=float), y.shape))
    prior = (0.0, 1.0) if prior is None else prior
    if nodes is None:
        nodes = fine_nodes(mass_window(y, k, b, a, g, prior), curvature(k, a, prior))
    return GridPosterior.from_log(nodes, _log_density(y, k, b, a, g, nodes, prior))


def score_model(counts, answered, difficulties, slopes, n_trials: int, guessing, difficulty_draws=None,
                slope_draws=None, prob: float = HDI_PROB, model: str = "", trials=None, prior=None) -> ModelScore:
    """θ's posterior and the predicted full-benchmark accuracy of one model against items with slopes.

    As :func:`benchmeasure.irt.anchored.score_model`, with ``slopes`` (N,) every item's a_i beside
    ``difficulties`` (N,), and ``slope_draws`` (S, N) beside ``difficulty_draws`` (S, N) (the same draws of the
    fit's posterior, paired): θ's posterior is the mixture over draws of p(θ | y, b⁽ˢ⁾, a⁽ˢ⁾), and each draw
    predicts the unanswered items with its own b and a.
    """
    y = np.asarray(counts, dtype=float)
    idx = np.asarray(answered, dtype=np.int64)
    g = np.asarray(guessing, dtype=float)
    rest = np.setdiff1d(np.arange(g.size), idx)
    if difficulty_draws is None:
        b_draws = np.asarray(difficulties, dtype=float)[None, :]
        a_draws = np.asarray(slopes, dtype=float)[None, :]
    else:
        b_draws, a_draws = np.asarray(difficulty_draws, dtype=float), np.asarray(slope_draws, dtype=float)
        if b_draws.shape != a_draws.shape:
            raise ValueError(f"difficulty draws {b_draws.shape} and slope draws {a_draws.shape} must pair up")
    t = np.full(idx.size, float(n_trials)) if trials is None else np.asarray(trials, dtype=float)
    solved = float((y / t).sum()) if idx.size else 0.0
    observed = float(y.sum() / t.sum()) if idx.size else float("nan")
    g_answered = np.ascontiguousarray(g[idx])
    normal = (0.0, 1.0) if prior is None else prior
    windows = [mass_window(y, t, b[idx], a[idx], g_answered, normal) for b, a in zip(b_draws, a_draws)]
    bound = max(curvature(t, a[idx], normal) for a in a_draws)
    nodes = fine_nodes((min(w[0] for w in windows), max(w[1] for w in windows)), bound)
    components = [(ability_posterior(y, t, b[idx], a[idx], g_answered, normal, nodes), b[rest], g[rest], a[rest])
                  for b, a in zip(b_draws, a_draws)]
    posterior = components[0][0] if len(components) == 1 else GridPosterior.mixture([c[0] for c in components])
    low, high = posterior.hdi(prob)
    prediction = predict_accuracy(components, solved, g.size, n_trials, prob)
    return ModelScore(model, posterior.mean, posterior.sd, low, high, int(idx.size), observed,
                      prediction.mean, prediction.low, prediction.high)


# ------------------------------------------------------------------------------------------------
# a new item's (b, a) with every ability held fixed: calibrate-items against a 2PL fit's abilities

#: nodes per axis of the zooming passes and of the final grid over (b, log a)
ZOOM_NODES, FINE_NODES_2D, MAX_ZOOMS = 101, 201, 6


@numba.njit(cache=True)
def _item_loglik(y, k, theta, g, b_nodes, u_nodes, out):
    """out[p, q] = Σ_j log Binomial(y_j | K_j, g + (1 − g)·σ(e^u_q·(θ_j − b_p))) without log C(K, y)."""
    for q in range(u_nodes.shape[0]):
        a = math.exp(u_nodes[q])
        for p in range(b_nodes.shape[0]):
            total = 0.0
            for j in range(theta.shape[0]):
                total += cell_loglik(y[j], k[j], a * (theta[j] - b_nodes[p]), g)
            out[p, q] = total


def _item_log_density(y, k, theta, g, b_nodes, u_nodes, prior, slope_sd):
    out = np.empty((b_nodes.size, u_nodes.size))
    _item_loglik(y, k, theta, float(g), b_nodes, u_nodes, out)
    mean, sd = prior
    return out - 0.5 * ((b_nodes[:, None] - mean) / sd) ** 2 - 0.5 * (u_nodes[None, :] / slope_sd) ** 2


def item_box(y, k, theta, g, prior, slope_sd) -> tuple:
    """((b_low, b_high), (u_low, u_high)) holding every node within :data:`WINDOW_NATS` of the peak of
    p(b, u = log a | y, θ): a pass of :data:`ZOOM_NODES`² nodes over a box, widened where the mass reaches its edge
    and narrowed to the nodes it found (one node more each side) until it stops shrinking."""
    mean, sd = prior
    reach = BASE_HALF_WIDTH + math.log1p(float(np.sum(k)))
    box = [[mean - max(sd, 1.0) * reach, mean + max(sd, 1.0) * reach], [-slope_sd * reach, slope_sd * reach]]
    for _ in range(MAX_ZOOMS + MAX_WIDENINGS):
        axes = [np.linspace(low, high, ZOOM_NODES) for low, high in box]
        values = _item_log_density(y, k, theta, g, axes[0], axes[1], prior, slope_sd)
        rows, cols = np.nonzero(values >= values.max() - WINDOW_NATS)
        found, grew = [], False
        for axis, hits in zip(axes, (rows, cols)):
            first, last = int(hits.min()), int(hits.max())
            low, high = axis[max(first - 1, 0)], axis[min(last + 1, ZOOM_NODES - 1)]
            if first == 0:
                low, grew = axis[0] - (axis[-1] - axis[0]), True
            if last == ZOOM_NODES - 1:
                high, grew = axis[-1] + (axis[-1] - axis[0]), True
            found.append([float(low), float(high)])
        shrunk = all((f[1] - f[0]) < 0.5 * (b[1] - b[0]) for f, b in zip(found, box))
        box = found
        if not grew and not shrunk:
            return tuple(map(tuple, box))
    return tuple(map(tuple, box))


def item_posterior(counts, trials, abilities, guessing: float = 0.0, prior=None, slope_sd: float | None = None):
    """p(b, a | y, θ) of one item: (the marginal :class:`GridPosterior` of b, E[a], sd[a]) under b ~ N(m, s)
    (``prior``, default N(0, 1)) and log a ~ N(0, ``slope_sd``) (default the 2pl route's), by the trapezoid rule on
    a :data:`FINE_NODES_2D`² grid over :func:`item_box`."""
    from benchmeasure.irt.routes.twopl.model import SLOPE_SD

    y = np.asarray(counts, dtype=float)
    k = np.ascontiguousarray(np.broadcast_to(np.asarray(trials, dtype=float), y.shape))
    theta = np.ascontiguousarray(abilities, dtype=float)
    if y.shape != theta.shape or y.ndim != 1 or y.size == 0:
        raise ValueError("an item needs counts and abilities of equal, nonzero length")
    prior = (0.0, 1.0) if prior is None else prior
    slope_sd = SLOPE_SD if slope_sd is None else slope_sd
    (b_low, b_high), (u_low, u_high) = item_box(y, k, theta, guessing, prior, slope_sd)
    b_nodes, u_nodes = np.linspace(b_low, b_high, FINE_NODES_2D), np.linspace(u_low, u_high, FINE_NODES_2D)
    values = _item_log_density(y, k, theta, guessing, b_nodes, u_nodes, prior, slope_sd)
    weight = np.exp(values - values.max())
    u_step = np.full(u_nodes.size, u_nodes[1] - u_nodes[0])
    u_step[[0, -1]] /= 2.0
    marginal = weight @ u_step                                   # ∫ p(b, u) du at each b node (trapezoid)
    posterior = GridPosterior.from_log(b_nodes, np.log(np.maximum(marginal, 1e-300)))
    b_step = np.full(b_nodes.size, b_nodes[1] - b_nodes[0])
    b_step[[0, -1]] /= 2.0
    over_u = b_step @ weight                                     # ∫ p(b, u) db at each u node
    mass = over_u * u_step
    a = np.exp(u_nodes)
    a_mean = float(mass @ a / mass.sum())
    a_sd = float(math.sqrt(max(mass @ (a - a_mean) ** 2 / mass.sum(), 0.0)))
    return posterior, a_mean, a_sd


def calibrate_item(counts, abilities, n_trials: int, guessing: float = 0.0, reference=None, prob: float = HDI_PROB,
                   item: str = "", trials=None, prior=None):
    """One new item's b (mean, sd, HDI, z) and slope a (mean, sd) with every ability fixed: the 2PL's
    :func:`benchmeasure.irt.anchored.calibrate_item` (``trials``: one per model, 0 = absent)."""
    from benchmeasure.irt.anchored import ItemCalibration

    y = np.asarray(counts, dtype=float)
    theta = np.asarray(abilities, dtype=float)
    k = np.full(y.size, float(n_trials)) if trials is None else np.asarray(trials, dtype=float)
    present = k > 0
    posterior, a_mean, a_sd = item_posterior(y[present], k[present], theta[present], guessing, prior)
    low, high = posterior.hdi(prob)
    z = float("nan") if reference is None else (posterior.mean - reference[0]) / (reference[1] - reference[0])
    return ItemCalibration(item, posterior.mean, posterior.sd, low, high, z), (a_mean, a_sd)
