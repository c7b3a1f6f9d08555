"""Convergence figures of any PyMC / nutpie / numpyro posterior, reported the same way everywhere.

:func:`summarize_diagnostics` gives the three numbers every fit in this project reports —
maximum split R-hat, minimum bulk ESS and the number of divergent transitions — plus the
cost of the run (leapfrog steps per draw). The 1PL fit, the 2PL and multidimensional
analyses and the ability cache all call it, so their figures are comparable.
:func:`per_parameter` gives mean, sd, R-hat and bulk ESS per element of one variable.

Thresholds (:data:`R_HAT_MAX`, :data:`ESS_BULK_MIN`) follow common practice (Vehtari et
al. 2021): R-hat ≤ 1.01 and bulk ESS ≥ 400 per reported parameter.
"""

from __future__ import annotations

import math

import numpy as np

R_HAT_MAX = 1.01
ESS_BULK_MIN = 400.0


def _posterior(idata):
    return idata["posterior"] if "posterior" in idata.children else idata.posterior


def _sample_stats(idata):
    try:
        return idata["sample_stats"]
    except KeyError:
        return None


def _variables(idata, var_names):
    posterior = _posterior(idata)
    names = list(posterior.data_vars) if var_names is None else list(var_names)
    missing = [name for name in names if name not in posterior.data_vars]
    if missing:
        raise KeyError(f"posterior has no variable(s) {missing}; it has {list(posterior.data_vars)}")
    return names


def per_parameter(idata, var_name: str) -> dict:
    """Posterior mean, sd, split R-hat (rank-normalized) and bulk ESS of each element of ``var_name``.

    Returns a dict of flat NumPy arrays ``mean``, ``sd``, ``r_hat``, ``ess_bulk`` (one entry
    per element, in the variable's order). R-hat is NaN with a single chain.
    """
    import arviz as az

    draws = _posterior(idata)[var_name]
    values = np.asarray(draws.values, dtype=float)  # (chain, draw, *shape)
    n_chains, n_draws = values.shape[:2]
    flat = values.reshape(n_chains, n_draws, -1)
    ess = np.asarray(az.ess(idata, var_names=[var_name], method="bulk")[var_name].values, dtype=float).ravel()
    if n_chains > 1 or n_draws >= 4:
        r_hat = np.asarray(az.rhat(idata, var_names=[var_name])[var_name].values, dtype=float).ravel()
    else:
        r_hat = np.full(flat.shape[2], np.nan)
    return {
        "mean": flat.mean(axis=(0, 1)),
        "sd": flat.std(axis=(0, 1), ddof=1) if n_chains * n_draws > 1 else np.full(flat.shape[2], np.nan),
        "r_hat": r_hat,
        "ess_bulk": ess,
    }


