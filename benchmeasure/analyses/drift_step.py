"""One model's step test: is it better on the items before an unknown point τ of an ordered covariate?

Model: ``P(correct) = σ(a_i·(θ + δ·[x_i < τ] − b_i))`` with the model's own responses left out of ``b``
(:mod:`benchmeasure.analyses.drift_fit`). τ runs over the boundaries between consecutive bins (months) that
leave at least ``min_side`` answered items on each side.

* Search statistic: the largest signed score (Rao) statistic over τ, ``Z_τ = U_τ / √I_τ`` with ``U_τ`` the summed
  residuals ``a·(y − n·p)`` of the items before τ at the no-step fit and ``I_τ`` their information with θ profiled
  out. It is the LR statistic's one-step form and costs one cumulative sum per replicate, so it is what the
  bootstrap recomputes. One-sided: contamination makes a model better on older items (δ > 0).
* Calibration for the search: parametric bootstrap under no step — the model's responses simulated from its
  fitted θ and the leave-out b, with the same cells, K per cell and holes, each replicate judged against one
  draw of what the leave-out b and the slopes may be off by (:func:`step_test`); θ profiled by the projection,
  the max over τ redone, vectorized over replicates, in batches until the p-value is resolved.
* Estimate: τ̂ maximizes the exact profile likelihood ratio over τ (θ_pre and θ_post each by 1-D Newton), among
  the τ with δ > 0 when there is one; δ̂ = θ_pre − θ_post with a Wald interval at τ̂.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmeasure.analyses.drift_fit import sigmoid

Z_95 = 1.959963984540054


@dataclass
class StepResult:
    tau_bin: int          # first bin after the step (index into the bins), -1 when no τ can be tested
    delta: float
    delta_lo: float
    delta_hi: float
    lr: float             # exact profile LR statistic at τ̂
    z_max: float          # the search statistic
    p_value: float
    replicates: int
    theta: float          # no-step θ
    lr_profile: np.ndarray  # LR at each candidate (NaN where not tested)
    theta_pre: float = float("nan")
    theta_post: float = float("nan")


def fit_theta(y, n, b, a, theta0, steps: int = 8, ridge: float = 1e-3):
    """θ per row of y (R, N) against fixed b, by Newton from ``theta0`` (R,)."""
    theta = np.array(theta0, dtype=float)
    for _ in range(steps):
        p = sigmoid(a * (theta[:, None] - b))
        grad = (a * (y - n * p)).sum(1) - ridge * theta
        hess = (a * a * n * p * (1 - p)).sum(1) + ridge
        theta = theta + np.clip(grad / hess, -2, 2)
    return theta


def score_max(y, n, p, a, onehot, candidates):
    """Largest Z_τ over the candidate bins, and where, for each row of y (R, N), at the no-step fit's p.

    θ is profiled out by projection (the efficient score ``U_τ − (W_τ / W)·U``), so a replicate needs no refit.
    ``p`` and ``a`` are (N,), or (R, N) when each row is judged against difficulties and slopes of its own.
    """
    w = (a * a * n * p * (1 - p)) @ onehot              # (B,) or (R, B)
    r = (a * (y - n * p)) @ onehot                      # (R, B)
    u = np.cumsum(r, axis=1)
    wc = np.cumsum(np.atleast_2d(w), axis=1)
    pre = wc[:, candidates - 1]
    share = pre / wc[:, -1:]
    info = np.maximum(pre - pre * share, 1e-12)
    z = (u[:, candidates - 1] - share * u[:, -1:]) / np.sqrt(info)
    k = z.argmax(axis=1)
    return z[np.arange(len(z)), k], k


def subset_theta(y, n, b, a, masks, theta0, steps: int = 30, prior_sd: float = 5.0):
    """θ fitted on each mask's items (masks: (T, N) bool), prior N(theta0, prior_sd²); with its information."""
    theta = np.full(masks.shape[0], theta0, dtype=float)
    m = masks.astype(float)
    for _ in range(steps):
        p = sigmoid(a * (theta[:, None] - b))
        grad = (m * a * (y - n * p)).sum(1) - (theta - theta0) / prior_sd**2
        hess = (m * a * a * n * p * (1 - p)).sum(1) + 1 / prior_sd**2
        step = np.clip(grad / hess, -2, 2)
        theta = theta + step
        if np.abs(step).max() < 1e-8:
            break
    p = sigmoid(a * (theta[:, None] - b))
    info = (m * a * a * n * p * (1 - p)).sum(1) + 1 / prior_sd**2
    return theta, info


def _loglik(y, n, b, a, theta, masks):
    eta = a * (theta[:, None] - b)
    ll = y * eta - n * np.logaddexp(0.0, eta)
    return (masks * ll).sum(1)


def profile(y, n, b, a, bins, candidates, theta_null):
    """Exact LR statistic, δ̂ and its standard error at each candidate τ (observed data only)."""
    pre = bins[None, :] < candidates[:, None]
    post = ~pre
    t_pre, i_pre = subset_theta(y, n, b, a, pre, theta_null)
    t_post, i_post = subset_theta(y, n, b, a, post, theta_null)
    null = _loglik(y, n, b, a, np.array([theta_null]), np.ones((1, len(b))))[0]
    lr = 2 * (_loglik(y, n, b, a, t_pre, pre) + _loglik(y, n, b, a, t_post, post) - null)
    return np.maximum(lr, 0.0), t_pre - t_post, np.sqrt(1 / i_pre + 1 / i_post), t_pre, t_post


