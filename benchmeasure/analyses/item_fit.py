"""Item fit of the 1PL on one batch of posterior draws, and the multiplicity adjustment.

For draw s (θ_s, b_s) the fitted probability of cell (j, i) is p = g_i + (1 − g_i)·σ(θ_sj − b_si); a cell has K_ji
trials (0: absent) and y_ji correct. Every statistic is a *realized discrepancy* D(y; θ_s, b_s), and its p-value
is the conditional tail probability of D under replicated data y_rep ~ Binomial(K, p) from that draw, averaged
over the draws (a posterior predictive p-value whose replication step is integrated analytically, so its tail is
resolved far below 1 / draws — which the false discovery rate over thousands of items needs):

* **curve** — observed vs expected successes by ability group (models sorted by posterior-mean θ into G groups):
  X² = Σ_g (|O_g − E_g| − ½)₊² / V_g with E_g = Σ K p, V_g = Σ K p (1 − p); tail χ²(G′), G′ the groups with an
  answer. It sees the shape of the response curve (too flat, too steep, reversed, a bump).
* **slope** — the score of a slope on θ at the 1PL's slope 1: S = Σ_j (y − K p)(θ_j − θ̄), θ̄ the K-weighted mean
  of the models that answered; z = S / √(Σ K p (1 − p)(θ_j − θ̄)²); one-sided tail Φ(z): small when success
  rises as ability falls (a wrong key or a grader that fails the right answer). Where z < −2.5 the tail is the
  saddlepoint (Lugannani–Rice) tail of the weighted binomial sum, not the normal one.
* **unsolved** — probability that no model solves the item in any trial, Π (1 − p)^K, for items nobody solved
  (descriptive: the fit gives an all-zero item a large b, so this is rarely small; the check counts never-solved
  items against the replicated count instead).
* **infit / outfit** — the Rasch mean-squares (descriptive, about 1 under the model), averaged over the draws.

``check-fit`` (:mod:`.model_fit`) runs :func:`item_batch` over the fit's joint draws of (θ, b);
:func:`fixed_ability_fit` runs the same function for items calibrated against abilities held fixed (BenchFill's
online calibration), over draws of each item's b alone.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, gammaincc, gammaln, ndtr

#: Statistics accumulated over draws (sums of per-draw values), one array of shape (N,) each.
ITEM_SUMS = ("p_curve", "p_slope", "p_unsolved", "chi2", "z_slope", "infit", "outfit")


class Cells:
    """The fitted cells of a batch of draws, shared by the item and model statistics (each (B, M, N)):
    ``p``, ``kp`` = K p, ``var`` = K p (1 − p), ``resid`` = y − K p, ``log_q`` = log(1 − p), ``logit`` = logit p."""

    def __init__(self, y: np.ndarray, k: np.ndarray, theta: np.ndarray, b: np.ndarray, guessing: np.ndarray):
        eta = theta[:, :, None] - b[:, None, :]
        p = expit(eta)
        if guessing.any():
            p = guessing[None, None, :] + (1.0 - guessing[None, None, :]) * p
        self.p = p = np.clip(p, 1e-12, 1.0 - 1e-12)
        self.kp = k * p
        self.var = self.kp * (1.0 - p)
        self.resid = y - self.kp
        self.log_q = np.log1p(-p)
        self.logit = np.log(p) - self.log_q if guessing.any() else np.clip(eta, -27.6, 27.6)


def default_groups(n_models: int) -> int:
    """Ability groups for the item curve: about 3 models a group, 2 to 6 groups."""
    return int(min(6, max(2, n_models // 3)))


def group_sums(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(B, G, N) sums of (B, M, N) ``values`` over the models of each of the (G, M) ``groups``."""
    batch, models, items = values.shape
    return (groups @ values.transpose(1, 0, 2).reshape(models, batch * items)).reshape(-1, batch, items
                                                                                      ).transpose(1, 0, 2)


