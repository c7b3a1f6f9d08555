"""The chain's ``blended`` method: the raw anchor accuracy and the IRT prediction, weighted by cross-validation.

After the gp-IRT estimator of Polo et al. (2024), "tinyBenchmarks: evaluating LLMs with fewer examples" (ICML):
a held-out model's accuracy on a benchmark of N trials, n of them on the anchors, is predicted by

    ŷ(λ) = λ · r + (1 − λ) · p,

where r is its raw anchor accuracy and p the ``fixed_correlated`` prediction (its observed anchor answers for the
anchors plus the 1PL's expected successes on the other items, over the posterior of its ability). r is unbiased
for the accuracy whatever the model (the anchors are a sample of the items); p can be much less variable but is
biased where the 1PL's link is wrong for the panel (slopes that differ between items, abilities at the extremes)
and where the plug-in difficulties err. The weight λ is chosen from the calibration models only, as follows.

*Cross-validated errors.* The calibration models of a split are cut into ``FOLDS`` folds. For each fold k the
whole chain of difficulties is calibrated again on the other folds (the same ``fixed`` protocol: each new
benchmark's items with the earlier items held at fold k's own values; the ability mean and covariance from the
same models), anchors are chosen on those difficulties as the chain chooses them (stratified, among the items
those models answered), and each model c of fold k is predicted from its answers to fold k's anchors only,
exactly as a held-out model is from the chain's anchors. (Choosing the anchors on difficulties that model c
helped to fit would make its raw anchor accuracy look better than a new model's.) Its full-benchmark accuracy
y_c is known, so both errors are observed: e_r,c = r_c − y_c and e_p,c = p_c − y_c, on predictions made without
model c's answers.

*The weight.* The squared error of ŷ(λ) over those m models, Σ (λ e_r + (1 − λ) e_p)², is a quadratic in λ
with its minimum at λ* = Σ e_p (e_p − e_r) / Σ (e_p − e_r)² (:func:`cv_minimum`). λ = 1 is the raw anchor
accuracy itself. λ* is estimated from m models, and where the two errors are nearly the same (the IRT prediction
driven by the same anchors) it is noisy: a noisy λ* costs more than raw in expectation when its standard error
exceeds its distance from 1. So λ* is moved towards 1 by positive-part shrinkage of that distance
(:func:`blend_weight`): raw where the calibration models cannot tell the two apart, λ* where they clearly can.
The cross-validated p is made from difficulties fitted on (K − 1)/K of the calibration models, so it errs
somewhat more than the held-out models' p: λ leans towards raw, not away. Whether the blend is at least as good
as raw on new models is measured (the paired difference against raw, docs/anchored.md), not assumed.

*The interval.* The blend's cross-validated residuals ε_c = λ e_r,c + (1 − λ) e_p,c are standardized by the
raw estimator's own standard deviation s_c = sqrt(p̃(1 − p̃)/n · (1 − n/N)), p̃ = (s + ½)/(n + 1) (the shape of
the sampling error: smaller near 0 and 1 accuracy and as n approaches N). With z_c = ε_c / s_c and
τ² = Σ z_c² / (m − 1) (one degree of freedom spent on λ), the interval for a held-out model j is
ŷ_j ± t_{m−1}((1 + level)/2) · τ · s_j, clipped to [0, 1]: the normal-theory prediction interval for a new
residual with that scale. Its coverage is measured, not assumed (bench/bench_chain_prior.py).

With fewer than ``MIN_MODELS`` calibration models to cross-validate on a benchmark (holes), λ = 1 and the
interval is the raw anchor accuracy's.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import t as student_t

from benchmeasure.analyses.anchors import select_anchors
from benchmeasure.suite.predict import (
    ability_covariance,
    anchor_accuracy_interval,
    correlated_nodes,
    correlated_posterior,
    mixture_moments,
)

METHOD = "blended"
FOLDS = 5
MIN_MODELS = 4


class CrossFits:
    """The ``fixed`` chain's difficulties and ability moments refitted on each fold's complement, step by step."""

    def __init__(self, n_calibration: int, n_items: int, seed: int, split: int, folds: int = FOLDS):
        rng = np.random.default_rng(np.random.SeedSequence([seed, split, 51]))   # its own stream: the splits'
        order = rng.permutation(n_calibration)                                     # generator is not touched
        self.held = [np.sort(part) for part in np.array_split(order, min(folds, n_calibration)) if part.size]
        self.train = [np.setdiff1d(np.arange(n_calibration), h) for h in self.held]
        self.b = [np.full(n_items, np.nan) for _ in self.held]
        self.moments: list = [None] * len(self.held)
        self.anchors: list = [{} for _ in self.held]     # per fold: {N: {benchmark: anchor items}}

    def step(self, calibrate, ctr, ttr, seen, free, b_fixed, bench_items, names, grid, anchor_sizes,
             anchor_seed: int) -> None:
        """Calibrate the new items (``free`` among ``seen``) on each fold's training models, the earlier ones held
        at that fold's values, starting from the all-model ``b_fixed``; each fold's ability μ and Σ; and each
        fold's anchors of the new benchmark for every N (stratified on its difficulties, as the chain's)."""
        new = seen[free]
        for k, rows in enumerate(self.train):
            start = np.where(free, b_fixed[seen], self.b[k][seen])
            self.b[k][seen], _ = calibrate(ctr[rows][:, seen], ttr[rows][:, seen], start, free, seen)
            self.moments[k] = ability_covariance([ctr[rows][:, bench_items[d]] for d in names],
                                                 [ttr[rows][:, bench_items[d]] for d in names],
                                                 [self.b[k][bench_items[d]] for d in names], grid)
            answered = new[ttr[rows][:, new].sum(axis=0) > 0]
            for n in anchor_sizes:
                chosen = self.anchors[k].setdefault(n, {})
                size = min(n, answered.size)
                chosen[names[-1]] = answered[select_anchors(self.b[k][answered], size, "stratified",
                                                            anchor_seed + 7919 * (k + 1))] if size else answered

    def errors(self, names, n, bench_items, ctr, ttr) -> dict:
        """{benchmark: (e_raw, e_irt, s_raw)} at N = ``n`` anchors over the calibration models that answered their
        fold's anchors, each predicted by the fold that left it out."""
        parts: dict = {d: [] for d in names}
        for k, rows in enumerate(self.held):
            c, t, anchor_sets = ctr[rows], ttr[rows], self.anchors[k][n]
            mode, cov = correlated_posterior([c[:, anchor_sets[d]] for d in names],
                                             [t[:, anchor_sets[d]] for d in names],
                                             [self.b[k][anchor_sets[d]] for d in names], *self.moments[k])
            for index, d in enumerate(names):
                items, chosen = bench_items[d], anchor_sets[d]
                rest = np.setdiff1d(items, chosen)
                total, a_trials = t[:, items].sum(axis=1), t[:, chosen].sum(axis=1)
                a_correct = c[:, chosen].sum(axis=1)
                nodes, weights = correlated_nodes(mode, cov, index)
                loc, _ = mixture_moments(nodes, self.b[k][rest], t[:, rest].astype(float), a_correct, total)
                irt = (weights * loc).sum(axis=1)
                raw, s = raw_and_sd(a_correct, a_trials, total)
                keep = (total > 0) & (a_trials > 0)
                observed = c[:, items].sum(axis=1) / np.maximum(total, 1)
                parts[d].append(np.stack([raw - observed, irt - observed, s])[:, keep])
        return {d: np.concatenate(parts[d], axis=1) for d in names}


