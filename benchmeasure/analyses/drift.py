"""Drift and contamination by an item covariate, difficulty-adjusted (``benchmeasure drift``; docs/drift.md).

One MAP fit of the 1PL (one slope per item release when the item table has one,
:mod:`benchmeasure.analyses.drift_fit`), each model's difficulties with its own responses left out, then per model:

* an ordered covariate (dates by month, numbers): the adjusted performance per bin and the calibrated step test
  (:mod:`benchmeasure.analyses.drift_step`), Benjamini–Hochberg across models;
* a categorical covariate: the model's shift on each level against its other items, with a Wald interval — how
  the model *differs by* the covariate, never called contamination;
* per item (when the items carry a release): drift between the early and the late panel (DIF), BH across items.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from benchmeasure.analyses.drift_fit import (
    B_SD,
    exact_leave_out,
    fit_map,
    item_newton,
    judged_theta,
    leave_out_difficulties,
    leave_out_error,
    sigmoid,
)
from benchmeasure.analyses.drift_step import (
    Z_95,
    benjamini_hochberg,
    bin_offsets,
    candidates_of,
    score_max,
    step_test,
    subset_theta,
)
from benchmeasure.core.item_meta import Covariate, month_date, month_index

logger = logging.getLogger(__name__)
MAX_NUMBER_BINS = 24


@dataclass
class DriftSettings:
    alpha: float = 0.05
    min_side: int = 20
    max_replicates: int = 4000
    seed: int = 0
    check_models: int = 3
    predict: tuple | None = None   # (target item mask, label) of --predict-after (drift_predict.prediction_target)
    tau_near: bool = False         # τ within a month of each model's cut-off (else release) date, where known


@dataclass
class DriftReport:
    kind: str
    models: list
    bins: list = field(default_factory=list)
    items: list = field(default_factory=list)
    items_skipped: str | None = None
    items_note: str | None = None
    leave_out_error: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)   # model → (bin labels, offsets, se, step levels) for flagged ones
    slopes: dict = field(default_factory=dict)
    predictions: list = field(default_factory=list)
    predict_target: str | None = None


def bins_of(cov: Covariate):
    """(bin index per item, bin labels) of an ordered covariate: months, or up to 24 quantile bins of a number."""
    order = np.asarray(cov.order, dtype=float)
    values = np.unique(order)
    if cov.kind == "number" and values.size > MAX_NUMBER_BINS:
        edges = np.unique(np.quantile(order, np.linspace(0, 1, MAX_NUMBER_BINS + 1))[:-1])
        index = np.searchsorted(edges, order, side="right") - 1
        return index, [f"{e:g}" for e in edges]
    index = np.searchsorted(values, order)
    labels = [month_date(int(v)) for v in values] if cov.kind == "date" else [f"{v:g}" for v in values]
    return index, labels


def _cells(matrix):
    trials = matrix.cell_trials()
    n = np.broadcast_to(np.asarray(trials, dtype=float), matrix.counts.shape).copy()
    return matrix.counts.astype(float), n


def _groups(values: list | None):
    if values is None:
        return None, []
    names = sorted(set(values))
    index = {v: k for k, v in enumerate(names)}
    return np.asarray([index[v] for v in values], dtype=np.int64), names


def _near(tau_month: int, dates: list) -> bool | None:
    """Whether the step (between month τ−1 and τ) lies within a month of the end of a known date's month."""
    known = [month_index(d) for d in dates if d is not None]
    if not known:
        return None
    return any(abs(tau_month - (d + 1)) <= 1 for d in known)


def near_bins(cov: Covariate, model_dates: dict | None, m: int):
    """``(bins, what)``: the month bins whose step lies within one month of the end of model m's cut-off month
    (its release month when the cut-off is unknown) — τ ∈ {d, d + 1, d + 2} for date month d, as ``_near`` reads
    "near" — or ``(None, "all months")`` when the model has neither date."""
    for column, what in (("cutoff", "cut-off"), ("release", "release")):
        day = (model_dates or {}).get(column, [None] * (m + 1))[m]
        if day is not None:
            months = np.unique(np.asarray(cov.order, dtype=float)).astype(int)
            d = month_index(day)
            return np.flatnonzero(np.isin(months, [d, d + 1, d + 2])), f"{what} ± 1 month"
    return None, "all months"


