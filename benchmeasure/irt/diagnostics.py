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

from benchmeasure.core.difficulty_file import ESS_BULK_MIN, R_HAT_MAX  # the rules every reader of a fit checks too

QUADRATURE_TOLERANCE = 1e-6  # collapsed route: end-node weight and |Δ log-integral| on a grid of half the step


def _variables(draws, var_names):
    names = draws.names() if var_names is None else list(var_names)
    missing = [name for name in names if name not in draws.variables]
    if missing:
        raise KeyError(f"posterior has no variable(s) {missing}; it has {draws.names()}")
    return names


def _average_ranks(rows: np.ndarray) -> np.ndarray:
    """Ranks 1 … n within each row, ties sharing their average rank (scipy's ``method="average"``)."""
    n_rows, size = rows.shape
    order = np.argsort(rows, axis=1)
    ordered = np.take_along_axis(rows, order, axis=1)
    ranked = np.broadcast_to(np.arange(1.0, size + 1.0), (n_rows, size))
    tied = ordered[:, 1:] == ordered[:, :-1]  # tied[r, k]: sorted positions k and k+1 of row r are equal
    if tied.any():
        ranked = ranked.copy()
        rows_idx, pos = np.nonzero(tied)  # row-major: grouped by row, increasing positions
        # a run of ties starts where the previous tie is not the immediately preceding pair of the same row
        starts = np.ones(pos.size, dtype=bool)
        starts[1:] = (rows_idx[1:] != rows_idx[:-1]) | (pos[1:] != pos[:-1] + 1)
        run = np.cumsum(starts) - 1
        first = pos[starts]                                   # first sorted position of each run
        last = np.zeros(first.size, dtype=int)
        np.maximum.at(last, run, pos + 1)                     # last sorted position of each run
        run_rows = rows_idx[starts]
        average = (first + last) / 2.0 + 1.0
        lengths = last - first + 1
        which = np.repeat(np.arange(first.size), lengths)
        offsets = np.arange(which.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        ranked[run_rows[which], first[which] + offsets] = average[which]
    ranks = np.empty((n_rows, size))
    np.put_along_axis(ranks, order, ranked, axis=1)
    return ranks


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalize each parameter over its chains and draws (x: (P, chains, draws), C-contiguous)."""
    from scipy import special

    n_params, chains, draws = x.shape
    size = chains * draws
    ranks = _average_ranks(x.reshape(n_params, size))
    return special.ndtri((ranks - 3 / 8) / (size - 2 * 3 / 8 + 1)).reshape(x.shape)


def _split_chains(x: np.ndarray) -> np.ndarray:
    """(P, chains, draws) → (P, 2·chains, draws // 2): first and last halves as separate chains."""
    half = x.shape[2] // 2
    return np.concatenate([x[:, :, :half], x[:, :, x.shape[2] - half:]], axis=1)


def _rhat_basic(x: np.ndarray) -> np.ndarray:
    n = x.shape[2]
    chain_mean = x.mean(axis=2)
    chain_var = x.var(axis=2, ddof=1)
    between = n * chain_mean.var(axis=1, ddof=1)
    within = chain_var.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _by_parameter(x) -> np.ndarray:
    """(chains, draws, P) → C-contiguous (P, chains, draws) floats."""
    return np.ascontiguousarray(np.moveaxis(np.asarray(x, dtype=float), 2, 0))


def rhat_rank(x: np.ndarray) -> np.ndarray:
    """Rank-normalized split R-hat (max of bulk and folded), per parameter of x: (chains, draws, P).

    The same figure as ``arviz.rhat(..., method="rank")`` (Vehtari et al. 2021), vectorized
    over parameters. NaN with fewer than 2 chains or 4 draws, or non-finite draws.
    """
    x = _by_parameter(x)
    out = np.full(x.shape[0], np.nan)
    if x.shape[1] < 2 or x.shape[2] < 4:
        return out
    ok = np.all(np.isfinite(x), axis=(1, 2))
    if not ok.any():
        return out
    split = _split_chains(x[ok])
    bulk = _rhat_basic(_z_scale(split))
    folded = np.abs(split - np.median(split.reshape(split.shape[0], -1), axis=1)[:, None, None])
    tail = _rhat_basic(_z_scale(folded))
    out[ok] = np.maximum(bulk, tail)
    return out


def _ess_geyer(x: np.ndarray) -> np.ndarray:
    """Effective sample size by Geyer's initial monotone sequence, per parameter of x: (P, chains, draws)."""
    from scipy.fft import irfft, next_fast_len, rfft

    n_params, n_chain, n_draw = x.shape
    m = next_fast_len(2 * n_draw)
    centered = x - x.mean(axis=2, keepdims=True)
    spectrum = rfft(centered, n=m, axis=2)
    spectrum *= np.conjugate(spectrum)
    acov = irfft(spectrum, n=m, axis=2)[:, :, :n_draw] / n_draw
    mean_acov = np.ascontiguousarray(acov.mean(axis=1).T)  # (n_draw, P)
    chain_mean = x.mean(axis=2)
    mean_var = mean_acov[0] * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus = var_plus + chain_mean.var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.zeros((n_draw, n_params))
        even = np.ones(n_params)
        odd = 1.0 - (mean_var - mean_acov[1]) / var_plus
        rho[0] = 1.0
        rho[1] = odd
        t = 1
        t_end = np.ones(n_params, dtype=int)
        active = (t < n_draw - 3) & (even + odd > 0.0)
        while active.any():  # Geyer's initial positive sequence, all parameters in step
            new_even = 1.0 - (mean_var - mean_acov[t + 1]) / var_plus
            new_odd = 1.0 - (mean_var - mean_acov[t + 2]) / var_plus
            even = np.where(active, new_even, even)
            odd = np.where(active, new_odd, odd)
            keep = active & (even + odd >= 0)
            rho[t + 1] = np.where(keep, even, rho[t + 1])
            rho[t + 2] = np.where(keep, odd, rho[t + 2])
            t += 2
            t_end = np.where(active, t, t_end)
            active = active & (t < n_draw - 3) & (even + odd > 0.0)
        max_t = t_end - 2
        cols = np.arange(n_params)
        improve = even > 0
        rho[max_t[improve] + 1, cols[improve]] = even[improve]
        t = 1
        while t <= max_t.max() - 2:  # Geyer's initial monotone sequence
            sel = t <= max_t - 2
            bump = sel & ((rho[t + 1] + rho[t + 2]) > (rho[t - 1] + rho[t]))
            avg = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 1] = np.where(bump, avg, rho[t + 1])
            rho[t + 2] = np.where(bump, avg, rho[t + 2])
            t += 2
        lags = np.arange(n_draw)[:, None]
        head = np.where(lags < max_t + 1, rho, 0.0).sum(axis=0)
        next_one = np.where(lags == max_t + 1, rho, 0.0).sum(axis=0)
        total = n_chain * n_draw
        tau = np.maximum(-1.0 + 2.0 * head + next_one, 1 / np.log10(total))
        ess = total / tau
    ess[np.isnan(rho).any(axis=0)] = np.nan
    return ess


def ess_bulk(x: np.ndarray) -> np.ndarray:
    """Bulk effective sample size per parameter of x: (chains, draws, P).

    The same figure as ``arviz.ess(..., method="bulk")`` (rank-normalized split chains,
    Geyer's initial monotone sequence), vectorized over parameters.
    """
    x = _by_parameter(x)
    out = np.full(x.shape[0], np.nan)
    if x.shape[2] < 4:
        return out
    ok = np.all(np.isfinite(x), axis=(1, 2))
    spread = np.ptp(np.where(np.isfinite(x), x, 0.0).reshape(x.shape[0], -1), axis=1)
    constant = ok & (spread < np.finfo(float).resolution)
    varying = ok & ~constant
    out[constant] = x.shape[1] * (x.shape[2] // 2) * 2
    if varying.any():
        out[varying] = _ess_geyer(_z_scale(_split_chains(x[varying])))
    return out


def ess_tail(x: np.ndarray, chunk: int = 1024, on_chunk=None) -> np.ndarray:
    """Tail effective sample size per parameter of x: (chains, draws, P), of any float type.

    ArviZ's ``method="tail"`` (Vehtari et al. 2021): the smaller of the ESS of the indicators
    I(x ≤ 5 % quantile) and I(x ≤ 95 % quantile) on split chains — how well the posterior's tails
    (and so its intervals) are resolved, beside :func:`ess_bulk` for its centre. Computed with the other
    summaries in one compiled pass (:func:`summarize_draws`); :func:`ess_tail_reference` is the NumPy form.
    """
    return summarize_draws(x, chunk=chunk, on_chunk=on_chunk)["ess_tail"]


def ess_tail_reference(x: np.ndarray) -> np.ndarray:
    """:func:`ess_tail` in NumPy (the reference the compiled pass is tested against)."""
    return _ess_tail_block(np.asarray(x, dtype=float))


def _workers() -> int:
    """Threads for the chunked summaries: up to 2 of the CPUs available."""
    import os

    try:
        return max(1, min(2, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - not on Linux
        return 1


def _ess_tail_block(x: np.ndarray) -> np.ndarray:
    x = _by_parameter(x)
    out = np.full(x.shape[0], np.nan)
    if x.shape[2] < 4:
        return out
    ok = np.all(np.isfinite(x), axis=(1, 2))
    if not ok.any():
        return out
    values = x[ok]
    flat = values.reshape(values.shape[0], -1)
    tails = []
    for q in (0.05, 0.95):
        cut = np.quantile(flat, q, axis=1)
        # constancy is judged on the split chains, as ArviZ does: with an odd number of draws the split leaves
        # out each chain's middle draw, which can be the only one on a side of the cut
        indicator = _split_chains((values <= cut[:, None, None]).astype(float))
        spread = np.ptp(indicator.reshape(indicator.shape[0], -1), axis=1)
        ess = np.full(values.shape[0], float(values.shape[1] * (values.shape[2] // 2) * 2))
        varying = spread > 0
        if varying.any():
            ess[varying] = _ess_geyer(indicator[varying])
        tails.append(ess)
    out[ok] = np.minimum(*tails)
    return out


def per_parameter(idata, var_name: str) -> dict:
    """Posterior mean, sd, split R-hat (rank-normalized) and bulk ESS of each element of ``var_name``.

    Returns a dict of flat NumPy arrays ``mean``, ``sd``, ``r_hat``, ``ess_bulk`` (one entry
    per element, in the variable's order); the R-hat and ESS are ArviZ's definitions
    (:func:`rhat_rank`, :func:`ess_bulk`). R-hat is NaN with a single chain.
    """
    from benchmeasure.irt.draws import Draws

    values = Draws.of(idata).values(var_name)
    n_chains, n_draws = values.shape[:2]
    return summarize_draws(values.reshape(n_chains, n_draws, -1))


def summarize_draws(values: np.ndarray, chunk: int = 256, workers: int | None = None, on_chunk=None) -> dict:
    """Mean, sd, R-hat, bulk ESS and tail ESS of every parameter of ``values`` (chains, draws, P), any float type.

    The figures of :func:`rhat_rank`, :func:`ess_bulk` and :func:`ess_tail`'s NumPy reference (ArviZ's
    definitions), computed by the one compiled pass of :mod:`benchmeasure.irt.draw_summary`. Each chunk of
    ``chunk`` parameters is converted to float64 on its own, so the working memory is a few copies of
    (chains, draws, chunk) per worker whatever P is; chunks run on ``workers`` threads (default: up to 2 of
    the CPUs available; the kernel releases the GIL). ``on_chunk(done, total)`` reports progress.
    """
    from concurrent.futures import ThreadPoolExecutor

    from benchmeasure.irt.draw_summary import argsort_rows_f32, normal_scores, summarize_block

    n_chains, n_draws, n_params = values.shape
    out = {key: np.empty(n_params) for key in ("mean", "sd", "r_hat", "ess_bulk", "ess_tail")}
    starts = list(range(0, n_params, chunk))
    table = normal_scores(2 * n_chains * (n_draws // 2)) if n_draws >= 4 else np.zeros(1)

    def one(start):
        stop = min(start + chunk, n_params)
        # (P, chains, draws) in the stored type: the moments are contiguous reductions in float64, and float32 b
        # draws are sorted as float32 (the order is the same)
        raw = np.ascontiguousarray(np.moveaxis(values[:, :, start:stop], 2, 0))
        out["mean"][start:stop] = raw.mean(axis=(1, 2), dtype=float)
        out["sd"][start:stop] = (raw.std(axis=(1, 2), ddof=1, dtype=float) if n_chains * n_draws > 1 else np.nan)
        figures = np.empty((stop - start, 3))
        if n_draws >= 4:
            split = _split_chains(raw).reshape(stop - start, -1)
            if split.dtype == np.float32:
                order = np.empty(split.shape, dtype=np.int64)
                argsort_rows_f32(split, order)
            else:
                order = np.argsort(split, axis=1)
            ordered_all = (np.sort(np.asarray(raw, dtype=float).reshape(stop - start, -1), axis=1) if n_draws % 2
                           else np.zeros((stop - start, 0)))
            summarize_block(np.asarray(split, dtype=float), order, ordered_all, n_chains, table, figures)
        else:
            figures[:] = np.nan
        out["r_hat"][start:stop], out["ess_bulk"][start:stop], out["ess_tail"][start:stop] = figures.T
        return stop - start

    if workers is None:
        workers = _workers()
    done = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for size in pool.map(one, starts):
            done += size
            if on_chunk is not None:
                on_chunk(done, n_params)
    return out


def _rhat_and_ess(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`rhat_rank`, :func:`ess_bulk`) of values (chains, draws, P), sharing one rank normalization."""
    x = _by_parameter(values)
    n_params, n_chains, n_draws = x.shape
    r_hat = np.full(n_params, np.nan)
    ess = np.full(n_params, np.nan)
    if n_draws < 4:
        return r_hat, ess
    ok = np.all(np.isfinite(x), axis=(1, 2))
    spread = np.ptp(np.where(np.isfinite(x), x, 0.0).reshape(n_params, -1), axis=1)
    constant = ok & (spread < np.finfo(float).resolution)
    varying = ok & ~constant
    ess[constant] = n_chains * (n_draws // 2) * 2
    if constant.any() and n_chains >= 2:
        r_hat[constant] = rhat_rank(values[:, :, constant])
    if varying.any():
        split = _split_chains(x[varying])
        z = _z_scale(split)
        ess[varying] = _ess_geyer(z)
        if n_chains >= 2:
            bulk = _rhat_basic(z)
            folded = np.abs(split - np.median(split.reshape(split.shape[0], -1), axis=1)[:, None, None])
            r_hat[varying] = np.maximum(bulk, _rhat_basic(_z_scale(folded)))
    return r_hat, ess


def _finite_or_none(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def summarize_diagnostics(idata, var_names=None, *, sampling_time_s: float | None = None,
                          stats: dict | None = None) -> dict:
    """Convergence and cost of a posterior sample (a :class:`~benchmeasure.irt.draws.Draws`, or any ArviZ
    DataTree from PyMC, nutpie or numpyro).

    Parameters
    ----------
    idata : Draws, xarray.DataTree or arviz InferenceData
        Must have a ``posterior`` group; ``sample_stats`` (with ``diverging`` and
        ``n_steps``/``tree_depth``) is used when present.
    var_names : sequence of str, optional
        Variables to check (default: every posterior variable).
    sampling_time_s : float, optional
        Seconds spent sampling; adds ``min_ess_bulk_per_s``.
    stats : dict, optional
        ``{name: per_parameter(idata, name)}`` already computed, to avoid doing it twice.

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
    from benchmeasure.irt.draws import Draws

    draws = Draws.of(idata)
    names = _variables(draws, var_names)
    n_chains, n_draws = draws.shape
    max_r_hat, worst_r_hat = -np.inf, None
    min_ess, worst_ess = np.inf, None
    for name in names:
        st = stats[name] if stats is not None and name in stats else per_parameter(draws, name)
        labels = draws.labels(name)
        if np.any(np.isfinite(st["r_hat"])):
            k = int(np.nanargmax(st["r_hat"]))
            if st["r_hat"][k] > max_r_hat:
                max_r_hat, worst_r_hat = float(st["r_hat"][k]), labels[k]
        if st["ess_bulk"].size and np.any(np.isfinite(st["ess_bulk"])):
            k = int(np.nanargmin(st["ess_bulk"]))
            if st["ess_bulk"][k] < min_ess:
                min_ess, worst_ess = float(st["ess_bulk"][k]), labels[k]
    sample_stats = draws.stats
    divergences = 0
    steps = None
    depth_hits = None
    if "diverging" in sample_stats:
        divergences = int(np.asarray(sample_stats["diverging"]).sum())
    if "n_steps" in sample_stats:
        steps = float(np.asarray(sample_stats["n_steps"], dtype=float).mean())
    elif "num_steps" in sample_stats:
        steps = float(np.asarray(sample_stats["num_steps"], dtype=float).mean())
    elif "tree_depth" in sample_stats:
        steps = float((2.0 ** np.asarray(sample_stats["tree_depth"], dtype=float) - 1).mean())
    for key in ("maxdepth_reached", "reached_max_treedepth"):
        if key in sample_stats:
            depth_hits = int(np.asarray(sample_stats[key]).sum())
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
    quadrature = summary.get("quadrature") or {}
    if (quadrature.get("max_edge_weight") or 0.0) > QUADRATURE_TOLERANCE or (
            quadrature.get("max_abs_log_marginal_error") or 0.0) > QUADRATURE_TOLERANCE:
        out.append(f"the collapsed route's quadrature is not exact enough here (end-node weight "
                   f"{quadrature.get('max_edge_weight'):.2g}, log-integral change on a finer grid "
                   f"{quadrature.get('max_abs_log_marginal_error'):.2g}, both should be < {QUADRATURE_TOLERANCE:g}); "
                   "refit with --route joint")
    if divergences:
        out.append(f"{divergences} divergent transition(s) after warm-up: the sampler met geometry it could not "
                   "follow; raise --target-accept (e.g. 0.99) and check the estimates near the divergences")
    return out


def converged(d: dict) -> bool:
    """The convergence rule every warning names (``--strict`` of ``fit`` and ``fit-suite``): max R-hat ≤ 1.01, min
    bulk ESS ≥ 400, no divergence."""
    from benchmeasure.core.difficulty_file import ESS_BULK_MIN, R_HAT_MAX

    return ((d.get("max_r_hat") is None or d["max_r_hat"] <= R_HAT_MAX)
            and (d.get("min_ess_bulk") is None or d["min_ess_bulk"] >= ESS_BULK_MIN)
            and not d.get("divergences"))