def item_batch(y: np.ndarray, k: np.ndarray, cells: Cells, theta: np.ndarray, groups: np.ndarray,
               unsolved: np.ndarray) -> dict:
    """Per-item statistics for a batch of draws: ``{name: (N,) sum over the batch}`` for :data:`ITEM_SUMS`.

    ``y``, ``k`` (M, N) counts and trials (0 = absent), ``cells`` the batch's :class:`Cells`, ``theta`` (B, M),
    ``groups`` (G, M) 0/1 membership of the ability groups, ``unsolved`` (N,) bool: no success in any cell."""
    kp, var, resid = cells.kp, cells.var, cells.resid
    # curve: ability groups
    observed = groups @ y                                       # (G, N)
    expected = group_sums(groups, kp)
    variance = group_sums(groups, var)
    present = variance > 1e-12
    dev = np.maximum(np.abs(observed[None] - expected) - 0.5, 0.0)
    chi2 = np.where(present, dev ** 2 / np.where(present, variance, 1.0), 0.0).sum(axis=1)   # (B, N)
    df = np.maximum(present.sum(axis=1), 1)
    p_curve = gammaincc(df / 2.0, chi2 / 2.0)
    # slope on θ
    weight = k.sum(axis=0)                                      # (N,)
    centre = np.einsum("bm,mn->bn", theta, k) / np.maximum(weight, 1)
    # Σ_j r (θ_j − c) and Σ_j v (θ_j − c)² from moments, without a (B, M, N) array of θ_j − c
    score = np.einsum("bmn,bm->bn", resid, theta) - centre * resid.sum(axis=1)
    v0, v1, v2 = var.sum(axis=1), np.einsum("bmn,bm->bn", var, theta), np.einsum("bmn,bm->bn", var, theta ** 2)
    info = np.maximum(v2 - 2 * centre * v1 + centre ** 2 * v0, 0.0)
    z = np.where(info > 1e-12, score / np.sqrt(np.maximum(info, 1e-12)), 0.0)
    p_slope = ndtr(z)
    # the normal tail is optimistic for a skewed sum (a strong model failing an easy item): the saddlepoint tail
    # replaces it wherever a draw of the batch puts the item in the lower tail
    low = np.flatnonzero((z < -2.5).any(axis=0))
    if low.size:
        w = theta[:, :, None] - centre[:, None, low]
        observed_sum = (w * y[None, :, low]).sum(axis=1)
        p_slope[:, low] = saddlepoint_lower(observed_sum, w, cells.p[:, :, low], k[:, low], y=y[:, low])
    # nobody solved it: the fitted probability of that
    p_unsolved = np.where(unsolved[None, :], np.exp(np.einsum("bmn,mn->bn", cells.log_q, k)), 1.0)
    # infit / outfit
    n_cells = np.maximum((k > 0).sum(axis=0), 1)
    squared = resid ** 2
    outfit = (squared / np.maximum(var, 1e-12) * (k > 0)).sum(axis=1) / n_cells
    infit = squared.sum(axis=1) / np.maximum(v0, 1e-12)
    values = {"p_curve": p_curve, "p_slope": p_slope, "p_unsolved": p_unsolved, "chi2": chi2, "z_slope": z,
              "infit": infit, "outfit": outfit}
    return {name: value.sum(axis=0) for name, value in values.items()}


