"""The Growing Pains protocol: benchmarks arrive in order and join one scale through anchors.

For each of ``splits`` random splits, a share of the models (``holdout``, 25 %) is held out; the others
calibrate. Benchmarks arrive in ``order``; at step t:

1. the new benchmark's items are calibrated on the calibration models with every earlier item fixed
   (:func:`~.calibration.fit_items`, fixed-parameter calibration), and — for the concurrent method — every item
   seen so far is refit from the data (warm start);
2. N anchors of the new benchmark are chosen for each N (stratified by the fixed difficulties,
   :func:`benchmeasure.analyses.anchors.select_anchors`), among items some calibration model answered; earlier
   benchmarks keep theirs;
3. each held-out model answers only the anchors of the benchmarks seen so far, and its accuracy on each of them
   is predicted with an interval by every method: ``anchor_accuracy`` (raw), ``concurrent`` and ``fixed`` (one
   ability, grid posterior), ``fixed_correlated`` (one ability per benchmark, correlated; Laplace; Σ by empirical
   Bayes), ``blended`` (the raw anchor accuracy and ``fixed_correlated`` weighted by λ, chosen by
   cross-validation over the calibration models, :mod:`.chain_blend`), and on request ``lkj_correlated`` (the LKJ
   model's posterior, :mod:`.chain_lkj`).

Every row of the result is one (split, step, benchmark, model, method, N) prediction with its observed
accuracy (over the model's present cells of the benchmark).

``prior="hierarchical"`` calibrates (steps 1, and :func:`calibrate_suite`) under the hierarchical prior of
:mod:`.hierarchical` (θ ~ Normal(0, σ_θ), b ~ Normal(μ_b,k, σ_b,k) per benchmark, the hyperparameters estimated with
the difficulties), and puts the held-out models' abilities on that module's wider grid; the predictions' ability
priors are the calibration models' (method of moments) under either prior. ``lkj_correlated`` fits the paper's
b ~ Normal(0, 1) (its collapsed route), so the command refuses it with the hierarchical prior.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

import numpy as np

from benchmeasure.analyses.anchors import select_anchors
from benchmeasure.suite.calibration import GRID, fit_items
from benchmeasure.suite.chain_blend import CrossFits, blended_prediction
from benchmeasure.suite.predict import (
    ability_covariance,
    anchor_accuracy_interval,
    correlated_nodes,
    correlated_posterior,
    mixture_prediction,
    one_ability_nodes,
)
from benchmeasure.suite.reader import Suite

log = logging.getLogger(__name__)

METHODS = ("anchor_accuracy", "concurrent", "fixed", "fixed_correlated", "blended", "lkj_correlated")
COLUMNS = ("split", "step", "benchmark", "model", "method", "n_anchors", "predicted", "low", "high", "observed")


def split_models(n_models: int, holdout: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n_test = min(n_models - 2, max(1, round(holdout * n_models)))
    perm = rng.permutation(n_models)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def run_chain(suite: Suite, order: list, anchor_sizes: list, splits: int, seed: int, *, holdout: float = 0.25,
              level: float = 0.90, prior_sd: float = 3.0, lkj: dict | None = None, lkj_fits: list | None = None,
              skipped: list | None = None, prior: str = "paper", blend_log: list | None = None) -> list:
    """All predictions of the protocol, as a list of row tuples in :data:`COLUMNS` order.

    ``lkj`` (``{"steps": set of step numbers, "draws": per chain, "keep": draws used}``) adds the
    ``lkj_correlated`` method at those steps (:mod:`.chain_lkj`: a NUTS fit per split and step); each fit's
    diagnostics are appended to ``lkj_fits``.

    A benchmark's predictions at N anchors are made only where N anchors were chosen and at least one item is
    left to predict: with fewer answered items the anchors would be all of them (the "prediction" is the
    observation, labelled N when fewer were used). Each (split, step, benchmark, N, items available) left out so
    is appended to ``skipped``.

    With a ``blend_log`` list (``chain --blend``), ``blended`` refits the ``fixed`` chain on each of
    :data:`.chain_blend.FOLDS` folds of the calibration models (:class:`.chain_blend.CrossFits`); its weight λ, the
    number of calibration models it was chosen on and the interval's scale per (split, step, benchmark, N) are
    appended to ``blend_log`` as dicts. Without it (``None``) no fold is fitted and there are no ``blended`` rows.
    """
    rng = np.random.default_rng(seed)
    bench_items = {name: suite.benchmark_items(name) for name in order}
    counts, trials = suite.counts, suite.trials
    grid, calibrate = _calibration(prior, prior_sd, suite.item_benchmark)
    rows = []
    for split in range(splits):
        train, test = split_models(len(suite.models), holdout, rng)
        ctr, ttr = counts[train], trials[train]
        cte, tte = counts[test], trials[test]
        b_fixed = np.full(len(suite.items), np.nan)
        b_conc = np.full(len(suite.items), np.nan)
        anchors: dict = {n: {} for n in anchor_sizes}
        seen = np.zeros(0, dtype=np.int64)
        cross = CrossFits(len(train), len(suite.items), seed, split) if blend_log is not None else None
        start = time.perf_counter()
        for step, name in enumerate(order, 1):
            new = bench_items[name]
            seen = np.concatenate([seen, new])
            free = np.isin(seen, new)
            b_fixed[seen], it_f = calibrate(ctr[:, seen], ttr[:, seen], b_fixed[seen], free, seen)
            start_conc = np.where(np.isfinite(b_conc[seen]), b_conc[seen], b_fixed[seen])
            b_conc[seen], it_c = calibrate(ctr[:, seen], ttr[:, seen], start_conc, np.ones(seen.size, bool), seen)
            answered = new[ttr[:, new].sum(axis=0) > 0]
            for n in anchor_sizes:
                k = min(n, answered.size)
                if k == 0:  # no calibration model answered this benchmark in this split: nothing to anchor
                    anchors[n][name] = answered
                    continue
                pick = select_anchors(b_fixed[answered], k, "stratified", seed * 1_000_003 + split * 1009 + step)
                anchors[n][name] = answered[pick]
            names = order[:step]
            if cross is not None:
                cross.step(calibrate, ctr, ttr, seen, free, b_fixed, bench_items, names, grid, anchor_sizes,
                           seed * 1_000_003 + split * 1009 + step)
            mu, sigma = ability_covariance([ctr[:, bench_items[d]] for d in names],
                                           [ttr[:, bench_items[d]] for d in names],
                                           [b_fixed[bench_items[d]] for d in names], grid)
            population = {"fixed": ability_covariance([ctr[:, seen]], [ttr[:, seen]], [b_fixed[seen]], grid),
                          "concurrent": ability_covariance([ctr[:, seen]], [ttr[:, seen]], [b_conc[seen]], grid)}
            test_models = [suite.models[j] for j in test]
            for n in anchor_sizes:
                usable = [d for d in names if anchors[n][d].size == n and bench_items[d].size > n]
                if skipped is not None and name not in usable:
                    skipped.append((split, step, name, n, int(answered.size)))
                errors = cross.errors(names, n, bench_items, ctr, ttr) if usable and cross is not None else None
                rows.extend(_predict_step(split, step, names, n, anchors[n], bench_items, cte, tte, b_fixed,
                                          b_conc, mu, sigma, population, level, test_models, usable, grid,
                                          errors, blend_log))
            if lkj is not None and step in lkj["steps"]:
                rows.extend(_lkj_step(split, step, names, anchors, anchor_sizes, bench_items, ctr, ttr, cte, tte,
                                      len(suite.items), level, test_models, lkj, seed, lkj_fits))
            log.info("split %d/%d step %d/%d %s: %d items, EM %d (fixed) %d (concurrent) iterations, %.1f s",
                     split + 1, splits, step, len(order), name, new.size, it_f, it_c, time.perf_counter() - start)
    return rows


def _calibration(prior: str, prior_sd: float, item_benchmark: np.ndarray):
    """(the ability grid, ``calibrate(counts, trials, b_start, free, columns) -> (b, EM iterations)``) of a prior:
    the paper-prior EM (:func:`~.calibration.fit_items`, b ~ Normal(0, ``prior_sd``²)) or the hierarchical one
    (:func:`~.hierarchical.fit_items_hierarchical`, one (μ_b, σ_b) per benchmark of the columns)."""
    if prior == "paper":
        def calibrate(counts, trials, b_start, free, columns):
            b, _, iterations = fit_items(counts, trials, b_start, free, prior_sd=prior_sd)
            return b, iterations
        return GRID, calibrate
    from benchmeasure.suite.hierarchical import GRID as grid
    from benchmeasure.suite.hierarchical import fit_items_hierarchical

    def calibrate(counts, trials, b_start, free, columns):
        b, _, iterations, _ = fit_items_hierarchical(counts, trials, b_start, free, item_benchmark[columns])
        return b, iterations
    return grid, calibrate


def _predict_step(split, step, names, n, anchor_sets, bench_items, cte, tte, b_fixed, b_conc, mu, sigma, population,
                  level, test_models, usable, grid, errors, blend_log) -> list:
    all_anchors = np.concatenate([anchor_sets[d] for d in names])
    nodes = {method: one_ability_nodes(cte[:, all_anchors], tte[:, all_anchors], b[all_anchors],
                                       float(population[method][0][0]), float(np.sqrt(population[method][1][0, 0])),
                                       grid)
             for method, b in (("fixed", b_fixed), ("concurrent", b_conc))}
    joint = correlated_posterior([cte[:, anchor_sets[d]] for d in names], [tte[:, anchor_sets[d]] for d in names],
                                 [b_fixed[anchor_sets[d]] for d in names], mu, sigma)
    rows = []
    for d_index, d in enumerate(names):
        if d not in usable:
            continue
        items, chosen = bench_items[d], anchor_sets[d]
        rest = np.setdiff1d(items, chosen)
        total = tte[:, items].sum(axis=1)
        has = total > 0
        observed = np.where(has, cte[:, items].sum(axis=1) / np.maximum(total, 1), np.nan)
        a_correct, a_trials = cte[:, chosen].sum(axis=1), tte[:, chosen].sum(axis=1)
        results = {"anchor_accuracy": anchor_accuracy_interval(a_correct, a_trials, total, level)}
        for method, b in (("concurrent", b_conc), ("fixed", b_fixed)):
            results[method] = mixture_prediction(*nodes[method], b[rest], tte[:, rest].astype(float), a_correct,
                                                 total, level)
        corr_nodes = correlated_nodes(*joint, d_index)
        results["fixed_correlated"] = mixture_prediction(*corr_nodes, b_fixed[rest], tte[:, rest].astype(float),
                                                         a_correct, total, level)
        if errors is not None:
            results["blended"], chosen_by = blended_prediction(a_correct, a_trials, total,
                                                               results["fixed_correlated"][0], errors[d], level)
            blend_log.append({"split": split, "step": step, "benchmark": d, "n_anchors": n, **chosen_by})
        for method, (pred, low, high) in results.items():
            for j in np.flatnonzero(has & (a_trials > 0)):
                rows.append((split, step, d, test_models[j], method, n, float(pred[j]), float(low[j]),
                             float(high[j]), float(observed[j])))
    return rows


def _lkj_step(split, step, names, anchors, anchor_sizes, bench_items, ctr, ttr, cte, tte, n_items, level,
              test_models, lkj, seed, lkj_fits) -> list:
    """The ``lkj_correlated`` rows of one split and step (one NUTS fit, then every N)."""
    from benchmeasure.suite.chain_lkj import METHOD, lkj_posterior, lkj_predictions

    start = time.perf_counter()
    fit_seed = int(np.random.SeedSequence([seed, split, step]).generate_state(1)[0] % (2**31))
    post = lkj_posterior(ctr, ttr, bench_items, names, n_items, seed=fit_seed, draws=lkj["draws"], keep=lkj["keep"])
    rows = []
    for n in anchor_sizes:
        predictions = lkj_predictions(post, names, anchors[n], bench_items, cte, tte, level)
        for d in names:
            items, chosen = bench_items[d], anchors[n][d]
            if chosen.size != n or items.size <= n:  # as in run_chain: N anchors and an item left to predict
                continue
            total = tte[:, items].sum(axis=1)
            observed = np.where(total > 0, cte[:, items].sum(axis=1) / np.maximum(total, 1), np.nan)
            pred, low, high = predictions[d]
            for j in np.flatnonzero((total > 0) & (tte[:, chosen].sum(axis=1) > 0)):
                rows.append((split, step, d, test_models[j], METHOD, n, float(pred[j]), float(low[j]),
                             float(high[j]), float(observed[j])))
    d = post["diagnostics"]
    if lkj_fits is not None:
        lkj_fits.append({"split": split, "step": step, "max_r_hat": d["max_r_hat"], "min_ess_bulk": d["min_ess_bulk"],
                         "divergences": d["divergences"], "seconds": time.perf_counter() - start})
    log.info("split %d step %d: LKJ fit and predictions %.1f s (max R-hat %.3f, min bulk ESS %.0f)", split + 1,
             step, time.perf_counter() - start, d["max_r_hat"] or float("nan"), d["min_ess_bulk"] or float("nan"))
    return rows


def summarize(rows: list, anchor_sizes: list) -> list:
    """Per (N, method): MAE in points, mean Spearman ρ over (split, step, benchmark) groups of ≥ 3 held-out
    models, interval coverage — each with its standard error over splits. Returns dicts."""
    from scipy.stats import spearmanr

    out = []
    bench_code: dict = {}
    data = np.array([(r[0], r[1], bench_code.setdefault(r[2], len(bench_code)), r[5], r[6], r[7], r[8], r[9])
                     for r in rows], dtype=float)
    methods = np.array([r[4] for r in rows])
    for n in anchor_sizes:
        for method in METHODS:
            sel = (data[:, 3] == n) & (methods == method)
            part = data[sel]
            if not part.size:
                continue
            split_mae, split_cov, split_rho = [], [], []
            for s in np.unique(part[:, 0]):
                ps = part[part[:, 0] == s]
                split_mae.append(np.mean(np.abs(ps[:, 4] - ps[:, 7])) * 100)
                split_cov.append(np.mean((ps[:, 5] <= ps[:, 7]) & (ps[:, 7] <= ps[:, 6])))
                rhos = []
                for key in {(r[1], r[2]) for r in ps}:
                    g = ps[(ps[:, 1] == key[0]) & (ps[:, 2] == key[1])]
                    if len(g) >= 3 and np.ptp(g[:, 4]) > 0 and np.ptp(g[:, 7]) > 0:
                        rhos.append(spearmanr(g[:, 4], g[:, 7]).statistic)
                if rhos:
                    split_rho.append(float(np.mean(rhos)))
            out.append({"n_anchors": int(n), "method": method, "rows": int(sel.sum()),
                        **_mean_se("mae_points", split_mae), **_mean_se("spearman", split_rho),
                        **_mean_se("coverage", split_cov)})
    return out


def _mean_se(name: str, values: list) -> dict:
    values = np.asarray(values, dtype=float)
    if not values.size:
        return {name: None, f"{name}_se": None}
    se = float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else None
    return {name: float(values.mean()), f"{name}_se": se}


def calibrate_suite(suite: Suite, order: list, prior_sd: float = 3.0, prior: str = "paper"):
    """Every item of the benchmarks in ``order`` calibrated on every model at once (one scale); NaN elsewhere.
    Returns (b, the hierarchical prior's hyperparameters as a record, or None under the paper's)."""
    items = np.concatenate([suite.benchmark_items(name) for name in order])
    b = np.full(len(suite.items), np.nan)
    if prior == "paper":
        b[items], _, _ = fit_items(suite.counts[:, items], suite.trials[:, items], np.zeros(items.size),
                                   np.ones(items.size, dtype=bool), prior_sd=prior_sd)
        return b, None
    from benchmeasure.suite.hierarchical import fit_items_hierarchical

    b[items], _, iterations, hyper = fit_items_hierarchical(suite.counts[:, items], suite.trials[:, items],
                                                            np.zeros(items.size), np.ones(items.size, dtype=bool),
                                                            suite.item_benchmark[items])
    return b, {**hyper.record(suite.benchmarks), "em_iterations": iterations}


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """One BLAS thread: the products here are small, and on a shared machine extra threads only wait
    (a 22 × 6,000 by 6,000 × 61 product took 0.05 s on one thread and 0.6 s on two, 2 cores under load)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
