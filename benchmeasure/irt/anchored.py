"""Exact one-dimensional posteriors of the 1PL when one side of the scale is held fixed.

The paper's model (Appendix C.3): model j solves item i with probability
p_ij = g_i + (1 − g_i)·σ(θ_j − b_i), Y_ij ~ Binomial(K, p_ij), and θ_j, b_i ~ Normal(0, 1).
When every difficulty b_i is known (released with a benchmark, or from an earlier fit), the
posterior of one model's ability factorizes from every other parameter:

    p(θ | y, b) ∝ N(θ; 0, 1) · Π_i Binomial(y_i; K, g_i + (1 − g_i)·σ(θ − b_i)),

a density on a line; the mirror image, one item's difficulty with every ability θ_j fixed, is
p(b | y, θ) ∝ N(b; 0, 1) · Π_j Binomial(y_j; K, g + (1 − g)·σ(θ_j − b)). Both are evaluated
by the one quadrature of the project, :mod:`benchmeasure.irt.routes.collapsed.quadrature` (uniform trapezoid
grid sized from the likelihood's curvature bound; also the collapsed sampler's), here on a
grid :data:`SUMMARY_STEP_FACTOR` times finer than its default so that interpolated quantiles
and highest-density intervals are as exact as the mean and sd. This module adds what the
anchored workflows report: the summaries (:class:`GridPosterior`: mean, sd, HDI, mixtures
over difficulty draws) and the predicted full-benchmark accuracy (:func:`predict_accuracy`).

:func:`difficulty_posterior` is BenchFill's online calibration
(:mod:`benchmeasure.benchfill.calibration`, paper Section 4) and ``calibrate_items.py``;
``score_models.py`` uses :func:`ability_posterior` and :func:`predict_accuracy`.
NumPy and Numba only (BenchFill's environment has no SciPy).

Another Normal(m, s) prior on the free side (``prior=(m, s)``; ``calibrate-items`` and ``score-models --prior
hierarchical``, whose m and s come from the fit that fixed the other side): the same quadrature with the prior's
density in the weights (:func:`grid_for`); its curvature bound is 1/s² + K·P/4, so the step shrinks with s, and
the grid spans m ± max(s, 1)·(12 + log(1 + K·P)), the paper's span scaled by the prior's width. ``prior=None`` is
the paper's N(0, 1), computed exactly as it always was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchmeasure.irt.mixture import mixture_quantiles
from benchmeasure.irt.routes.collapsed.quadrature import (
    BASE_HALF_WIDTH,
    LOG_SQRT_2PI,
    Grid,
    log_integrand,
    make_grid,
)

SUMMARY_STEP_FACTOR = 0.1  # grid step = 0.1·σ_min, σ_min the narrowest posterior the curvature bound allows
HDI_PROB = 0.94            # ArviZ's default credible mass, as the rest of the project reports
MASS_FLOOR = 1e-16         # grid points below this fraction of the peak density carry no mass worth summing
DIRECT_NODES = 4001        # up to this many fine nodes the whole range is evaluated; beyond, a coarse pass first
COARSE_NODES = 801         # the coarse pass that finds where the mass is
WINDOW_NATS = 50.0         # the fine grid covers every coarse node within this many nats of the peak (and one more)

_integrate = np.trapezoid if hasattr(np, "trapezoid") else np.trapz  # NumPy < 2 has only trapz


def grid_for(n_opposing: int, n_trials: int, window=None, prior=None) -> Grid:
    """The :class:`~benchmeasure.irt.routes.collapsed.quadrature.Grid` of a parameter facing ``n_opposing`` fixed ones.

    The step is :data:`SUMMARY_STEP_FACTOR` times the narrowest posterior sd the curvature bound
    allows; ``window`` = (low, high) restricts the grid to where :func:`mass_window` found the mass;
    ``prior`` = (m, s) a Normal(m, s) prior in place of the paper's N(0, 1) (module docstring).
    """
    if prior is not None:
        return _grid_under(n_opposing, n_trials, window, prior)
    full = make_grid(n_opposing, n_trials, step_factor=SUMMARY_STEP_FACTOR)
    if window is None:
        return full
    low, high = max(window[0], full.nodes[0]), min(window[1], full.nodes[-1])
    nodes = np.linspace(low, high, max(3, math.ceil((high - low) / full.step) + 1))
    step = float(nodes[1] - nodes[0])
    weights = np.full(nodes.size, step)
    weights[0] = weights[-1] = step / 2.0
    return Grid(nodes=nodes, log_weights=np.log(weights) - 0.5 * nodes**2 - LOG_SQRT_2PI, step=step,
                curvature=full.curvature)


def _log_prior(nodes: np.ndarray, prior) -> np.ndarray:
    mean, sd = prior
    return -0.5 * ((nodes - mean) / sd) ** 2 - math.log(sd) - LOG_SQRT_2PI


def _grid_under(n_opposing: int, n_trials: int, window, prior) -> Grid:
    """:func:`grid_for` under a Normal(m, s) prior: its curvature bound, span and density (module docstring)."""
    mean, sd = prior
    curvature = 1.0 / sd**2 + n_trials * n_opposing / 4.0
    half = max(sd, 1.0) * (BASE_HALF_WIDTH + math.log1p(n_trials * n_opposing))
    low, high = mean - half, mean + half
    if window is not None:
        low, high = max(window[0], low), min(window[1], high)
    step_target = SUMMARY_STEP_FACTOR / math.sqrt(curvature)
    nodes = np.linspace(low, high, max(3, math.ceil((high - low) / step_target) + 1))
    step = float(nodes[1] - nodes[0])
    weights = np.full(nodes.size, step)
    weights[0] = weights[-1] = step / 2.0
    return Grid(nodes=nodes, log_weights=np.log(weights) + _log_prior(nodes, prior), step=step, curvature=curvature)


def mass_window(counts, fixed, n_trials: int, guessing, side: str, prior=None) -> tuple[float, float]:
    """Where a 1-D posterior's mass lies, from a coarse pass over the whole range.

    The log density's curvature is at most B = 1 + K·P/4 (:mod:`benchmeasure.irt.routes.collapsed.quadrature`), so
    between two coarse nodes h apart it exceeds their chord by at most B·h²/8: every point outside
    the returned window is below the peak by more than :data:`WINDOW_NATS` minus that, i.e. carries
    no mass a double can hold next to the peak's.
    """
    full = make_grid(len(fixed), n_trials) if prior is None else _grid_under(len(fixed), n_trials, None, prior)
    coarse = grid_for(len(fixed), n_trials, window=None) if prior is None else full
    nodes = np.linspace(coarse.nodes[0], coarse.nodes[-1], COARSE_NODES)
    coarse = Grid(nodes=nodes, log_weights=-0.5 * nodes**2 if prior is None else _log_prior(nodes, prior),
                  step=float(nodes[1] - nodes[0]), curvature=full.curvature)
    values = log_integrand(np.asarray(counts, dtype=float)[None, :], n_trials, fixed, coarse,
                           np.asarray(guessing, dtype=float)[None, :], side)[0]
    slack = coarse.curvature * coarse.step**2 / 8.0
    inside = np.flatnonzero(values >= values.max() - WINDOW_NATS - slack)
    return float(nodes[max(inside[0] - 1, 0)]), float(nodes[min(inside[-1] + 1, nodes.size - 1)])


def posterior_grid(counts, fixed, n_trials: int, guessing, side: str, prior=None) -> Grid:
    """The fine grid for one posterior: the whole range when small, else only the window holding the mass."""
    full = grid_for(len(fixed), n_trials, prior=prior)
    if full.size <= DIRECT_NODES:
        return full
    return grid_for(len(fixed), n_trials, mass_window(counts, fixed, n_trials, guessing, side, prior), prior)


@dataclass(frozen=True)
class GridPosterior:
    """A normalized density on a grid (trapezoid rule), with its summaries.

    Attributes
    ----------
    grid : ndarray, shape (G,)
        Increasing parameter values.
    density : ndarray, shape (G,)
        Posterior density at each grid point; integrates to 1 by the trapezoid rule.
    """

    grid: np.ndarray
    density: np.ndarray

    @classmethod
    def from_log(cls, grid: np.ndarray, log_density: np.ndarray) -> GridPosterior:
        weights = np.exp(log_density - log_density.max())
        return cls(grid, weights / _integrate(weights, grid))

    @classmethod
    def mixture(cls, parts: list) -> GridPosterior:
        """The equal-weight mixture of posteriors on one common grid."""
        grid = parts[0].grid
        if any(part.grid is not grid and not np.array_equal(part.grid, grid) for part in parts):
            raise ValueError("mixture components must share one grid")
        return cls(grid, np.mean([part.density for part in parts], axis=0))

    @property
    def mean(self) -> float:
        return float(_integrate(self.grid * self.density, self.grid))

    @property
    def sd(self) -> float:
        mean = self.mean
        return float(math.sqrt(max(_integrate((self.grid - mean) ** 2 * self.density, self.grid), 0.0)))

    def expect(self, values: np.ndarray) -> np.ndarray:
        """E[f(x)] for ``values`` = f(grid) of shape (G,) or (G, ...)."""
        return _integrate(np.moveaxis(np.asarray(values), 0, -1) * self.density, self.grid)

    def cdf(self) -> np.ndarray:
        """The cumulative distribution at each grid point (trapezoid cells), from 0 to 1."""
        cells = 0.5 * (self.density[1:] + self.density[:-1]) * np.diff(self.grid)
        total = np.concatenate([[0.0], np.cumsum(cells)])
        return total / total[-1]

    def cell_masses(self) -> np.ndarray:
        """Probability of each grid point as a quadrature node (trapezoid weights), summing to 1."""
        step = np.diff(self.grid)
        weights = np.zeros_like(self.grid)
        weights[:-1] += 0.5 * step
        weights[1:] += 0.5 * step
        mass = weights * self.density
        return mass / mass.sum()

    def quantile(self, q) -> np.ndarray:
        cdf = self.cdf()
        return np.interp(q, cdf, self.grid)

    def hdi(self, prob: float = HDI_PROB) -> tuple[float, float]:
        """The highest-density interval holding ``prob`` of the mass (density linear between grid points).

        The density level c is found by bisection so that {x: density(x) ≥ c} holds ``prob``;
        the interval runs from the first to the last crossing of c (one interval when unimodal,
        as the 1PL's 1-D posteriors are for g = 0: the likelihood is log-concave).
        """
        x, d = self.grid, self.density
        left, right, width = d[:-1], d[1:], np.diff(x)

        def above(c):
            lo, hi = np.minimum(left, right), np.maximum(left, right)
            span = np.where(hi > lo, (hi - np.clip(c, lo, hi)) / np.where(hi > lo, hi - lo, 1.0), (lo >= c) * 1.0)
            # the part of the cell above c has length span·width and mean density (max(c, lo) + hi)/2
            return float(np.sum(span * width * 0.5 * (np.maximum(c, lo) + hi)))

        low_c, high_c = 0.0, float(d.max())
        for _ in range(80):
            c = 0.5 * (low_c + high_c)
            low_c, high_c = (c, high_c) if above(c) >= prob else (low_c, c)
        c = low_c
        inside = np.flatnonzero(d >= c)
        first, last = int(inside[0]), int(inside[-1])
        lower, upper = x[first], x[last]
        if first > 0:
            lower = x[first - 1] + (c - d[first - 1]) / (d[first] - d[first - 1]) * width[first - 1]
        if last < d.size - 1:
            upper = x[last] + (d[last] - c) / (d[last] - d[last + 1]) * width[last]
        return float(lower), float(upper)

    def support(self) -> np.ndarray:
        """Indices of grid points with non-negligible density (for sums over many items)."""
        return np.flatnonzero(self.density >= MASS_FLOOR * self.density.max())


def _posterior(counts, fixed, n_trials: int, guessing, side: str, what: str, grid=None,
               prior=None) -> GridPosterior:
    y = np.asarray(counts, dtype=float)
    values = np.asarray(fixed, dtype=float)
    if y.shape != values.shape or y.ndim != 1:
        raise ValueError(f"counts {y.shape} and {what} {values.shape} must be equal-length vectors")
    if np.any(y < 0) or np.any(y > n_trials):
        raise ValueError(f"counts must lie in [0, {n_trials}]")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} must be finite")
    g = np.broadcast_to(np.asarray(guessing, dtype=float), values.shape)
    grid = posterior_grid(y, values, n_trials, g, side, prior) if grid is None else grid
    log_mass = log_integrand(y[None, :], n_trials, values, grid, g[None, :], side)[0]
    # log_integrand = log(trapezoid weight · prior · likelihood); the density drops the weight
    if prior is None:
        log_density = log_mass - (grid.log_weights + 0.5 * grid.nodes**2 + LOG_SQRT_2PI)
    else:   # the grid's weights may carry another prior (one grid for a mixture): the likelihood times this one
        log_density = log_mass - grid.log_weights + _log_prior(grid.nodes, prior)
    return GridPosterior.from_log(grid.nodes, log_density)


def ability_posterior(counts, difficulties, n_trials: int, guessing=0.0, grid=None, prior=None) -> GridPosterior:
    """p(θ | y, b) of one model whose answers to the items with difficulties ``difficulties`` are ``counts``.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
        Correct trials out of ``n_trials`` on each answered item (n may be 0: the prior).
    difficulties : array_like of float, shape (n,)
        The items' fixed difficulties b_i.
    guessing : float or array_like of shape (n,)
        Lower asymptote g_i of each item.
    grid : quadrature.Grid, optional
        Default :func:`grid_for` (n, K); pass one grid to mix posteriors (:meth:`GridPosterior.mixture`).
    prior : (m, s), optional
        θ ~ Normal(m, s) in place of the paper's N(0, 1).
    """
    return _posterior(counts, difficulties, n_trials, guessing, "model", "difficulties", grid, prior)


def difficulty_posterior(counts, abilities, n_trials: int, guessing: float = 0.0, prior=None) -> GridPosterior:
    """p(b | y, θ) of one item answered ``counts`` times correctly by models with fixed ``abilities`` (``prior`` =
    (m, s): b ~ Normal(m, s) in place of the paper's N(0, 1))."""
    if np.size(counts) == 0:
        raise ValueError("an item needs at least one model's answers")
    return _posterior(counts, abilities, n_trials, guessing, "item", "abilities", prior=prior)


# ------------------------------------------------------------------------------------------------
# the full-benchmark accuracy a model would score, from its ability posterior


@dataclass(frozen=True)
class AccuracyPrediction:
    """Predicted accuracy over every item of a benchmark, answered ones counted as observed.

    ``mean`` is E[A]; ``low``/``high`` an equal-tailed interval of A, where
    A = (Σ_answered y_i/K + Σ_unanswered Y_i/K) / N and the unanswered Y_i ~ Binomial(K, p_i(θ)),
    θ from its posterior (so both the ability's uncertainty and the trials' noise are in it).
    """

    mean: float
    low: float
    high: float


def predict_accuracy(components: list, observed_correct: float, n_items_total: int, n_trials: int,
                     prob: float = HDI_PROB) -> AccuracyPrediction:
    """Predicted full-benchmark accuracy of one model.

    Parameters
    ----------
    components : list of (GridPosterior, ndarray, ndarray[, ndarray])
        ``(posterior of θ, difficulties of the unanswered items, their guessing[, their slopes])``; one entry
        for plug-in difficulties, one per difficulty draw (equal weights) when integrating over
        the difficulty posterior. Without slopes every a is 1 (the 1PL).
    observed_correct : float
        Σ y_i / K over the answered items (expected number of items solved, counted once).
    n_items_total : int
        N, every item of the benchmark.
    n_trials : int
        K trials per item (the trial noise of the unanswered items scales as 1/K).
    prob : float
        Mass of the reported interval.
    """
    means, sds, masses = [], [], []
    for posterior, b_rest, g_rest, *slopes in components:
        keep = posterior.support()
        mass = posterior.cell_masses()[keep]
        if b_rest.size:
            shift = b_rest[None, :] - posterior.grid[keep, None]
            # a huge slope overflows a(θ − b) to ±inf: exp gives inf or 0, i.e. P = g or 1, the step it tends to
            with np.errstate(over="ignore"):
                if slopes:   # items with slopes a (a 2PL's, :mod:`.anchored_slopes`): σ(a(θ − b))
                    shift = slopes[0][None, :] * shift
                p = g_rest[None, :] + (1 - g_rest[None, :]) / (1.0 + np.exp(shift))
            mu = p.sum(axis=1)
            var = (p * (1 - p)).sum(axis=1) / n_trials
        else:
            mu = var = np.zeros(keep.size)
        means.append(mu)
        sds.append(np.sqrt(var))
        masses.append(mass / len(components))
    mu, sd, mass = (np.concatenate(x) for x in (means, sds, masses))
    mean_count = float(mass @ mu)
    scale = 1.0 / n_items_total
    if not np.any(sd > 0):
        return AccuracyPrediction(*(scale * (observed_correct + v) for v in (mean_count, mean_count, mean_count)))
    # the count of the unanswered items given θ: a sum of many independent binomials, normal to
    # within a fraction of a trial; mixed exactly over the grid of θ
    lo, hi = float((mu - 8 * sd).min()), float((mu + 8 * sd).max())
    tail = (1.0 - prob) / 2.0
    low, high = mixture_quantiles(mu, sd, mass, (tail, 1.0 - tail), np.linspace(lo, hi, 2001))
    n_rest = components[0][1].size
    low, high = max(float(low), 0.0), min(float(high), float(n_rest))
    return AccuracyPrediction(scale * (observed_correct + mean_count), scale * (observed_correct + low),
                              scale * (observed_correct + high))


# ------------------------------------------------------------------------------------------------
# the two workflows: score models against fixed difficulties, calibrate items against fixed abilities

SCORE_COLUMNS = ["model", "theta_mean", "theta_sd", "theta_hdi_low", "theta_hdi_high", "n_items_answered",
                 "accuracy_observed", "accuracy_predicted_full", "accuracy_predicted_low", "accuracy_predicted_high"]
CALIBRATION_COLUMNS = ["item", "b_mean", "b_sd", "b_hdi_low", "b_hdi_high", "z"]


@dataclass(frozen=True)
class ModelScore:
    """One model placed on a benchmark's scale (a row of ``score_models.py``'s output, :data:`SCORE_COLUMNS`)."""

    model: str
    theta_mean: float
    theta_sd: float
    theta_hdi_low: float
    theta_hdi_high: float
    n_items_answered: int
    accuracy_observed: float
    accuracy_predicted_full: float
    accuracy_predicted_low: float
    accuracy_predicted_high: float

    def row(self) -> list:
        return [getattr(self, name) for name in SCORE_COLUMNS]


def bernoulli_cells(counts, trials):
    """K per cell as single trials: (index of each trial's cell, 1 for a correct trial else 0).

    Y correct of T binomial trials and Y ones and T − Y zeros of T Bernoulli trials with the same p have the same
    likelihood up to the constant C(T, Y), so a posterior with K per cell is the K = 1 posterior of these cells
    (and its curvature bound, 1 + Σ T / 4, is the one the grid is sized for). A cell with 0 trials gives none.
    """
    y = np.asarray(counts, dtype=np.int64)
    t = np.asarray(trials, dtype=np.int64)
    cell = np.repeat(np.arange(t.size), t)
    rank = np.arange(cell.size) - np.repeat(np.cumsum(t) - t, t)  # 0 … T − 1 within each cell
    return cell, (rank < y[cell]).astype(float)


def score_model(counts, answered, difficulties, n_trials: int, guessing, difficulty_draws=None,
                prob: float = HDI_PROB, model: str = "", trials=None, prior=None) -> ModelScore:
    """θ's posterior and the predicted full-benchmark accuracy of one model that answered some items.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
        Correct trials on the answered items.
    answered : array_like of int, shape (n,)
        Their indices among the benchmark's N items (distinct).
    difficulties : ndarray, shape (N,)
        Every benchmark item's difficulty (plugged in when ``difficulty_draws`` is None).
    guessing : ndarray, shape (N,)
    difficulty_draws : ndarray, shape (S, N), optional
        Posterior draws of the difficulties: θ's posterior is then the mixture over draws of
        p(θ | y, b⁽ˢ⁾) (the difficulties are not updated by the new model's answers, as when they
        are held fixed), and the prediction uses each draw's difficulties for the unanswered items.
    trials : array_like of int, shape (n,), optional
        Trials of each answered item (1 … K) when they differ (K per cell); default K for every item. An
        answered item then counts y_i / T_i towards the predicted accuracy, and the observed accuracy is
        Σ y / Σ T.
    prior : (m, s), optional
        θ ~ Normal(m, s) in place of the paper's N(0, 1).
    """
    y = np.asarray(counts, dtype=float)
    idx = np.asarray(answered, dtype=np.int64)
    g = np.asarray(guessing, dtype=float)
    rest = np.setdiff1d(np.arange(g.size), idx)
    draws = np.asarray(difficulties, dtype=float)[None, :] if difficulty_draws is None else difficulty_draws
    t = np.full(idx.size, float(n_trials)) if trials is None else np.asarray(trials, dtype=float)
    solved = float((y / t).sum()) if idx.size else 0.0
    observed = float(y.sum() / t.sum()) if idx.size else float("nan")
    k = n_trials
    if trials is not None and np.any(t != n_trials):  # K per cell: the same posterior from single trials
        cell, y = bernoulli_cells(counts, trials)
        idx, k = idx[cell], 1
    grid = grid_for(idx.size, k, prior=prior)
    if grid.size > DIRECT_NODES:  # one fine grid over every draw's window, so the posteriors mix
        windows = [mass_window(y, draw[idx], k, np.broadcast_to(g[idx], idx.shape), "model", prior) for draw in draws]
        grid = grid_for(idx.size, k, (min(w[0] for w in windows), max(w[1] for w in windows)), prior)
    components = [(ability_posterior(y, draw[idx], k, g[idx], grid, prior), draw[rest], g[rest]) for draw in draws]
    posterior = components[0][0] if len(components) == 1 else GridPosterior.mixture([c[0] for c in components])
    low, high = posterior.hdi(prob)
    prediction = predict_accuracy(components, solved, g.size, n_trials, prob)
    idx = np.asarray(answered, dtype=np.int64)
    return ModelScore(model, posterior.mean, posterior.sd, low, high, int(idx.size), observed,
                      prediction.mean, prediction.low, prediction.high)


@dataclass(frozen=True)
class ItemCalibration:
    """One item placed on a fixed ability scale (a row of ``calibrate_items.py``'s output).

    ``z`` is (b_mean − b_min)/(b_max − b_min) on a reference benchmark's min–max scale, NaN without one.
    """

    item: str
    b_mean: float
    b_sd: float
    b_hdi_low: float
    b_hdi_high: float
    z: float

    def row(self) -> list:
        return [getattr(self, name) for name in CALIBRATION_COLUMNS]


def calibrate_item(counts, abilities, n_trials: int, guessing: float = 0.0, reference=None,
                   prob: float = HDI_PROB, item: str = "", trials=None, prior=None) -> ItemCalibration:
    """b's posterior for one item given fixed abilities (BenchFill's online calibration, with an HDI).

    ``reference`` is ``(b_min, b_max)`` of the benchmark whose normalized axis ``z`` is on. ``trials`` (one per
    model, 0 = the model did not answer) gives K per cell: the masked likelihood (absent models drop out).
    ``prior`` = (m, s): b ~ Normal(m, s) in place of the paper's N(0, 1).
    """
    if trials is not None:
        t = np.asarray(trials, dtype=np.int64)
        present = t > 0
        counts, abilities, t = np.asarray(counts)[present], np.asarray(abilities, dtype=float)[present], t[present]
        if np.any(t != n_trials):  # K per cell: the same posterior from single trials
            cell, counts = bernoulli_cells(counts, t)
            abilities, n_trials = abilities[cell], 1
    posterior = difficulty_posterior(counts, abilities, n_trials, guessing, prior)
    low, high = posterior.hdi(prob)
    z = float("nan") if reference is None else (posterior.mean - reference[0]) / (reference[1] - reference[0])
    return ItemCalibration(item, posterior.mean, posterior.sd, low, high, z)