def leave_out_check(y, n, fit, b_loo, chosen, bins, n_bins, min_side):
    """The leave-out approximation against exact refits without each chosen model: b and the search statistic."""

    rows = []
    for m in chosen:
        exact = exact_leave_out(y, n, fit, m)
        present = n[m] > 0
        diff = (b_loo[m] - exact)[present]
        keep = np.arange(len(y)) != m
        one = item_newton(y[keep], n[keep], fit.theta[keep], fit.a, fit.b, 1, fit.prior_mean)
        cand = candidates_of(bins[present], n_bins, min_side)
        stats = []
        for b in (b_loo[m], exact):
            bb, aa = b[present], fit.a[present]
            theta = judged_theta(y[m, present], n[m, present], bb, aa)
            if cand.size:
                onehot = np.zeros((present.sum(), n_bins))
                onehot[np.arange(present.sum()), bins[present]] = 1
                p = sigmoid(aa * (theta - bb))
                stats.append(float(score_max(y[None, m, present], n[m, present], p, aa, onehot, cand)[0][0]))
        rows.append({"model_index": int(m), "max_abs_b_error": float(np.abs(diff).max()),
                     "rms_b_error": float(np.sqrt((diff ** 2).mean())),
                     "one_step_max_abs_b_error": float(np.abs((one - exact)[present]).max()),
                     "z_max_leave_out": stats[0] if stats else None, "z_max_exact": stats[1] if stats else None})
    return rows


