"""DDM, Max Gap and Top-k Gap Sum: the paper's value, labelled, beside a noise-aware estimate and interval.

Three numbers are reported for each metric (docs/gap_noise.md explains why they differ):

* ``plugin`` — the paper's value: the metric of the posterior-mean difficulties (tied items' draws
  pooled, :mod:`benchmeasure.analyses.plugin`), min–max normalized. It is kept everywhere; it is *not* a
  posterior summary, and noise biases it: it fills gaps (Max Gap too small) and, at one trial per cell, makes a
  staircase. The interval to quote beside it is the calibrated one, for the true metric, with its estimate.
* ``per_draw_min_max`` — the metric of every posterior draw, each draw normalized by its own
  min and max (what this project reported before). A draw's extremes carry the noise of
  the two most extreme items, so its range is wider than the posterior means' range (on
  ChemBench 7.67 against 4.66 units of b); that widening moves DDM, and is why the
  plug-in value can lie outside this interval.
* ``per_draw_fixed_range`` — the same draws normalized by one fixed reference range, the
  posterior means' min and max: the spread of the metric from the noise of the items, with
  the scale held fixed.
* ``estimate``, ``low``, ``high`` — the noise-aware estimator: the difficulties redrawn under
  a population density learned from the benchmark (:mod:`benchmeasure.irt.deconvolution`)
  instead of the Normal(0, 1) prior, with that density's uncertainty (Bayesian bootstrap),
  each draw min–max normalized; ``estimate`` is the mean over draws and ``low``/``high`` the
  central interval. Its bias and coverage are measured by ``bench/bench_gap_calibration.py``.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.analyses.plugin import pooled_moments
from benchmeasure.analyses.posterior_metrics import metric_draws, summarize_draws
from benchmeasure.core.metrics import plugin_values
from benchmeasure.core.resolution import benchmark_resolution, gap_table
from benchmeasure.irt.deconvolution import population_draws

METRIC_NOTE = {
    "plugin": "the paper's value: metric of the posterior-mean difficulties (min-max normalized)",
    "per_draw_min_max": "each posterior draw normalized by its own min and max",
    "per_draw_fixed_range": "each posterior draw normalized by the posterior means' min and max",
    "estimate": "noise-aware: draws under a population of difficulties learned from the data "
                "(deconvolution, Bayesian bootstrap), each min-max normalized",
}


def fixed_range_draws(b_draws, low: float, high: float, top_k: int = 5) -> dict:
    """The metrics of each draw normalized by one fixed range [low, high] (gaps between items only)."""
    b = np.asarray(b_draws, dtype=float)
    z = np.sort((b - low) / (high - low), axis=1)
    n = z.shape[1]
    grid = (np.arange(n) + 0.5) / n
    gaps = np.sort(np.diff(z, axis=1), axis=1)[:, ::-1]
    return {"ddm": np.abs(z - grid).mean(axis=1), "max_gap": gaps[:, 0],
            f"top{top_k}_gap_sum": gaps[:, :top_k].sum(axis=1)}


#: which quantity each value and interval of a metric's entry is for (``for`` in the JSON record)
INTERVAL_FOR = {
    "plugin": "the paper's value: the metric of the posterior means, tied items pooled (not the true value)",
    "estimate, low, high": "the true metric: the noise-aware estimate and its interval",
    "calibrated": "the true metric: the calibrated estimate and interval (the one to quote beside the plug-in)",
    "per_draw_min_max": "the per-draw metric, each draw normalized by its own min and max (not the true value)",
    "per_draw_fixed_range": "the per-draw metric, each draw normalized by the posterior means' min and max "
                            "(not the true value)",
}


K1_REFUSAL = ("not reported: the fit has one trial per cell (K = 1), where the noise-aware estimator is biased "
              "(bench/bench_gap_calibration.py: DDM +0.04 to +0.11, Max Gap up to +0.18 at n = 40); the plug-in "
              "and the per-draw intervals are reported, and each gap's resolution says whether it can be trusted")


def n_trials_beside(posterior_path) -> int | None:
    """K from the ``diagnostics.json`` of the fit folder holding ``posterior_path`` (None when there is none)."""
    from benchmeasure.core.difficulty_file import fit_n_trials

    return fit_n_trials(posterior_path)


#: draws larger than this in magnitude are rescaled before any sum (see :func:`report`)
HUGE = 1e100


def report(items, b_draws, *, top_k: int = 5, probability: float = 0.94, seed: int = 0,
           replicates: int = 200, n_trials: int | None = None, posterior_path=None) -> dict:
    """Everything ``posterior-metrics`` prints: per metric the four summaries, plus the resolution and gaps.

    The plug-in, the fixed range and the gaps use the posterior means and sds of
    :func:`benchmeasure.analyses.plugin.pooled_moments`: tied items' draws pooled, as ``fit`` pools them, when the
    fit folder holding ``posterior_path`` says which items are tied (``means`` in the result says which).

    With ``n_trials == 1`` the noise-aware ``estimate``/``low``/``high`` are None and ``refused``
    says why (:data:`K1_REFUSAL`).

    Returns ``{"metrics": {name: {...}}, "resolution": float, "resolution_detail": {...}, "gaps": [...],
    "population": {...}}``.
    """
    b = np.asarray(b_draws, dtype=float)
    refused = K1_REFUSAL if n_trials == 1 else None
    largest = float(np.abs(b).max()) if b.size else 0.0
    if largest > HUGE:
        # Every figure below except the learned population is invariant to one common scale of b: divide by a
        # power of two (exact in floating point) so that means, variances and ranges cannot overflow. The
        # population is learned on the paper's b scale (its N(0, 1) prior), which such draws do not live on.
        b = np.ldexp(b, -int(np.ceil(np.log2(largest))))
        refused = refused or (f"difficulty draws reach {largest:.3g}, far outside the scale the learned "
                              "population is fitted on")
    mean, sd, means = pooled_moments(items, b, posterior_path)
    point = plugin_values(mean, top_k=top_k)
    own = metric_draws(b, top_k)
    fixed = fixed_range_draws(b, float(mean.min()), float(mean.max()), top_k)
    if refused is None:
        noisy, population = population_draws(b, replicates=replicates, seed=seed)
        aware = metric_draws(noisy, top_k)
    gaps = gap_table(mean, sd, items, top_k, n_trials=n_trials)
    resolution = benchmark_resolution(mean, sd)
    metrics = {}
    for name in own:
        s = summarize_draws(aware[name], probability) if refused is None else None
        entry = {"plugin": point[name], "estimate": s and s.mean, "low": s and s.low, "high": s and s.high,
                 "refused": refused,
                 "per_draw_min_max": {**summarize_draws(own[name], probability).as_dict(),
                                      "for": INTERVAL_FOR["per_draw_min_max"]},
                 "per_draw_fixed_range": {**summarize_draws(fixed[name], probability).as_dict(),
                                          "for": INTERVAL_FOR["per_draw_fixed_range"]},
                 "at_posterior_mean": point[name], "for": INTERVAL_FOR}
        if name == "max_gap":
            entry["resolved"] = gaps[0]["resolved"]
            entry["filled_corrected"] = gaps[0]["filled_corrected_width"]
        elif name.endswith("_gap_sum"):
            entry["resolved"] = all(g["resolved"] for g in gaps)
            entry["resolved_gaps"] = sum(g["resolved"] for g in gaps)
        metrics[name] = entry
    pop = None if refused else {
        "penalty": population["penalty"], "bins": population["bins"], "draws": int(noisy.shape[0]),
        "replicates": replicates, "seed": seed, "min_effective_draws": population["min_effective_draws"],
        "median_effective_draws": population["median_effective_draws"]}
    return {"metrics": metrics, "resolution": resolution["resolution"], "resolution_detail": resolution,
            "gaps": gaps, "population": pop, "labels": METRIC_NOTE, "means": means}
