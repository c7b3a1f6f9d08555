"""PSIS-LOO over the cells of a matrix (one observation = one model–item cell, its K trials together), and the
paired comparison of two models on the same cells (the elpd difference and its standard error, as
``arviz.compare`` computes them). The Pareto-smoothed weights are ArviZ's (``arviz_stats`` ``psislw``); cells
are taken a block of items at a time, so the draws × cells log-likelihood is never held whole."""

from __future__ import annotations

import numpy as np

#: Pareto k above this: that cell's PSIS estimate is unreliable (Vehtari et al. 2024)
K_BAD = 0.7


def pointwise(counts, trials, guessing, theta, b, a=None, r_eff: float = 1.0, block: int = 64) -> dict:
    """``elpd`` (PSIS-LOO), ``lppd`` and Pareto ``k`` of every present cell (trials > 0), flat, in row-major
    cell order over items blocks. ``theta`` (S, M), ``b``/``a`` (S, N) are draws stacked over chains."""
    from arviz_stats.base.array import array_stats
    from scipy.special import logsumexp

    from benchmeasure.irt.routes.twopl.model import cell_loglik

    counts, trials = np.asarray(counts), np.asarray(trials)
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (counts.shape[1],))
    n_draws = theta.shape[0]
    out = {"elpd": [], "lppd": [], "k": []}
    for start in range(0, counts.shape[1], block):
        cols = slice(start, start + block)
        ll = cell_loglik(counts[:, cols], trials[:, cols], g[cols], theta, b[:, cols],
                         None if a is None else a[:, cols])             # (S, M, n)
        present = trials[:, cols] > 0
        ll = ll[:, present]                                               # (S, cells)
        log_w, k = array_stats.psislw(-ll.T, r_eff=r_eff, axis=-1)       # weights ∝ 1 / p(y_i | draw)
        log_w = log_w - logsumexp(log_w, axis=-1, keepdims=True)
        out["elpd"].append(logsumexp(log_w + ll.T, axis=-1))
        out["lppd"].append(logsumexp(ll.T, axis=-1) - np.log(n_draws))
        out["k"].append(np.asarray(k))
    return {key: np.concatenate(values) for key, values in out.items()}


def summary(p: dict) -> dict:
    """elpd_loo with its standard error, p_loo, and the cells whose Pareto k is bad."""
    n = p["elpd"].size
    return {"elpd_loo": float(p["elpd"].sum()), "se": float(np.sqrt(n * np.var(p["elpd"]))),
            "p_loo": float((p["lppd"] - p["elpd"]).sum()), "cells": int(n),
            "max_pareto_k": float(np.max(p["k"])), "pareto_k_above_0_7": int(np.sum(p["k"] > K_BAD))}


def compare(two: dict, one: dict) -> dict:
    """The paired comparison of the 2PL (``two``) with the 1PL (``one``) on the same cells."""
    diff = two["elpd"] - one["elpd"]
    n = diff.size
    s2, s1 = summary(two), summary(one)
    bad = s2["pareto_k_above_0_7"] + s1["pareto_k_above_0_7"]
    d, se = float(diff.sum()), float(np.sqrt(n * np.var(diff)))
    return {"2pl": s2, "1pl": s1, "elpd_diff": d, "se_diff": se,
            "preferred": "2pl" if d > 2 * se else "1pl" if d < -2 * se else "neither (|diff| ≤ 2 se)",
            "reliable": bad == 0,
            "note": "PSIS-LOO over cells (one model-item cell, its K trials together, is one observation); "
                    "elpd_diff = elpd_loo(2pl) - elpd_loo(1pl), se_diff its paired standard error"
                    + ("" if bad == 0 else f"; {bad} cell estimate(s) have Pareto k > {K_BAD}: unreliable there, "
                       "check with held-out cells")}


def line(c: dict) -> str:
    """One summary line of :func:`compare`."""
    bad = c["2pl"]["pareto_k_above_0_7"] + c["1pl"]["pareto_k_above_0_7"]
    return (f"model comparison (PSIS-LOO over {c['2pl']['cells']} cells): elpd 2pl {c['2pl']['elpd_loo']:.1f} "
            f"(se {c['2pl']['se']:.1f}), 1pl {c['1pl']['elpd_loo']:.1f} (se {c['1pl']['se']:.1f}); difference "
            f"{c['elpd_diff']:+.1f} ± {c['se_diff']:.1f} (se): prefers {c['preferred']}; "
            + ("every Pareto k ≤ 0.7" if bad == 0 else f"{bad} cell(s) with Pareto k > 0.7: unreliable there"))
