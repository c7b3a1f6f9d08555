"""The 2pl route's fit: the 2PL sampled by nutpie (on :mod:`.density`, the model of :mod:`.model` compiled
once), summarized over θ, b and a; with ``compare`` the 1PL too, and both compared by PSIS-LOO (:mod:`.loo`)."""

from __future__ import annotations

import dataclasses

import numpy as np


def _sample(matrix, plan, progress, slopes: bool):
    from benchmeasure.irt.routes.nuts import NutsRun, run_nuts
    from benchmeasure.irt.routes.twopl.density import twopl_density  # compiled once, from the kernel cache

    trials = getattr(matrix, "trials", None)
    k = np.full(matrix.counts.shape, float(matrix.n_trials)) if trials is None else trials.astype(float)
    model = twopl_density(matrix.counts, k, plan.guessing, models=matrix.models, items=matrix.items,
                          slopes=slopes, parametrization=plan.settings.parametrization)
    names = ["theta", "b", "a"] if slopes else ["theta", "b"]
    draws, compile_time, sampling_time = run_nuts(model, names, NutsRun.of(plan, progress))
    return draws, k, compile_time, sampling_time


def _stacked(draws, name):
    values = np.asarray(draws.values(name), dtype=float)
    return values.reshape(-1, values.shape[-1])


def fit_2pl(matrix, plan, progress=None):
    from benchmeasure.irt.diagnostics import per_parameter, summarize_diagnostics
    from benchmeasure.irt.routes.nuts import nuts_result
    from benchmeasure.irt.routes.twopl import loo

    draws, k, compile_time, sampling_time = _sample(matrix, plan, progress, slopes=True)
    stats = {name: per_parameter(draws, name) for name in ("theta", "b", "a")}
    diagnostics = summarize_diagnostics(draws, ["theta", "b", "a"], sampling_time_s=sampling_time, stats=stats)
    diagnostics["compile_time_s"] = compile_time
    diagnostics["route"] = "2pl"
    a = stats["a"]
    diagnostics["model"] = "2pl"
    diagnostics["slopes"] = {
        "prior": "log a ~ Normal(0, 0.5)", "min": float(a["mean"].min()), "median": float(np.median(a["mean"])),
        "max": float(a["mean"].max()), "below_0_5": int(np.sum(a["mean"] < 0.5)),
        "above_2": int(np.sum(a["mean"] > 2.0)),
        "note": "posterior-mean slopes; b is each item's location (where p = g + (1 - g)/2), which DDM and Max Gap "
                "read as under the 1PL"}
    if plan.settings.compare == "1pl":
        n_draws = draws.values("theta").shape[0] * draws.values("theta").shape[1]
        ess = np.concatenate([stats[n]["ess_bulk"] for n in ("theta", "b", "a")])
        r_eff = float(min(1.0, np.nanmean(ess) / n_draws))
        two = loo.pointwise(matrix.counts, k, plan.guessing, _stacked(draws, "theta"), _stacked(draws, "b"),
                            _stacked(draws, "a"), r_eff=r_eff)
        draws1, _, compile1, sampling1 = _sample(matrix, plan, progress, slopes=False)
        s1 = {name: per_parameter(draws1, name) for name in ("theta", "b")}
        d1 = summarize_diagnostics(draws1, ["theta", "b"], sampling_time_s=sampling1, stats=s1)
        ess1 = np.concatenate([s1[n]["ess_bulk"] for n in ("theta", "b")])
        one = loo.pointwise(matrix.counts, k, plan.guessing, _stacked(draws1, "theta"), _stacked(draws1, "b"),
                            r_eff=float(min(1.0, np.nanmean(ess1) / n_draws)))
        comparison = loo.compare(two, one)
        comparison["1pl_fit"] = {key: d1.get(key) for key in ("max_r_hat", "min_ess_bulk", "divergences")}
        comparison["1pl_fit"].update(compile_time_s=compile1, sampling_time_s=sampling1,
                                     note="the same PyMC model with every a = 1 (the paper's 1PL posterior)")
        comparison["line"] = loo.line(comparison)
        diagnostics["loo"] = comparison
    result = nuts_result(matrix, stats["b"], stats["theta"], diagnostics, plan.record(matrix.items), draws)
    return dataclasses.replace(result, a_mean=a["mean"], a_sd=a["sd"])
