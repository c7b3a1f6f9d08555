"""Calibrated intervals for DDM, Max Gap and the Top-k Gap Sum: test inversion over a family of worlds,
simulated at the user's own fit (issue 29; docs/gap_noise.md, "Calibrated intervals").

The paper reports the plug-in value T̂ = T(b̂): the metric (Table 1) of the posterior-mean difficulties b̂.
Noise moves it (it fills gaps, it makes a staircase at K = 1), by an amount that depends on the unknown true
difficulties, so no interval computed from the posterior alone covers the true T(b) at its stated rate
(docs/gap_noise.md). This module builds one that does, by simulation at the fit itself:

1. **Worlds.** A family W of candidate populations of true difficulties (:mod:`.calibrated_worlds`), each placed at the
   fit's location and scale (the posterior means' mean; √(var b̂ + mean b_sd²), the law of total variance):
   the fit's own deshrunk means and deformations of them where the data may not tell them apart (emptier
   widest gaps, closed gaps, flatter, more clustered), a posterior draw, and generic shapes (normal, uniform,
   skewed either way, two clusters, a uniform with an empty band of 10, 20 or 30 % of its range).
2. **Replications.** For every world w and replication r: true difficulties b_wr, counts
   Y ~ Binomial(K_mi, σ(θ̂_m − b_wr,i)) with the fit's own abilities θ̂, its K per cell and its holes (K = 0),
   and the estimate b̂* = E[b | θ̂, Y] under the paper's N(0, 1) prior (under ``fit --prior hierarchical``,
   N(μ_b, σ_b) at their posterior means); the error e_wr = T(b̂*) − T(b_wr) and
   the simulated plug-in T(b̂*).
3. **Test inversion.** World w is *consistent* with the data for metric T when the observed plug-in lies
   within its simulated plug-ins' range widened by half their sd (about ±3 sd). Its pivotal interval is
   [T̂ − q_hi(e_w), T̂ − q_lo(e_w)] with q the central ``probability`` quantiles of its errors. The calibrated
   interval is the hull of the consistent worlds' intervals (all worlds' when none is consistent, and it says
   so), clipped to the metric's range. Its width is reported beside ``known_world_width``, the median width
   of those worlds' own intervals: what the interval would need if the world were known.

The inner estimator is exact for the model with the abilities held at θ̂: with θ fixed, an item's likelihood
depends on its counts only through its column sum s_i = Σ_m Y_mi (log-likelihood s_i·(−b) − Σ_m K_mi
softplus(θ_m − b) + const), so E[b | θ̂, Y] is a function of (s_i, the item's trials column), tabulated once by
quadrature on the grid of :mod:`benchmeasure.irt.routes.collapsed.quadrature`. A replication costs one draw of
M × n counts.
Whether this cheaper inner fit (no ability uncertainty) changes the coverage is measured against the full
NUTS fit by ``bench/bench_calibrated_intervals.py``.

Binomial observations without a guessing floor only; :func:`unsupported` says why otherwise.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

from benchmeasure.analyses.calibrated_worlds import WORLDS, Worlds
from benchmeasure.analyses.posterior_metrics import metric_draws, sorted_unit_metrics
from benchmeasure.core.calibrated_text import true_estimate
from benchmeasure.core.metrics import plugin_values

log = logging.getLogger(__name__)

#: the largest value each metric can take (the range an interval is clipped to, and "spans most" of)
METRIC_RANGE = {"ddm": 0.5, "max_gap": 1.0}
DEFAULT_REPS = 64
#: fixed draws of true difficulties per random world (a world's interval is for one fixed truth, as the user's is)
REALIZATIONS = 3
DEFAULT_BUDGET_S = 60.0
MIN_REPS = 16
#: how far beyond a world's simulated plug-ins the observed one may lie, in their sd, for the world to be kept
ACCEPT_PAD_SD = 0.5
#: a calibrated interval at least this share of the metric's range "spans most of it"
SPANS_MOST = 0.5
#: table the inner estimator in full when its entries number at most this many times the items; above that (many
#: distinct trials columns: random holes) its entries are computed when a data set first needs them
TABLE_FACTOR = 8
#: the most entries a lazily filled table may hold (8 bytes each); beyond it every call computes its means afresh
LAZY_TABLE_MAX = 50_000_000


def unsupported(observation: str = "binomial", guessing=0.0) -> str | None:
    """Why the calibration cannot describe a fit with these settings (None when it can)."""
    if observation != "binomial":
        return (f"the fit's observation model is {observation}; the calibration simulates binomial counts "
                "(a beta-binomial calibration is not built)")
    if np.any(np.asarray(guessing, dtype=float) > 0):
        return "the fit has a guessing floor; the calibration simulates the 1PL without one"
    return None


# ----------------------------------------------------------------------------------------------------------
# the inner estimator: E[b | θ̂, Y] as a function of the column sum and the item's trials column


class PosteriorMeans:
    """E[b_i | θ, Y] under b_i ~ N(0, prior_sd²) (the paper's: 1), Y_mi ~ Binomial(K_mi, σ(θ_m − b_i)), from the
    column sums alone."""

    def __init__(self, theta, trials, prior_sd: float = 1.0, prior_mean: float = 0.0):
        from benchmeasure.irt.routes.collapsed.quadrature import make_grid

        self.theta = np.asarray(theta, dtype=float)
        self.trials = np.asarray(trials, dtype=np.int64)
        m, n = self.trials.shape
        grid = make_grid(m, int(max(self.trials.max(), 1)))
        self.nodes = grid.nodes
        log_weights = grid.log_weights + 0.5 * self.nodes ** 2 * (1.0 - prior_sd ** -2.0)
        if prior_mean:   # b ~ N(prior_mean, prior_sd²): the hierarchical prior at its hyperparameters' means
            log_weights = log_weights + (self.nodes * prior_mean - 0.5 * prior_mean ** 2) / prior_sd ** 2
        softplus = np.logaddexp(0.0, self.theta[:, None] - self.nodes[None, :])      # (M, G)
        patterns, self.pattern_of = np.unique(self.trials, axis=1, return_inverse=True)
        self.pattern_of = self.pattern_of.reshape(-1)
        self.base = log_weights[None, :] - patterns.T.astype(float) @ softplus  # (P, G)
        sizes = patterns.sum(axis=0) + 1
        self.offset = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.tabled = int(sizes.sum()) <= TABLE_FACTOR * n
        # random holes make about one trials column per item: then only the (column, sum) entries the simulated
        # data sets reach (a few sds around each item's expected sum) are computed, each once, when first needed
        self.lazy = not self.tabled and int(sizes.sum()) <= LAZY_TABLE_MAX
        if self.tabled:
            self.table = np.concatenate([self._means(self.base[p], np.arange(sizes[p]))
                                         for p in range(len(sizes))])
        elif self.lazy:
            self.table = np.full(int(sizes.sum()), np.nan)
            self._lock = threading.Lock()

    def _lazy(self, sums) -> np.ndarray:
        where = self.offset[self.pattern_of] + sums
        missing = np.unique(where[np.isnan(self.table[where])])
        if missing.size:
            from benchmeasure.analyses.kernels import quadrature_means

            pattern = np.searchsorted(self.offset, missing, side="right") - 1
            values = np.empty(missing.size)
            # entry by entry, so an entry's value does not depend on which entries were missing with it, nor on
            # the order the worlds ran in
            quadrature_means(self.base, self.nodes, pattern, (missing - self.offset[pattern]).astype(float), values)
            self.table[missing] = values
        return self.table[where]

    def _means(self, base, sums):
        log_post = base - np.outer(sums, self.nodes)
        log_post -= log_post.max(axis=1, keepdims=True)
        w = np.exp(log_post)
        return (w @ self.nodes) / w.sum(axis=1)

    def __call__(self, sums) -> np.ndarray:
        """The means for column sums of shape (n,), or (R, n) for R data sets at once."""
        sums = np.asarray(sums, dtype=np.int64)
        if self.tabled:
            return self.table[self.offset[self.pattern_of] + sums]
        if self.lazy:
            with self._lock:   # worlds simulated on several threads fill the one table
                return self._lazy(sums)
        if sums.ndim == 2:
            return np.stack([self(row) for row in sums])
        out = np.empty(sums.size)
        for start in range(0, sums.size, 2048):
            rows = slice(start, start + 2048)
            log_post = self.base[self.pattern_of[rows]] - sums[rows, None] * self.nodes[None, :]
            log_post -= log_post.max(axis=1, keepdims=True)
            w = np.exp(log_post)
            out[rows] = (w @ self.nodes) / w.sum(axis=1)
        return out


#: cells drawn at once when simulating many data sets (memory: 8 bytes each)
CHUNK_CELLS = 4_000_000


def simulate_sums(b, theta, trials, rng, reps: int | None = None) -> np.ndarray:
    """Column sums of Y ~ Binomial(K_mi, σ(θ_m − b_i)): shape (n,), or (reps, n) for ``reps`` data sets (the
    probabilities computed once; the data sets by inverting each column's CDF or trial by trial in a compiled
    kernel, whichever needs fewer steps)."""
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - np.asarray(b)[None, :])))
    present = trials > 0
    one = trials.max() == 1
    if reps is None:
        return ((rng.random(p.shape) < p) & present).sum(axis=0) if one else rng.binomial(trials, p).sum(axis=0)
    out = np.empty((reps, p.shape[1]), dtype=np.int64)
    if int(trials.sum(axis=0).max()) <= 2 * reps:
        from benchmeasure.analyses.kernels import sums_by_inverse_cdf

        # each item's column sum from its own distribution: the PMF once (S²/2 steps for S trials in the column),
        # then one uniform per data set, against S uniforms per data set cell by cell
        t = np.ascontiguousarray(trials)
        step = max(1, CHUNK_CELLS // p.shape[1])
        for start in range(0, reps, step):
            r = min(step, reps - start)
            sums_by_inverse_cdf(p, t, rng.random((r, p.shape[1])), out[start:start + r])
        return out
    from benchmeasure.analyses.kernels import binomial_sums

    # the trials of the present cells by item, each a 32-bit uniform from a stream seeded by ``rng``; items in
    # blocks of about CHUNK_CELLS cells, so the index arrays stay bounded whatever the matrix's size
    step = max(1, CHUNK_CELLS // max(p.shape[0], 1))
    for lo in range(0, p.shape[1], step):
        hi = min(lo + step, p.shape[1])
        items, models = np.nonzero(trials[:, lo:hi].T > 0)
        cell_trials = trials[models, items + lo]
        threshold = np.repeat(np.rint(p[models, items + lo] * 2.0 ** 32).astype(np.uint64), cell_trials)
        ptr = np.r_[0, np.cumsum(np.bincount(items, weights=cell_trials, minlength=hi - lo))].astype(np.int64)
        binomial_sums(threshold, ptr, np.uint64(rng.integers(2 ** 63)), out[:, lo:hi])
    return out


# ----------------------------------------------------------------------------------------------------------
# the calibration


def _metrics(b_rows, top_k: int) -> dict:
    """Table 1's metrics of each row; a row whose values are all equal gives NaN (normalization undefined)."""
    b = np.atleast_2d(np.asarray(b_rows, dtype=float))
    flat = b.max(axis=1) <= b.min(axis=1)
    safe = np.where(flat[:, None], np.arange(b.shape[1], dtype=float)[None, :], b)
    out = metric_draws(safe, top_k)
    for v in out.values():
        v[flat] = np.nan
    return out


def unit_quantiles(b_rows) -> np.ndarray:
    """Each row min-max normalized and sorted: the empirical quantile function the metrics are read from."""
    b = np.sort(np.atleast_2d(np.asarray(b_rows, dtype=float)), axis=1)   # normalizing keeps the order
    low, high = b[:, :1], b[:, -1:]
    return (b - low) / np.where(high > low, high - low, 1.0)


def _metrics_and_shapes(b_rows, top_k: int) -> tuple[dict, np.ndarray]:
    """(:func:`_metrics`, :func:`unit_quantiles`) of the same rows from one sort."""
    z = unit_quantiles(b_rows)
    flat = z[:, -1] <= 0.0
    metrics = sorted_unit_metrics(np.where(flat[:, None], (np.arange(z.shape[1]) + 0.5) / z.shape[1], z), top_k)
    for v in metrics.values():
        v[flat] = np.nan
    return metrics, z


def shape_consistent(observed_shape, shape: dict) -> bool:
    """Whether the observed quantile function is as close to the world's mean one (1-Wasserstein distance) as
    the world's own simulated ones are, give or take half their sd."""
    own = np.abs(shape["rows"] - shape["mean"][None, :]).mean(axis=1)
    distance = float(np.abs(observed_shape - shape["mean"]).mean())
    return bool(distance <= own.max() + ACCEPT_PAD_SD * own.std() + 1e-9)


def simulate_world(b, estimator: PosteriorMeans, reps: int, rng, top_k: int) -> dict:
    """Per metric, the simulated plug-ins and errors (plug-in − truth) of ``reps`` data sets drawn at one fixed
    vector of true difficulties ``b``."""
    truth = {m: float(v[0]) for m, v in _metrics(b, top_k).items()}
    estimates = estimator(simulate_sums(b, estimator.theta, estimator.trials, rng, reps))
    est_m, shapes = _metrics_and_shapes(estimates, top_k)
    out = {"shape": {"mean": shapes.mean(axis=0), "rows": shapes}}
    for m, v in est_m.items():
        keep = np.isfinite(v)
        out[m] = {"plugin": v[keep], "error": v[keep] - truth[m], "truth": truth[m]}
    return out


def _consistent(observed: float, plugins: np.ndarray) -> bool:
    pad = ACCEPT_PAD_SD * (plugins.std() if plugins.size > 1 else 0.0) + 1e-9
    return bool(plugins.min() - pad <= observed <= plugins.max() + pad)


def invert(observed: dict, simulated: dict, probability: float, observed_shape=None) -> dict:
    """Step 3 of the module docstring, per metric: the hull of the consistent worlds' pivotal intervals."""
    tail = (1.0 - probability) / 2.0
    # a world is kept for a metric when it reproduces the observed quantile function and that metric (requiring
    # every metric at once narrows the intervals but measurably loses coverage: docs/gap_noise.md)
    shape_ok = {w: observed_shape is None or shape_consistent(observed_shape, sim["shape"])
                for w, sim in simulated.items()}
    out = {}
    for m, value in observed.items():
        top = METRIC_RANGE.get(m, 1.0)
        rows = {}
        for w, sim in simulated.items():
            s = sim[m]
            if s["error"].size < 2:
                continue
            q_lo, q_hi = np.quantile(s["error"], [tail, 1.0 - tail])
            rows[w] = {"low": value - q_hi, "high": value - q_lo, "width": q_hi - q_lo,
                       "consistent": shape_ok[w] and _consistent(value, s["plugin"]),
                       "bias": float(s["error"].mean())}
        kept = [w for w, r in rows.items() if r["consistent"]]
        used = kept or list(rows)
        low = max(0.0, min(rows[w]["low"] for w in used))
        high = min(top, max(rows[w]["high"] for w in used))
        low = min(low, high)
        known = float(np.median([rows[w]["width"] for w in used]))
        out[m] = {"inner_plugin": value, "low": float(low), "high": float(high), "width": float(high - low),
                  "estimate": true_estimate(value, [rows[w]["bias"] for w in used], low, high),
                  "known_world_width": known, "probability": probability,
                  "consistent_worlds": kept, "no_world_consistent": not kept,
                  "spans_most": bool(high - low >= SPANS_MOST * top),
                  "worlds": {w: {k: float(v) if not isinstance(v, bool) else v for k, v in r.items()}
                             for w, r in rows.items()}}
    return out


def calibrate(theta, trials, counts, b_mean, b_sd, *, b_draws=None, top_k: int = 5, probability: float = 0.94,
              reps: int = DEFAULT_REPS, budget_s: float = DEFAULT_BUDGET_S, seed: int = 0,
              worlds=None, should_stop=None, prior: tuple | None = None) -> dict:
    """Calibrated intervals of DDM, Max Gap and the Top-k Gap Sum at one fit (module docstring).

    ``theta`` (M,) the fit's ability means, ``trials`` (M, n) trials per cell (0 = absent), ``counts`` (M, n) the
    observed counts (0 where absent), ``b_mean``/``b_sd``
    (n,) the difficulty means and sds, ``b_draws`` (D, n) optional posterior draws (the ``posterior_draw``
    world). ``reps`` replications per world, fewer when a first world shows that ``budget_s`` would be
    exceeded (never fewer than :data:`MIN_REPS`). Each world has its own seed, ``[seed, world index]``, so the
    worlds after the first (which is timed alone for that budget) run on up to two threads with the same result.

    Returns ``{"metrics": {name: interval}, "settings": {...}}``.
    """
    from concurrent.futures import ThreadPoolExecutor

    from benchmeasure.irt.diagnostics import _workers

    start = time.perf_counter()
    theta = np.asarray(theta, dtype=float)
    trials = np.asarray(trials, dtype=np.int64)
    b_mean = np.asarray(b_mean, dtype=float)
    # the inner estimator's prior on b: the paper's N(0, 1), or (mean, sd) of another prior (the hierarchical prior at
    # its hyperparameters' posterior means)
    estimator = PosteriorMeans(theta, trials) if prior is None else PosteriorMeans(theta, trials, prior[1], prior[0])
    sums = np.where(trials > 0, np.asarray(counts), 0).sum(axis=0)
    observed_b = estimator(sums)
    # the items' means under wider priors: the extremes the N(0, 1) prior pulls in are where the data say least
    family = Worlds(b_mean, b_sd, b_draws, raw={f"wide_prior{sd}": PosteriorMeans(theta, trials, prior_sd=sd)(sums)
                                                for sd in (3, 10)})
    names = list(worlds or family.names)
    fixed = set(family.fixed) | set(family.raw)
    instances = [(name, r) for name in names for r in range(1 if name in fixed else REALIZATIONS)]
    observed = {m: float(v[0]) for m, v in _metrics(observed_b, top_k).items()}
    simulated, used_reps = {}, reps

    def world(index: int, n_reps: int) -> tuple:
        # each world draws from its own generator, so the worlds may run on any thread in any order and give
        # the same result (NumPy's random fills, comparisons and sums release the GIL)
        name, realization = instances[index]
        rng = np.random.default_rng([seed, WORLDS.index(name), realization])
        label = name if name in fixed else f"{name}#{realization + 1}"
        return label, simulate_world(family.truth(name, rng), estimator, n_reps, rng, top_k)

    def progress(index: int) -> None:
        if (index + 1) % 5 == 0 or index + 1 == len(instances):
            log.info("calibration: %d of %d worlds simulated (%.1f s)", index + 1, len(instances),
                     time.perf_counter() - start)

    if should_stop is not None:
        should_stop()
    tic = time.perf_counter()
    label, first = world(0, used_reps)   # timed alone: it sets the replications every other world gets
    simulated[label] = first
    if budget_s:
        per_rep = (time.perf_counter() - tic) / used_reps
        affordable = int((budget_s - (time.perf_counter() - start)) / max(per_rep * len(instances), 1e-9))
        if affordable < used_reps:
            used_reps = max(MIN_REPS, affordable)
            log.warning("calibration: %d replications per world instead of %d to stay within %.0f s",
                        used_reps, reps, budget_s)
    progress(0)
    pool = ThreadPoolExecutor(max_workers=_workers())
    try:
        futures = [pool.submit(world, index, used_reps) for index in range(1, len(instances))]
        for index, future in enumerate(futures, start=1):
            if should_stop is not None:
                should_stop()
            label, result = future.result()
            simulated[label] = result
            progress(index)
    finally:   # a stop (Ctrl-C, should_stop) leaves at once: the worlds not yet started are dropped
        pool.shutdown(wait=False, cancel_futures=True)
    metrics = invert(observed, simulated, probability, unit_quantiles(observed_b)[0])
    for m, v in plugin_values(b_mean, top_k).items():  # the paper's value (the fit's pooled posterior means)
        metrics[m] = {"plugin": v, **metrics[m]}
    return {"metrics": metrics,
            "settings": {"worlds": names, "realizations": REALIZATIONS, "reps": used_reps, "reps_first_world": reps,
                         "seed": seed,
                         "probability": probability, "top_k": top_k, "models": int(theta.size),
                         "items": int(b_mean.size), "location": family.location, "scale": family.scale,
                         "holes": int((trials == 0).sum()), "max_trials": int(trials.max()),
                         "inner_fit": "E[b | abilities held at the fit's means, counts] by quadrature",
                         **({} if prior is None else {"inner_prior": {"mean": float(prior[0]), "sd": float(prior[1])}}),
                         "consistency": f"observed plug-in within the world's simulated plug-ins ± "
                                        f"{ACCEPT_PAD_SD:g} sd",
                         "seconds": round(time.perf_counter() - start, 3)}}


def calibrate_fit(result, matrix, *, guessing=0.0, observation: str = "binomial", anchored: bool = False,
                  budget_s: float = DEFAULT_BUDGET_S, reps: int = DEFAULT_REPS, seed: int = 0, top_k: int = 5) -> dict:
    """:func:`calibrate` at a finished NUTS fit (``benchmeasure fit`` runs it), or ``{"refused": why}``."""
    why = unsupported(observation, guessing)
    if why is None and anchored:
        why = "an anchored fit's difficulties are partly fixed; the calibration simulates free difficulties"
    if why is None and getattr(result, "method", "nuts") != "nuts":
        why = "a MAP fit has no posterior sds to place the worlds with"
    if why is None and len(matrix.items) < 3:
        why = f"{len(matrix.items)} items; the metrics need at least 3"
    if why is not None:
        return {"refused": why}
    trials = matrix.cell_trials()
    trials = np.broadcast_to(trials, matrix.counts.shape) if np.ndim(trials) == 0 else trials
    draws = result.draws("b", dtype=None)
    few = draws[np.linspace(0, draws.shape[0] - 1, 3 * REALIZATIONS).astype(int)]
    hyper = (result.diagnostics.get("prior") or {}).get("hyperparameters")
    prior = None if not hyper else (hyper["mu_b"]["mean"], hyper["sigma_b"]["mean"])
    record = calibrate(result.theta_mean, trials, matrix.counts, result.b_mean, result.b_sd, b_draws=few,
                       top_k=top_k, reps=reps, budget_s=budget_s, seed=seed, prior=prior)
    if (result.diagnostics.get("max_r_hat") or 0) > 1.01:
        record["note"] = "the fit did not converge (R-hat > 1.01); the intervals inherit its abilities"
    return record