def _finite_or_none(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def summarize_diagnostics(idata, var_names=None, *, sampling_time_s: float | None = None) -> dict:
    """Convergence and cost of a posterior sample (any ArviZ DataTree from PyMC, nutpie or numpyro).

    Parameters
    ----------
    idata : xarray.DataTree / arviz InferenceData
        Must have a ``posterior`` group; ``sample_stats`` (with ``diverging`` and
        ``n_steps``/``tree_depth``) is used when present.
    var_names : sequence of str, optional
        Variables to check (default: every posterior variable).
    sampling_time_s : float, optional
        Seconds spent sampling; adds ``min_ess_bulk_per_s``.

    Returns
    -------
    dict
        ``max_r_hat``, ``min_ess_bulk``, ``divergences`` (post-warm-up divergent transitions),
        ``worst_r_hat`` / ``worst_ess_bulk`` (the parameter each extreme belongs to),
        ``chains``, ``draws`` (per chain), ``leapfrog_steps_per_draw`` (mean),
        ``max_tree_depth_hits`` where the sampler records them, and ``r_hat_ok`` /
        ``ess_ok`` / ``converged`` against R-hat ≤ 1.01 and bulk ESS ≥ 400. NaN figures
        (e.g. R-hat of a single chain) are ``None``.
    """
    names = _variables(idata, var_names)
    posterior = _posterior(idata)
    n_chains = int(posterior.sizes.get("chain", 1))
    n_draws = int(posterior.sizes.get("draw", 0))
    max_r_hat, worst_r_hat = -np.inf, None
    min_ess, worst_ess = np.inf, None
    for name in names:
        stats = per_parameter(idata, name)
        labels = _labels(posterior[name])
        if np.any(np.isfinite(stats["r_hat"])):
            k = int(np.nanargmax(stats["r_hat"]))
            if stats["r_hat"][k] > max_r_hat:
                max_r_hat, worst_r_hat = float(stats["r_hat"][k]), labels[k]
        if stats["ess_bulk"].size and np.any(np.isfinite(stats["ess_bulk"])):
            k = int(np.nanargmin(stats["ess_bulk"]))
            if stats["ess_bulk"][k] < min_ess:
                min_ess, worst_ess = float(stats["ess_bulk"][k]), labels[k]
    sample_stats = _sample_stats(idata)
    divergences = 0
    steps = None
    depth_hits = None
    if sample_stats is not None:
        if "diverging" in sample_stats.data_vars:
            divergences = int(np.asarray(sample_stats["diverging"].values).sum())
        if "n_steps" in sample_stats.data_vars:
            steps = float(np.asarray(sample_stats["n_steps"].values, dtype=float).mean())
        elif "num_steps" in sample_stats.data_vars:
            steps = float(np.asarray(sample_stats["num_steps"].values, dtype=float).mean())
        elif "tree_depth" in sample_stats.data_vars:
            steps = float((2.0 ** np.asarray(sample_stats["tree_depth"].values, dtype=float) - 1).mean())
        for key in ("maxdepth_reached", "reached_max_treedepth"):
            if key in sample_stats.data_vars:
                depth_hits = int(np.asarray(sample_stats[key].values).sum())
                break
    max_r_hat_out = _finite_or_none(max_r_hat) if worst_r_hat is not None else None
    min_ess_out = _finite_or_none(min_ess) if worst_ess is not None else None
    summary = {
        "max_r_hat": max_r_hat_out,
        "min_ess_bulk": min_ess_out,
        "divergences": divergences,
        "worst_r_hat": worst_r_hat,
        "worst_ess_bulk": worst_ess,
        "chains": n_chains,
        "draws": n_draws,
        "leapfrog_steps_per_draw": steps,
        "max_tree_depth_hits": depth_hits,
        "r_hat_ok": None if max_r_hat_out is None else max_r_hat_out <= R_HAT_MAX,
        "ess_ok": None if min_ess_out is None else min_ess_out >= ESS_BULK_MIN,
    }
    summary["converged"] = bool(summary["r_hat_ok"] is not False and summary["ess_ok"] is not False
                                and divergences == 0)
    if sampling_time_s is not None:
        summary["sampling_time_s"] = float(sampling_time_s)
        summary["min_ess_bulk_per_s"] = (min_ess_out / sampling_time_s
                                         if min_ess_out is not None and sampling_time_s > 0 else None)
    return summary


def _labels(data_array) -> list:
    """'name[label]' for each element of a posterior variable, in flat order."""
    name = data_array.name
    dims = [d for d in data_array.dims if d not in ("chain", "draw")]
    if not dims:
        return [name]
    grids = np.meshgrid(*[np.asarray(data_array.coords[d].values) if d in data_array.coords
                          else np.arange(data_array.sizes[d]) for d in dims], indexing="ij")
    flat = [g.ravel() for g in grids]
    return [f"{name}[{', '.join(str(f[k]) for f in flat)}]" for k in range(flat[0].size)]


def warnings_for(summary: dict) -> list[str]:
    """Human-readable warnings, each with what to try, for a :func:`summarize_diagnostics` result."""
    out = []
    r_hat = summary.get("max_r_hat")
    ess = summary.get("min_ess_bulk")
    divergences = summary.get("divergences") or 0
    if r_hat is not None and r_hat > R_HAT_MAX:
        out.append(f"max R-hat is {r_hat:.3f} (> {R_HAT_MAX}, at {summary.get('worst_r_hat')}): the chains disagree; "
                   "run longer (--tune 2000 --draws 2000) or with more chains, and check the matrix for models or "
                   "items with no information")
    if ess is not None and ess < ESS_BULK_MIN:
        out.append(f"min bulk ESS is {ess:.0f} (< {ESS_BULK_MIN:.0f}, at {summary.get('worst_ess_bulk')}): "
                   "too few effective draws for stable means and intervals; increase --draws (and --tune)")
    if divergences:
        out.append(f"{divergences} divergent transition(s) after warm-up: the sampler met geometry it could not "
                   "follow; raise --target-accept (e.g. 0.99) and check the estimates near the divergences")
    return out
