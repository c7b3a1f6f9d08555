"""Quantiles of a mixture of normals (the predicted accuracy's interval in :func:`.anchored.predict_accuracy`):
NumPy only, no SciPy import on the scoring path."""

from __future__ import annotations

import math

import numpy as np


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    """Φ(x) to within 1.5e-7 (Abramowitz & Stegun 7.1.26 for erf; NumPy only)."""
    u = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * u)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * np.exp(-u * u)
    return 0.5 * (1.0 + np.sign(x) * erf)


def mixture_quantiles(mu: np.ndarray, sd: np.ndarray, mass: np.ndarray, probs, points: np.ndarray) -> list:
    """Quantiles of the normal mixture Σ_k mass_k·N(mu_k, sd_k²), read off its CDF on ``points`` by linear
    interpolation (what ``np.interp(probs, cdf, points)`` gives), the CDF evaluated only where a bisection over the
    grid needs it: about 2·log2(len(points)) points instead of every one (the mixture has a component per grid
    cell of θ, so the whole grid cost most of a score)."""
    known: dict = {}

    def cdf(indices) -> None:
        indices = [j for j in indices if j not in known]
        if not indices:
            return
        at = points[indices]
        total = np.zeros(len(indices))
        for start in range(0, mu.size, 256):
            block = slice(start, start + 256)
            total += mass[block] @ _normal_cdf((at[None, :] - mu[block, None]) / np.maximum(sd[block, None], 1e-12))
        known.update(zip(indices, total))

    last = points.size - 1
    cdf([0, last])
    out = []
    for q in probs:
        if q <= known[0]:
            out.append(float(points[0]))
            continue
        if q >= known[last]:
            out.append(float(points[last]))
            continue
        left, right = 0, last   # CDF(left) ≤ q < CDF(right)
        while right - left > 1:
            middle = (left + right) // 2
            cdf([middle])
            left, right = (middle, right) if known[middle] <= q else (left, middle)
        step = known[right] - known[left]
        out.append(float(points[left] + (q - known[left]) * (points[right] - points[left]) / step))
    return out
