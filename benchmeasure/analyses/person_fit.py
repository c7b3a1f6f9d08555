"""Person (model) fit of the 1PL on one batch of posterior draws: the mirror of :mod:`.item_fit` across the item
difficulty ordering.

* **slope** — the score of a slope on −b: S = Σ_i (y − K p)(b̄ − b_i); z = S / √(Σ K p (1 − p)(b_i − b̄)²); one-sided
  tail Φ(z): small for a model that does better on hard items and worse on easy ones than its ability predicts
  (mis-scored results, a shuffled row, answers aligned to the wrong items).
* **curve** — observed vs expected successes by difficulty band (items sorted by posterior-mean b into H bands),
  X² with the same continuity correction and χ²(H′) tail as the items' (descriptive: not part of the flag, since on
  thousands of items it rejects the 1PL's common slope for most real LLMs).
* **lz** — the standardized log-likelihood of the model's row (Drasgow, Levine & Williams, 1985), computed at each
  draw and averaged; its lower tail Φ(lz) is the classic person-fit p-value (the draws stand in for lz*'s
  correction for an estimated θ).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaincc, ndtr

MODEL_SUMS = ("p_slope", "p_curve", "p_lz", "z_slope", "chi2", "lz")


def difficulty_bands(b_mean: np.ndarray, n_bands: int) -> np.ndarray:
    """(N, H) 0/1 membership: items sorted by b and cut into ``n_bands`` bands of (nearly) equal size."""
    order = np.argsort(b_mean, kind="stable")
    bands = np.zeros((len(b_mean), n_bands))
    for h, members in enumerate(np.array_split(order, n_bands)):
        bands[members, h] = 1.0
    return bands


def model_batch(y: np.ndarray, k: np.ndarray, cells, b: np.ndarray, bands: np.ndarray) -> dict:
    """Per-model statistics for a batch of draws: ``{name: (M,) sum over the batch}`` for :data:`MODEL_SUMS`;
    ``cells`` the batch's :class:`.item_fit.Cells`, ``bands`` (N, H) 0/1 difficulty bands."""
    kp, var, resid = cells.kp, cells.var, cells.resid
    batch, models, items = kp.shape
    weight = np.maximum(k.sum(axis=1), 1)
    centre = np.einsum("bn,mn->bm", b, k) / weight                     # (B, M)
    # Σ_i r (c − b_i) and Σ_i v (b_i − c)² from moments, without a (B, M, N) array of c − b_i
    score = centre * resid.sum(axis=2) - np.einsum("bmn,bn->bm", resid, b)
    v0, v1, v2 = var.sum(axis=2), np.einsum("bmn,bn->bm", var, b), np.einsum("bmn,bn->bm", var, b ** 2)
    info = np.maximum(v2 - 2 * centre * v1 + centre ** 2 * v0, 0.0)
    z = np.where(info > 1e-12, score / np.sqrt(np.maximum(info, 1e-12)), 0.0)
    observed = y @ bands                                                  # (M, H)
    expected = (kp.reshape(-1, items) @ bands).reshape(batch, models, -1)   # (B, M, H)
    variance = (var.reshape(-1, items) @ bands).reshape(batch, models, -1)
    present = variance > 1e-12
    dev = np.maximum(np.abs(observed[None] - expected) - 0.5, 0.0)
    chi2 = np.where(present, dev ** 2 / np.where(present, variance, 1.0), 0.0).sum(axis=2)
    df = np.maximum(present.sum(axis=2), 1)
    lg = cells.logit
    base = (k * cells.log_q).sum(axis=2)
    l0 = (y * lg).sum(axis=2) + base
    mean = (kp * lg).sum(axis=2) + base
    sd = np.sqrt(np.maximum((var * lg ** 2).sum(axis=2), 1e-12))
    lz = (l0 - mean) / sd
    values = {"p_slope": ndtr(z), "p_curve": gammaincc(df / 2.0, chi2 / 2.0), "p_lz": ndtr(lz), "z_slope": z,
              "chi2": chi2, "lz": lz}
    return {name: value.sum(axis=0) for name, value in values.items()}