def simulate_counts(rng, n, p, size: int) -> np.ndarray:
    """(size, N) binomial counts of n trials at p, by inverting each cell's CDF (K ≤ 64), else NumPy's sampler."""
    k_max = int(n.max(initial=0))
    if k_max > 64:
        return rng.binomial(n.astype(np.int64), p, size=(size, len(p))).astype(float)
    from scipy.stats import binom

    k = np.arange(k_max)
    cdf = binom.cdf(k[:, None], n[None, :], p[None, :])          # (K, N); P(count ≤ k)
    u = rng.random((size, len(p)))
    counts = np.zeros((size, len(p)))
    for level in cdf:
        counts += u > level
    return counts


def candidates_of(bins: np.ndarray, n_bins: int, min_side: int) -> np.ndarray:
    """Bins t (1..B-1) such that at least ``min_side`` items lie on each side of ``bins < t``."""
    per_bin = np.bincount(bins, minlength=n_bins)
    before = np.cumsum(per_bin)[:-1]
    t = np.arange(1, n_bins)
    keep = (before >= min_side) & (before[-1] + per_bin[-1] - before >= min_side)
    return t[keep]


def step_test(y, n, b, a, bins, n_bins: int, rng, min_side: int = 20, batch: int = 500,
              max_replicates: int = 4000, resolve: int = 20, error=None, allowed=None) -> StepResult:
    """The step test of one model on its answered items (arrays over those items; ``bins`` int in [0, n_bins)).

    ``allowed``: the bins τ may be (the months near the model's cut-off); the search, its bootstrap and τ̂ are
    then over those alone, so p is calibrated for the smaller search.

    ``error``: how the leave-out difficulties and the slopes may be off (a ``drift_fit.LeaveOutError`` over these
    items). The observed data came from the true b and a and are judged against the estimates; each replicate
    mirrors that: its responses come from (θ̂, b, a) and it is judged against (a + δa, b + δb), one draw of the
    estimates' error. (Drawing the *responses* around b and judging against b instead flips the sign of the
    error's second-order effect, E σ(x − e) − σ(x) ≈ ½σ''(x)·var e, which lines up with the date when difficulty
    trends with it: easy old items, hard new ones.)"""
    from benchmeasure.analyses.drift_fit import judged_theta

    y = np.asarray(y, dtype=float)
    n = np.asarray(n, dtype=float)
    theta = judged_theta(y, n, b, a)
    candidates = candidates_of(bins, n_bins, min_side)
    if allowed is not None:
        candidates = candidates[np.isin(candidates, allowed)]
    if candidates.size == 0:
        nan = float("nan")
        return StepResult(-1, nan, nan, nan, nan, nan, nan, 0, theta, np.full(n_bins - 1, nan))
    onehot = np.zeros((len(b), n_bins))
    onehot[np.arange(len(b)), bins] = 1.0
    p = sigmoid(a * (theta - b))
    z_obs = float(score_max(y[None, :], n, p, a, onehot, candidates)[0][0])
    exceed = done = 0
    while done < max_replicates:
        size = min(batch, max_replicates - done)
        sims = simulate_counts(rng, n, p, size)
        if error is None:
            z_sim, _ = score_max(sims, n, p, a, onehot, candidates)
        else:
            da, db = error.draw(rng, size)
            judged_a = np.maximum(a + da, 0.05)
            z_sim, _ = score_max(sims, n, sigmoid(judged_a * (theta - b - db)), judged_a, onehot, candidates)
        exceed += int((z_sim >= z_obs - 1e-12).sum())
        done += size
        if exceed >= resolve:
            break
    lr, delta, se, t_pre, t_post = profile(y, n, b, a, bins, candidates, theta)
    positive = delta > 0
    pick = np.flatnonzero(positive)[lr[positive].argmax()] if positive.any() else int(lr.argmax())
    full = np.full(n_bins - 1, np.nan)
    full[candidates - 1] = lr
    d, s = float(delta[pick]), float(se[pick])
    return StepResult(int(candidates[pick]), d, d - Z_95 * s, d + Z_95 * s, float(lr[pick]), z_obs,
                      (1 + exceed) / (1 + done), done, theta, full, float(t_pre[pick]), float(t_post[pick]))


def bin_offsets(y, n, b, a, theta: float, bins, n_bins: int):
    """Per bin: items, the model's logit offset from its no-step θ (one Newton step from 0) and its s.e."""
    p = sigmoid(a * (theta - b))
    r = np.bincount(bins, a * (y - n * p), n_bins)
    w = np.bincount(bins, a * a * n * p * (1 - p), n_bins)
    items = np.bincount(bins, minlength=n_bins)
    observed = np.bincount(bins, y, n_bins)
    expected = np.bincount(bins, n * p, n_bins)
    trials = np.bincount(bins, n, n_bins)
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = np.where(w > 0, r / w, np.nan)
        se = np.where(w > 0, 1 / np.sqrt(w), np.nan)
    return items, trials, observed, expected, offset, se


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """BH q-values (NaN entries stay NaN and are not counted)."""
    p = np.asarray(p, dtype=float)
    q = np.full_like(p, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0:
        return q
    order = ok[np.argsort(p[ok])]
    ranked = p[order] * ok.size / np.arange(1, ok.size + 1)
    q[order] = np.minimum(np.minimum.accumulate(ranked[::-1])[::-1], 1.0)
    return q
