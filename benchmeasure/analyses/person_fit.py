"""Person (model) fit of the 1PL on one batch of posterior draws: the mirror of :mod:`.item_fit` across the item
difficulty ordering.

* **slope** — the score of a slope on −b: S = Σ_i (y − K p)(b̄ − b_i); z = S / √(Σ K p (1 − p)(b_i − b̄)²); one-sided
  tail Φ(z): small for a model that does better on hard items and worse on easy ones than its ability predicts
  (mis-scored results, a shuffled row, answers aligned to the wrong items).
* **curve** — observed vs expected successes by difficulty band (items sorted by posterior-mean b into H bands),
  X² with the same continuity correction and χ²(H′) tail as the items'.
* **lz** — the standardized log-likelihood of the model's row (Drasgow, Levine & Williams, 1985), computed at each
  draw and averaged; its lower tail Φ(lz) is the classic person-fit p-value (the draws stand in for lz*'s
  correction for an estimated θ).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaincc, logit, ndtr

MODEL_SUMS = ("p_slope", "p_curve", "p_lz", "z_slope", "chi2", "lz")


def difficulty_bands(b_mean: np.ndarray, n_bands: int) -> np.ndarray:
    """(N, H) 0/1 membership: items sorted by b and cut into ``n_bands`` bands of (nearly) equal size."""
    order = np.argsort(b_mean, kind="stable")
    bands = np.zeros((len(b_mean), n_bands))
    for h, members in enumerate(np.array_split(order, n_bands)):
        bands[members, h] = 1.0
    return bands


def model_batch(y: np.ndarray, k: np.ndarray, p: np.ndarray, b: np.ndarray, bands: np.ndarray) -> dict:
    """Per-model statistics for a batch of draws: ``{name: (M,) sum over the batch}`` for :data:`MODEL_SUMS`."""
    kp = k * p
    var = kp * (1.0 - p)
    resid = y - kp
    weight = np.maximum(k.sum(axis=1), 1)
    centre = np.einsum("bn,mn->bm", b, k) / weight                     # (B, M)
    db = centre[:, :, None] - b[:, None, :]                              # b̄ − b: high on easy items
    score = (resid * db).sum(axis=2)
    info = (var * db ** 2).sum(axis=2)
    z = np.where(info > 1e-12, score / np.sqrt(np.maximum(info, 1e-12)), 0.0)
    observed = y @ bands                                                  # (M, H)
    expected = kp @ bands                                                 # (B, M, H)
    variance = var @ bands
    present = variance > 1e-12
    dev = np.maximum(np.abs(observed[None] - expected) - 0.5, 0.0)
    chi2 = np.where(present, dev ** 2 / np.where(present, variance, 1.0), 0.0).sum(axis=2)
    df = np.maximum(present.sum(axis=2), 1)
    lg = logit(p)
    l0 = (y * lg + k * np.log1p(-p)).sum(axis=2)
    mean = (kp * lg + k * np.log1p(-p)).sum(axis=2)
    sd = np.sqrt(np.maximum((var * lg ** 2).sum(axis=2), 1e-12))
    lz = (l0 - mean) / sd
    values = {"p_slope": ndtr(z), "p_curve": gammaincc(df / 2.0, chi2 / 2.0), "p_lz": ndtr(lz), "z_slope": z,
              "chi2": chi2, "lz": lz}
    return {name: value.sum(axis=0) for name, value in values.items()}