def raw_and_sd(a_correct, a_trials, total) -> tuple[np.ndarray, np.ndarray]:
    """The raw anchor accuracy and its sampling sd with the finite-population correction (smoothed p̃)."""
    n = np.maximum(a_trials, 1).astype(float)
    smooth = (a_correct + 0.5) / (n + 1)
    fpc = np.clip(1 - n / np.maximum(total, 1), 0.0, 1.0)
    return a_correct / n, np.sqrt(smooth * (1 - smooth) / n * fpc)


def cv_minimum(e_raw: np.ndarray, e_irt: np.ndarray) -> tuple[float, float]:
    """(λ*, its standard error): λ* = Σ e_p d / Σ d², d = e_p − e_r, the least-squares slope of e_p on d (no
    intercept), which minimizes Σ (e_p − λ d)² = Σ (λ e_r + (1 − λ) e_p)²; se² = Σ (e_p − λ* d)² / (m − 1) / Σ d².
    (1, inf) when the two errors never differ."""
    diff = e_irt - e_raw
    denominator = float(np.sum(diff**2))
    if denominator <= 1e-18 or diff.size < 2:
        return 1.0, float("inf")
    lam = float(np.sum(e_irt * diff) / denominator)
    residual = e_irt - lam * diff
    return lam, float(np.sqrt(np.sum(residual**2) / (diff.size - 1) / denominator))


def blend_weight(e_raw: np.ndarray, e_irt: np.ndarray) -> float:
    """λ: the cross-validated minimum λ* moved towards 1 (raw) by its noise, within [0, 1].

    The blend departs from raw by δ = 1 − λ. An estimate δ̂ with standard error se gains over raw in expectation
    only if δ² exceeds se² (the excess squared error of using δ̂ is se² · E d², raw's is δ² · E d²); c · δ̂
    has the least expected squared error at c = δ² / (δ² + se²), estimated by max(0, 1 − se² / δ̂²) (the
    positive-part shrinkage). So λ = 1 − δ̂ · max(0, 1 − se² / δ̂²): raw where the calibration models cannot tell
    the IRT prediction from it, λ* where they clearly can."""
    lam, se = cv_minimum(e_raw, e_irt)
    delta = 1.0 - lam
    if not np.isfinite(se) or delta * delta <= se * se:
        return 1.0
    return float(np.clip(1.0 - delta * (1.0 - se * se / (delta * delta)), 0.0, 1.0))


def blended_prediction(a_correct, a_trials, total, irt, errors, level) -> tuple[tuple, dict]:
    """((predicted, low, high) per held-out model, {"lambda", "models", "scale"}) from the calibration models'
    cross-validated ``errors`` = (e_raw, e_irt, s_raw) of this benchmark."""
    e_raw, e_irt, s_cal = errors
    m = e_raw.size
    if m < MIN_MODELS:
        return anchor_accuracy_interval(a_correct, a_trials, total, level), {"lambda": 1.0, "models": m,
                                                                              "scale": None}
    lam = blend_weight(e_raw, e_irt)
    z = (lam * e_raw + (1 - lam) * e_irt) / np.maximum(s_cal, 1e-6)
    scale = float(np.sqrt(np.sum(z**2) / (m - 1)))
    raw, s = raw_and_sd(a_correct, a_trials, total)
    predicted = np.clip(lam * raw + (1 - lam) * irt, 0.0, 1.0)
    half = float(student_t.ppf((1 + level) / 2, m - 1)) * scale * s
    return (predicted, np.clip(predicted - half, 0, 1), np.clip(predicted + half, 0, 1)), \
        {"lambda": lam, "models": m, "scale": scale}