def point_biserial(y: np.ndarray, k: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Per item, the correlation across the models that answered of their success rate y/K with θ (posterior
    mean), each model weighted by its trials; 0 where it is undefined (one model, or a constant column)."""
    w = k.astype(float)
    total = np.maximum(w.sum(axis=0), 1e-12)
    rate = np.where(k > 0, y / np.maximum(k, 1), 0.0)
    mean_rate = (w * rate).sum(axis=0) / total
    mean_theta = (w * theta[:, None]).sum(axis=0) / total
    dr = np.where(k > 0, rate - mean_rate, 0.0)
    dt = np.where(k > 0, theta[:, None] - mean_theta, 0.0)
    cov = (w * dr * dt).sum(axis=0)
    scale = np.sqrt((w * dr ** 2).sum(axis=0) * (w * dt ** 2).sum(axis=0))
    return np.where(scale > 1e-12, cov / np.maximum(scale, 1e-12), 0.0)


def ability_groups(theta_mean: np.ndarray, n_groups: int) -> np.ndarray:
    """(G, M) 0/1 membership: models sorted by θ and cut into ``n_groups`` groups of (nearly) equal size."""
    order = np.argsort(theta_mean, kind="stable")
    groups = np.zeros((n_groups, len(theta_mean)))
    for g, members in enumerate(np.array_split(order, n_groups)):
        groups[g, members] = 1.0
    return groups


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg q-values (adjusted p-values) of ``p``, in the same order."""
    p = np.asarray(p, dtype=float)
    n = p.size
    if n == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    ranked = p[order] * n / np.arange(1, n + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(n)
    out[order] = np.minimum(q, 1.0)
    return out


def combined(*p_values: np.ndarray) -> np.ndarray:
    """One p-value from several tests of the same unit: Bonferroni's min × count, capped at 1."""
    stacked = np.vstack(p_values)
    return np.minimum(stacked.min(axis=0) * stacked.shape[0], 1.0)


def misfit_reason(against: bool, pbis: float, p_curve: float, p_slope: float) -> str:
    """Why a flagged item misfits, in words: success rising as ability falls (``against``), else the test with
    the smaller p-value (the curve by ability group, or a slope flatter than the 1PL's)."""
    if against:
        return f"success rises as ability falls (point-biserial {pbis:+.2f}): wrong key or grader?"
    return "response curve misfits by ability group" if p_curve <= p_slope else "response curve flatter than the 1PL's"


def saddlepoint_lower(s: np.ndarray, w: np.ndarray, p: np.ndarray, k: np.ndarray, steps: int = 20,
                      y: np.ndarray | None = None) -> np.ndarray:
    """P(Σ_j w_j Y_j ≤ s) for independent Y_j ~ Binomial(k_j, p_j), by the Lugannani–Rice saddlepoint formula.

    ``w``, ``p`` (B, M, n), ``k`` (M, n), ``s`` (B, n). The normal tail of such a weighted sum is optimistic when a
    few large weights meet extreme p (a strong model failing an easy item); the saddlepoint tail is not. The
    saddlepoint t solves K'(t) = s for the cumulant generating function K(t) = Σ k log(1 − p + p e^{t w}).

    ``y`` (M, n), the observed counts whose sum is ``s``: the tail is then at least the probability of that outcome
    itself (the atom the continuous approximation misses near the edge of the support)."""
    logit_p = np.log(p) - np.log1p(-p)
    low = (k[None] * np.minimum(w, 0.0)).sum(axis=1)
    high = (k[None] * np.maximum(w, 0.0)).sum(axis=1)
    s = np.clip(s, low + 1e-9 * (high - low), high - 1e-9 * (high - low))
    # K' is increasing: Newton steps kept inside a bracket [lo, hi] that bisection shrinks when a step leaves it
    lo, hi = np.full_like(s, -60.0), np.full_like(s, 60.0)
    kw = k[None] * w
    q = p
    mean = (kw * q).sum(axis=1)
    t = np.clip((s - mean) / np.maximum((kw * w * q * (1.0 - q)).sum(axis=1), 1e-300), -60.0, 60.0)  # one step from 0
    for _ in range(steps):
        q = expit(logit_p + t[:, None, :] * w)
        gap = (kw * q).sum(axis=1) - s
        lo, hi = np.where(gap < 0, t, lo), np.where(gap > 0, t, hi)
        second = np.maximum((kw * w * q * (1.0 - q)).sum(axis=1), 1e-300)
        newton = t - gap / second
        t_next = np.where((newton > lo) & (newton < hi), newton, 0.5 * (lo + hi))
        if np.abs(t_next - t).max() < 1e-7:
            t = t_next
            break
        t = t_next
    eta = logit_p + t[:, None, :] * w
    # K(t) = Σ k [log(1 − p + p e^{tw})] = Σ k [log1p(e^{η}) − log1p(e^{logit p})], written stably
    cgf = (k[None] * (np.logaddexp(0.0, eta) - np.logaddexp(0.0, logit_p))).sum(axis=1)
    q = expit(eta)
    second = np.maximum((k[None] * w ** 2 * q * (1.0 - q)).sum(axis=1), 1e-300)
    r = np.sign(t) * np.sqrt(np.maximum(2.0 * (t * s - cgf), 0.0))
    u = t * np.sqrt(second)
    small = np.abs(r) < 1e-3
    safe_r = np.where(small, 1.0, r)
    safe_u = np.where(np.abs(u) < 1e-12, 1.0, u)
    tail = ndtr(r) + np.exp(-0.5 * r ** 2) / np.sqrt(2 * np.pi) * (1.0 / safe_r - 1.0 / safe_u)
    normal = ndtr((s - (k[None] * w * p).sum(axis=1)) / np.sqrt(np.maximum(
        (k[None] * w ** 2 * p * (1 - p)).sum(axis=1), 1e-300)))
    tail = np.clip(np.where(small, normal, tail), 0.0, 1.0)
    if y is not None:
        log_pmf = (gammaln(k + 1) - gammaln(y + 1) - gammaln(k - y + 1))[None] + y[None] * np.log(p) \
            + (k - y)[None] * np.log1p(-p)
        tail = np.maximum(tail, np.exp(log_pmf.sum(axis=1)))
    return tail


def fixed_ability_fit(y, k, theta, b_draws, guessing=0.0, groups: int | None = None) -> dict:
    """check-fit's item test for items answered by models whose abilities θ are held fixed.

    BenchFill calibrates a new item with the panel's θ fixed at their posterior means (:mod:`benchmeasure.irt.
    anchored`); the item's posterior is then b's alone. With θ_s = θ for every draw s, :func:`item_batch` on draws
    b_s of that posterior gives the same posterior predictive p-values as ``check-fit`` gives an item of a fit
    (the replication step integrated analytically, averaged over the draws), with the ability groups made the
    same way (θ sorted into :func:`default_groups` groups).

    ``y``, ``k`` (M, N) successes and trials (0: absent); ``theta`` (M,); ``b_draws`` (S, N) draws (or
    quantiles) of each item's b; ``guessing`` a float or (N,). Returns (N,) arrays: ``p_curve``, ``p_slope``,
    ``z_slope``, ``chi2``, ``infit``, ``outfit``, ``point_biserial`` and ``p_value`` = min(1, 2·min(p_curve,
    p_slope)), check-fit's ``p_value`` (Bonferroni over the curve and slope tests).
    """
    y = np.asarray(y, dtype=float)
    k = np.asarray(k, dtype=float)
    theta = np.asarray(theta, dtype=float)
    b = np.asarray(b_draws, dtype=float)
    n_models, n_items = y.shape
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (n_items,))
    membership = ability_groups(theta, min(groups or default_groups(n_models), n_models))
    thetas = np.broadcast_to(theta, (b.shape[0], n_models))
    unsolved = (y.sum(axis=0) == 0) & (k.sum(axis=0) > 0)
    sums = item_batch(y, k, Cells(y, k, thetas, b, g), thetas, membership, unsolved)
    out = {name: sums[name] / b.shape[0] for name in ("p_curve", "p_slope", "z_slope", "chi2", "infit", "outfit")}
    out["point_biserial"] = point_biserial(y, k, theta)
    out["p_value"] = combined(out["p_curve"], out["p_slope"])
    return out