@contextlib.contextmanager
def _one_blas_thread():
    """One BLAS thread: every product here is small (a model's items by a few dozen columns), and on a shared
    2-core machine a second BLAS thread only waits (one model's leave-out error: 0.13 s on two threads, 0.02 s
    on one, under load)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def run_drift(matrix, cov: Covariate, slope_values: list | None, release: list | None, model_dates: dict | None,
              settings: DriftSettings) -> DriftReport:
    with _one_blas_thread():
        return _run_drift(matrix, cov, slope_values, release, model_dates, settings)


def _run_drift(matrix, cov, slope_values, release, model_dates, settings) -> DriftReport:
    start = time.perf_counter()
    y, n = _cells(matrix)
    M, N = y.shape
    group, group_names = _groups(slope_values)
    logger.info(f"fitting the 1PL at its mode: {M} models × {N} items"
                + (f", one slope per {len(group_names)} item groups" if len(group_names) > 1 else ""))
    fit = fit_map(y, n, group)
    # each b's prior centred on the mean difficulty of its bin (month) or level, not on 0: a prior mean of 0
    # pulls each b towards 0 by about b/(3²·I), and when difficulty trends with the date that pull runs with the
    # date (old easy items made harder, new hard ones easier), so every model looks better before any τ
    cells = bins_of(cov)[0] if cov.kind != "category" else np.unique(cov.values, return_inverse=True)[1]
    level = np.bincount(cells, fit.b) / np.maximum(np.bincount(cells), 1)
    fit = fit_map(y, n, group, start=fit, prior_mean=level[cells])
    b_loo = leave_out_difficulties(y, n, fit)
    a = fit.a
    logger.info(f"  fit and leave-one-model-out difficulties in {time.perf_counter() - start:.1f} s")
    slopes = {name: float(fit.slope[k]) for k, name in enumerate(group_names)} if len(group_names) > 1 else {}
    if cov.kind == "category":
        report = DriftReport("category", _categorical(matrix, cov, y, n, a, b_loo, settings), slopes=slopes)
    else:
        report = _ordered(matrix, cov, y, n, fit, b_loo, model_dates, settings)
        report.slopes = slopes
    if release is None:
        report.items_skipped = "the item table has no 'release' column: no panels of different releases to compare"
    else:
        report.items, note = item_drift(matrix, y, n, fit, release, model_dates, settings.alpha)
        if report.items:
            report.items_note = note
        else:
            report.items_skipped = note
    return report


def _ordered(matrix, cov, y, n, fit, b_loo, model_dates, settings) -> DriftReport:
    M = y.shape[0]
    bins, labels = bins_of(cov)
    n_bins = len(labels)
    a = fit.a
    results, rows, bin_rows, searched = [], [], [], []
    t0 = time.perf_counter()
    for m, model in enumerate(matrix.models):
        present = n[m] > 0
        rng = np.random.default_rng([settings.seed, m])
        error = leave_out_error(y, n, fit, b_loo[m], m).items(present)
        allowed, search = near_bins(cov, model_dates, m) if settings.tau_near else (None, "all months")
        if allowed is not None and not np.isin(candidates_of(bins[present], n_bins, settings.min_side),
                                               allowed).any():
            allowed, search = None, f"all months (no step at its {search} leaves {settings.min_side} items a side)"
        res = step_test(y[m, present], n[m, present], b_loo[m, present], a[present], bins[present], n_bins, rng,
                        settings.min_side, max_replicates=settings.max_replicates, error=error, allowed=allowed)
        searched.append(search)
        results.append(res)
        items, trials, observed, expected, offset, se = bin_offsets(y[m, present], n[m, present], b_loo[m, present],
                                                                   a[present], res.theta, bins[present], n_bins)
        for k in range(n_bins):
            if items[k]:
                bin_rows.append({"model": model, "bin": labels[k], "items": int(items[k]), "trials": int(trials[k]),
                                 "correct": int(observed[k]), "expected": float(expected[k]),
                                 "offset": float(offset[k]), "offset_lo": float(offset[k] - Z_95 * se[k]),
                                 "offset_hi": float(offset[k] + Z_95 * se[k])})
        if (m + 1) % 10 == 0 or m + 1 == M:
            logger.info(f"  step tests: {m + 1}/{M} models ({time.perf_counter() - t0:.1f} s)")
    q = benjamini_hochberg(np.array([r.p_value for r in results]))
    report = DriftReport(cov.kind, rows, bins=bin_rows)
    for m, (model, res) in enumerate(zip(matrix.models, results)):
        tested = res.tau_bin >= 0
        flagged = bool(tested and q[m] <= settings.alpha and res.delta > 0)
        row = {"model": model, "tau": labels[res.tau_bin] if tested else "", "delta": res.delta,
               "delta_lo": res.delta_lo, "delta_hi": res.delta_hi, "lr": res.lr, "z_max": res.z_max,
               "p_value": res.p_value, "q_value": float(q[m]), "flagged": flagged, "replicates": res.replicates,
               "theta": res.theta, "items": int((n[m] > 0).sum()), "tau_search": searched[m]}
        if model_dates:
            near = None
            if tested and cov.kind == "date":
                tau_month = month_index(_day(labels[res.tau_bin]))
                near = _near(tau_month, [model_dates[c][m] for c in model_dates])
            row["near_release"] = near
        rows.append(row)
        if flagged:
            present = n[m] > 0
            _, _, _, _, offset, se = bin_offsets(y[m, present], n[m, present], b_loo[m, present], a[present],
                                                 res.theta, bins[present], n_bins)
            report.figures[model] = {"labels": labels, "offset": offset, "se": se, "tau_bin": res.tau_bin,
                                     "delta": res.delta, "theta": res.theta, "theta_pre": res.theta_pre,
                                     "theta_post": res.theta_post, "by": cov.name}
    if settings.predict is not None:
        from benchmeasure.analyses.drift_predict import predict_rows

        target, report.predict_target = settings.predict
        report.predictions = predict_rows(matrix.models, y, n, b_loo, a, bins, results,
                                          [r["flagged"] for r in rows], target)
    thetas = np.array([r.theta for r in results])
    order = np.flatnonzero(np.isfinite(thetas))
    order = order[np.argsort(thetas[order])]
    picks = np.unique(np.linspace(0, len(order) - 1, min(settings.check_models, len(order))).round().astype(int))
    chosen = [int(order[k]) for k in picks]
    if chosen:
        report.leave_out_error = {"models": [dict(r, model=matrix.models[r.pop("model_index")])
                                             for r in leave_out_check(y, n, fit, b_loo, chosen, bins, n_bins,
                                                                      settings.min_side)]}
    return report


def _day(text: str):
    import datetime

    return datetime.date.fromisoformat(text)


def _categorical(matrix, cov, y, n, a, b_loo, settings) -> list:
    levels = sorted(set(cov.values))
    values = np.asarray(cov.values, dtype=object)
    shown = levels[1:] if len(levels) == 2 else levels
    rows = []
    for m, model in enumerate(matrix.models):
        present = n[m] > 0
        yy, nn, bb, aa = y[m, present], n[m, present], b_loo[m, present], a[present]
        vals = values[present]
        for level in shown:
            inside = vals == level
            rest = ~inside if len(levels) > 2 else (vals == levels[0])
            if inside.sum() == 0 or rest.sum() == 0:
                continue
            theta, info = subset_theta(yy, nn, bb, aa, np.stack([inside, rest]), 0.0, prior_sd=10.0)
            shift = float(theta[0] - theta[1])
            se = float(np.sqrt(1 / info[0] + 1 / info[1]))
            rows.append({"model": model, "level": level, "against": levels[0] if len(levels) == 2 else "the rest",
                         "shift": shift, "shift_lo": shift - Z_95 * se, "shift_hi": shift + Z_95 * se,
                         "p_value": float(_two_sided(shift / se)), "items_level": int(inside.sum()),
                         "items_against": int(rest.sum())})
    q = benjamini_hochberg(np.array([r["p_value"] for r in rows]))
    for row, qv in zip(rows, q):
        row["q_value"] = float(qv)
        row["differs"] = bool(qv <= settings.alpha)
    return rows


def _two_sided(z: float) -> float:
    import math

    return math.erfc(abs(z) / math.sqrt(2))


def item_drift(matrix, y, n, fit, release: list, model_dates: dict | None, alpha: float):
    """Per item: its difficulty seen by the early and by the late panel (abilities and slopes fixed); BH."""
    M = y.shape[0]
    if model_dates and "release" in model_dates and sum(d is not None for d in model_dates["release"]) >= 4:
        era = np.array([month_index(d) if d is not None else np.nan for d in model_dates["release"]], dtype=float)
        how = "model release date (--model-meta), split at the median"
    else:
        names = sorted(set(release))
        rank = np.array([names.index(r) for r in release])
        era = np.array([rank[n[m] > 0].max() if (n[m] > 0).any() else np.nan for m in range(M)], dtype=float)
        how = "the latest item release each model answered, split at the median"
    known = np.isfinite(era)
    if known.sum() < 4:
        return [], "fewer than 4 models with a known era: no panels to compare"
    cut = np.median(era[known])
    early = known & (era < cut) if (known & (era < cut)).any() else known & (era <= cut)
    late = known & ~early
    if not early.any() or not late.any():
        return [], f"every model falls in one era by {how}: no panels to compare"
    rows = []
    a = fit.a
    for mask in (early, late):
        yy, nn = y[mask], n[mask]
        b = item_newton(yy, nn, fit.theta[mask], a, fit.b, 30, fit.prior_mean)
        p = sigmoid(a * (fit.theta[mask][:, None] - b))
        hess = a * a * (nn * p * (1 - p)).sum(0) + 1 / B_SD**2
        models = ((nn > 0).sum(0))
        rows.append((b, hess, models))
    (b_e, h_e, k_e), (b_l, h_l, k_l) = rows
    tested = (k_e >= 3) & (k_l >= 3)
    se = np.sqrt(1 / h_e + 1 / h_l)
    shift = b_l - b_e
    p = np.array([_two_sided(s / e) if t else np.nan for s, e, t in zip(shift, se, tested)])
    q = benjamini_hochberg(p)
    out = []
    for i, item in enumerate(matrix.items):
        if not tested[i]:
            continue
        out.append({"item": item, "release": release[i], "b_early": float(b_e[i]), "b_late": float(b_l[i]),
                    "shift": float(shift[i]), "shift_lo": float(shift[i] - Z_95 * se[i]),
                    "shift_hi": float(shift[i] + Z_95 * se[i]), "models_early": int(k_e[i]),
                    "models_late": int(k_l[i]), "p_value": float(p[i]), "q_value": float(q[i]),
                    "flagged": bool(q[i] <= alpha)})
    if not out:
        return out, f"no item was answered by at least 3 models of each panel ({how})"
    return out, f"panels by {how}"
