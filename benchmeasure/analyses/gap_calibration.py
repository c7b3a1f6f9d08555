"""Calibration of DDM, Max Gap and Top-5 Gap Sum on simulated benchmarks with known difficulties.

One replication: given true difficulties b and abilities θ, draw binomial counts with K trials
per cell, fit the paper's 1PL with the project's own fit (:func:`benchmeasure.irt.fit.fit_1pl`,
collapsed route: NUTS on the abilities, every b drawn exactly), and compare, for each metric,
the paper's plug-in value with its per-draw interval and the noise-aware estimate with its
interval (:func:`benchmeasure.analyses.noise_aware.report`) against the metric of the true b.

Used twice: ``bench/bench_gap_calibration.py`` (worlds × n × K, abilities like an LLM panel)
and ``posterior-metrics --calibrate`` (:func:`calibrate`: the user's own fitted abilities, n and
K, difficulty populations of several shapes placed at the user's difficulties' mean and spread),
so a user can see whether the intervals on their benchmark can be trusted.

Worlds (``true_difficulties``), on a standard scale, then moved to ``location`` and ``scale``:

* ``normal`` — iid N(0, 1), the fit's own prior;
* ``uniform`` — U(−2, 2);
* ``band`` — uniform on [−2, 2] with an empty band of 20 % of the range at a random place;
* ``clusters`` — half N(−1, 0.35²), half N(1.2, 0.35²);
* ``as_fitted`` (calibration only) — the benchmark's own posterior-mean difficulties.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from benchmeasure.analyses.noise_aware import report
from benchmeasure.base.errors import fail
from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.core.metrics import diagnose

log = logging.getLogger(__name__)

METRICS = ("ddm", "max_gap", "top5_gap_sum")
WORLDS = ("normal", "uniform", "band", "clusters")
CALIBRATION_WORLDS = ("as_fitted", "normal", "uniform", "band", "clusters")
#: the issue's goal for the noise-aware estimator (bias bound per metric; coverage band)
GOAL_BIAS = {"ddm": 0.01, "max_gap": 0.02}
GOAL_COVERAGE = (0.85, 0.99)


def true_difficulties(world: str, n: int, rng, location: float = 0.0, scale: float = 1.0,
                      fitted=None) -> np.ndarray:
    """n true difficulties of ``world`` (module docstring); ``as_fitted`` returns ``fitted`` itself."""
    if world == "as_fitted":
        if fitted is None or len(fitted) != n:
            fail("the as_fitted world needs the benchmark's n posterior-mean difficulties")
        return np.asarray(fitted, dtype=float).copy()
    if world == "normal":
        z = rng.normal(0, 1, n)
    elif world == "uniform":
        z = rng.uniform(-2, 2, n)
    elif world == "band":  # uniform on [-2, 2] with an empty band of 20 % of the range at a random place
        start = rng.uniform(-1.6, 0.8)
        u = rng.uniform(-2, 1.2, n)
        z = np.where(u >= start, u + 0.8, u)
    elif world == "clusters":
        side = rng.random(n) < 0.5
        z = np.where(side, rng.normal(-1.0, 0.35, n), rng.normal(1.2, 0.35, n))
    else:
        fail(f"unknown world {world!r} (choose from {', '.join(CALIBRATION_WORLDS)})")
    return location + scale * z


def simulate_counts(b, theta, k: int, rng) -> np.ndarray:
    """Binomial counts, models × items, under the 1PL: y ~ Binomial(K, σ(θ_m − b_i))."""
    p = 1 / (1 + np.exp(-(np.asarray(theta)[:, None] - np.asarray(b)[None, :])))
    return rng.binomial(k, p)


def replicate(b, theta, k: int, rng, *, chains: int = 2, tune: int = 300, draws: int = 250,
              replicates: int = 100, abilities: str = "nuts", refuse_k1: bool = True) -> dict:
    """One replication (module docstring): the truth, and per metric the plug-in and noise-aware figures.

    ``abilities="true"`` draws every b exactly given the true θ (quadrature) instead of fitting:
    the fit's posterior of b without the abilities' uncertainty (a fast stand-in for benches).
    ``refuse_k1=False`` computes the noise-aware estimator at K = 1 too (the bench measures it there;
    ``posterior-metrics`` refuses it).
    """
    from benchmeasure.irt.fit import fit_1pl
    from benchmeasure.irt.routes.collapsed.quadrature import sample

    b = np.asarray(b, dtype=float)
    y = simulate_counts(b, theta, k, rng)
    matrix = ResponseMatrix([f"m{j}" for j in range(len(theta))], [f"i{i}" for i in range(len(b))], y, k)
    if abilities == "nuts":
        fit = fit_1pl(matrix, chains=chains, tune=tune, draws=draws, route="collapsed",
                      seed=int(rng.integers(2**31)), cores=1)
        b_draws = fit.draws("b")
    else:
        b_draws = sample(y.T, k, np.asarray(theta, dtype=float), size=chains * draws,
                         seed=int(rng.integers(2**31))).T
    rec = report(matrix.items, b_draws, seed=int(rng.integers(2**31)), replicates=replicates,
                 n_trials=k if refuse_k1 else None)
    truth = diagnose(list(b)).as_dict()
    row = {"truth": {m: truth[m] for m in METRICS}, "resolution": rec["resolution"],
           "max_gap_resolved": rec["metrics"]["max_gap"]["resolved"]}
    for m in METRICS:
        e = rec["metrics"][m]
        row[m] = {"plugin": e["plugin"], "plugin_low": e["per_draw_min_max"]["low"],
                  "plugin_high": e["per_draw_min_max"]["high"], "new": e["estimate"], "new_low": e["low"],
                  "new_high": e["high"]}
    row["max_gap"]["fillcorr"] = rec["metrics"]["max_gap"]["filled_corrected"]
    return row


def wilson(hits: int, total: int, probability: float = 0.94) -> tuple[float, float]:
    """Wilson score interval of a proportion hits/total (the precision of a measured coverage)."""
    if total == 0:
        return 0.0, 1.0
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + probability / 2)
    p = hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return (max(0.0, centre - half) if hits else 0.0), min(1.0, centre + half) if hits < total else 1.0


def summarize(rows: list) -> dict:
    """Per metric and estimator: bias, RMSE and coverage (``hits``/``total``) of the truth; None where refused."""
    out = {}
    for m in METRICS:
        t = np.array([r["truth"][m] for r in rows])
        cell = {"truth_mean": float(t.mean())}
        for est in ("plugin", "new", "fillcorr"):
            if est not in rows[0][m] or any(r[m][est] is None for r in rows):
                continue
            v = np.array([r[m][est] for r in rows])
            cell[est] = {"bias": float((v - t).mean()), "rmse": float(np.sqrt(((v - t) ** 2).mean()))}
            if est != "fillcorr":
                lo = np.array([r[m][f"{est}_low"] for r in rows])
                hi = np.array([r[m][f"{est}_high"] for r in rows])
                hits = int(((lo <= t) & (t <= hi)).sum())
                cell[est]["coverage"] = f"{hits}/{len(rows)}"
                cell[est]["hits"], cell[est]["total"] = hits, len(rows)
        out[m] = cell
    out["resolved"] = f"{sum(r['max_gap_resolved'] for r in rows)}/{len(rows)}"
    out["resolution"] = float(np.mean([r["resolution"] for r in rows]))
    return out


def population_shape(b_mean, b_sd) -> tuple[float, float]:
    """Location and scale of the true difficulties implied by a fit: the posterior means' mean, and
    √(var of the means + mean posterior variance) (the law of total variance)."""
    mean, sd = np.asarray(b_mean, dtype=float), np.asarray(b_sd, dtype=float)
    return float(mean.mean()), float(math.sqrt(mean.var() + (sd ** 2).mean()))


def verdict(worlds: dict, estimator: str) -> dict:
    """Per metric: the pooled coverage with its 94 % Wilson interval, and the worlds that miss the goal.

    ``under_covering``: worlds whose measured coverage is below 85 %; ``biased``: worlds whose |bias|
    exceeds the goal (0.01 DDM, 0.02 Max Gap; Top-5 has none). Coverage above 99 % is not flagged:
    with a handful of replications every interval that covers shows 100 %.
    """
    out = {}
    for m in METRICS:
        cells = {w: c[m][estimator] for w, c in worlds.items() if estimator in c[m]}
        if not cells:
            out[m] = None
            continue
        hits = sum(c["hits"] for c in cells.values())
        total = sum(c["total"] for c in cells.values())
        low, high = wilson(hits, total)
        out[m] = {"coverage": f"{hits}/{total}", "coverage_low": low, "coverage_high": high,
                  "under_covering": sorted(w for w, c in cells.items() if c["hits"] < GOAL_COVERAGE[0] * c["total"]),
                  "biased": sorted(w for w, c in cells.items() if abs(c["bias"]) > GOAL_BIAS.get(m, math.inf))}
    return out


def calibrate(abilities, b_mean, b_sd, k: int, *, worlds=CALIBRATION_WORLDS, reps: int = 4, seed: int = 0,
              chains: int = 2, tune: int = 300, draws: int = 250, replicates: int = 100) -> dict:
    """The calibration at a user's fitted abilities, n and K (module docstring).

    Every world and replication has its own seed derived from ``seed``; progress is logged after each fit.
    Returns ``{"worlds": {world: summary}, "plugin": verdict, "noise_aware": verdict, "settings": {...}}``.
    """
    theta = np.asarray(abilities, dtype=float)
    n = len(b_mean)
    location, scale = population_shape(b_mean, b_sd)
    total, done, start = len(worlds) * reps, 0, time.perf_counter()
    results = {}
    for w, world in enumerate(worlds):
        rng = np.random.default_rng([seed, w])
        rows = []
        for r in range(reps):
            b = true_difficulties(world, n, rng, location, scale, fitted=b_mean)
            rows.append(replicate(b, theta, k, rng, chains=chains, tune=tune, draws=draws, replicates=replicates))
            done += 1
            log.info("calibration: world %s, replication %d/%d done (%d of %d fits, %.0f s)", world, r + 1, reps,
                     done, total, time.perf_counter() - start)
        results[world] = summarize(rows)
    return {"worlds": results, "plugin": verdict(results, "plugin"), "noise_aware": verdict(results, "new"),
            "settings": {"worlds": list(worlds), "reps": reps, "seed": seed, "models": len(theta), "items": n,
                         "n_trials": k, "chains": chains, "tune": tune, "draws": draws, "replicates": replicates,
                         "location": location, "scale": scale, "route": "collapsed", "observation": "binomial"}}
