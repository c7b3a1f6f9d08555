"""Partially non-centred coordinates of the suite's abilities: centred where the data resolve Σ, non-centred where not.

Why (issue 31 item 3). On MMLU-Pro (29 models × 14 categories) the centred coordinates of
:mod:`benchmeasure.suite.mirt` diverge at draws whose covariance Σ = diag(s) R diag(s) is nearly singular: each
ability is measured to about ±0.1, while Σ's thinnest direction has an sd of about 0.04 (docs/suites.md). Along such
a direction the 29 deviations θ_j − θ̄ are held by Σ, not by the data, and with Σ they form a funnel; the fully
non-centred coordinates (θ_j = μ + diag(s) L z_j) remove it but mix worse along the directions the data do resolve.
This module is centred along the second kind of direction and non-centred along the first (Papaspiliopoulos,
Roberts & Sköld 2007, "A general framework for the parametrization of hierarchical models", Statist. Sci. 22).

The map. With μ integrated out, θ's density given Σ (:func:`benchmeasure.suite.prior.theta_marginal_logp`) factors
over an orthonormal Helmert basis of the models: √M θ̄ ~ N(0, Σ + τ²M I), and the M − 1 contrasts
h_r = Σ_j H_rj θ_j are independent N(0, Σ). Fix an invertible B × B matrix T (:func:`pilot_basis`, from the data
alone) whose first B − r columns span the directions the data resolve, and write each contrast as h_r = T w_r,
w_r ~ N(0, S), S = T⁻¹ Σ T⁻ᵀ = L Lᵀ (Cholesky, blocks L₁₁, L₂₁, L₂₂ in the order strong, weak). The
coordinates are

    θ̄ (B numbers),    w_r,strong (M − 1 rows of B − r, centred),    z_r (M − 1 rows of r, non-centred),
    w_r,weak = L₂₁ L₁₁⁻¹ w_r,strong + L₂₂ z_r          (the conditional of the weak part given the strong part)

and θ = 1 θ̄ᵀ + Hᵀ [w_r]ᵣ Tᵀ. The map (θ̄, w_strong, z) → θ is linear given Σ, with log Jacobian
(M − 1) Σ log diag L₂₂ plus a constant, so the density in these coordinates is the model's density of θ plus that
term (:func:`partial_abilities`): the posterior is exactly the model's, whatever T and r are; T only decides how
well NUTS mixes. With r = 0 the coordinates are the centred ones rotated; with r = B the contrasts are non-centred.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.base.errors import fail


def helmert(n: int) -> np.ndarray:
    """The (n − 1) × n orthonormal contrasts of n rows: each row sums to 0, rows orthonormal."""
    h = np.zeros((n - 1, n))
    for r in range(1, n):
        h[r - 1, :r] = 1.0
        h[r - 1, r] = -float(r)
        h[r - 1] /= np.sqrt(r * (r + 1.0))
    return h


def pilot_basis(counts, trials, item_benchmark, n_benchmarks: int, *, threshold: float | None = None):
    """T and r of the map above, from the data alone (no posterior, so the coordinates are fixed before NUTS).

    For each model and benchmark, a rough ability θ̂_jk = logit((y + ½)/(n + 1)) from its summed correct answers y
    out of n trials, with sampling variance v_jk = 1/((n + 1) p(1 − p)); a model with no trial in benchmark k gets
    that benchmark's mean (no deviation, no information). With N = diag(mean_j v_jk) the average noise and E the
    covariance of θ̂ over models, the eigenvectors U of N^{-½} E N^{-½} (eigenvalues λ: 1 + signal-to-noise along
    that direction) give T = N^{½} U, columns in descending λ; directions with λ < ``threshold`` are the weak
    ones, r of them. Returns ``(T, r, eigenvalues)``. The default threshold is the upper edge of the
    Marchenko–Pastur law, (1 + √(B/(M − 1)))²: the largest eigenvalue that noise alone gives M models in B
    dimensions, so only directions above it are shown by the data (MMLU-Pro: 2.91, and 9 of 14 directions weak).
    """
    counts = np.asarray(counts, dtype=float)
    trials = np.asarray(trials, dtype=float)
    which = np.asarray(item_benchmark, dtype=np.int64)
    m = counts.shape[0]
    if n_benchmarks < 2 or m < 3:
        fail(f"the partial coordinates need two or more benchmarks and three or more models, got {n_benchmarks} "
             f"and {m}")
    y = np.stack([counts[:, which == k].sum(axis=1) for k in range(n_benchmarks)], axis=1)
    n = np.stack([trials[:, which == k].sum(axis=1) for k in range(n_benchmarks)], axis=1)
    p = (y + 0.5) / (n + 1.0)
    rough = np.log(p) - np.log1p(-p)
    var = 1.0 / ((n + 1.0) * p * (1.0 - p))
    seen = n > 0
    for k in range(n_benchmarks):
        if not seen[:, k].any():
            fail(f"benchmark {k} has no answered item")
        rough[~seen[:, k], k] = rough[seen[:, k], k].mean()
    noise = np.array([var[seen[:, k], k].mean() for k in range(n_benchmarks)])
    half = np.sqrt(noise)
    spread = np.cov(rough, rowvar=False) / np.outer(half, half)
    values, vectors = np.linalg.eigh(spread)
    if threshold is None:
        threshold = (1.0 + np.sqrt(n_benchmarks / (m - 1.0))) ** 2
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    weak = int(np.sum(values < threshold))
    return half[:, None] * vectors, weak, values


def centre_logp(centre, chol, n_models, mean_sd: float):
    """log N(θ̄; 0, Σ/M + τ² I), the mean of the M abilities with μ integrated out (PyTensor; Σ = C Cᵀ)."""
    import pytensor.tensor as pt
    from pytensor.tensor.linalg import cholesky, solve_triangular

    n_benchmarks = chol.shape[0]
    outer = cholesky(chol @ chol.T / n_models + mean_sd ** 2 * pt.eye(n_benchmarks))
    w = solve_triangular(outer, centre, lower=True)
    return -0.5 * pt.sum(w ** 2) - pt.sum(pt.log(pt.diag(outer))) - n_benchmarks / 2.0 * np.log(2.0 * np.pi)


def partial_abilities(centre, strong, weak, chol, basis: np.ndarray, n_weak: int, n_models: int, mean_sd: float):
    """θ (M × B) and the log density of the coordinates (PyTensor), from θ̄ (B), w_strong ((M − 1) × (B − r)),
    z ((M − 1) × r) and ``chol`` = the Cholesky factor of Σ.

    The density is θ's given Σ with μ integrated out (:func:`benchmeasure.suite.prior.theta_marginal_logp`) times
    the map's Jacobian, written in the coordinates: with u_strong = L₁₁⁻¹ w_strong, u = (u_strong, z) = L⁻¹ w for
    every contrast, so tr(Σ⁻¹ Σ_r h_r h_rᵀ) = Σ_r |u_r|², and log|Σ| = 2 log|det T| + 2 Σ log diag L, whose
    L₂₂ part the Jacobian cancels:

        −(M − 1)B/2 · log 2π − (M − 1) log|det T| − B/2 · log M − (M − 1) Σ log diag L₁₁ − ½ Σ_r |u_r|²
        + log N(θ̄; 0, Σ/M + τ² I).
    """
    import pytensor.tensor as pt
    from pytensor.tensor.linalg import cholesky, solve_triangular

    b = basis.shape[0]
    n_strong = b - n_weak
    m = float(n_models)
    root = pt.as_tensor(np.linalg.inv(basis)) @ chol                         # S = root rootᵀ
    lower = cholesky(root @ root.T)
    parts, squares, log_det = [], 0.0, 0.0
    if n_strong:
        l11 = lower[:n_strong, :n_strong]
        whitened = solve_triangular(l11, strong.T, lower=True)
        parts.append(strong.T)
        squares, log_det = pt.sum(whitened ** 2), pt.sum(pt.log(pt.diag(l11)))
    if n_weak:
        given = lower[n_strong:, n_strong:] @ weak.T
        if n_strong:
            given = given + lower[n_strong:, :n_strong] @ whitened
        parts.append(given)
        squares = squares + pt.sum(weak ** 2)
    w = pt.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]       # B × (M − 1), in T's coordinates
    theta = centre[None, :] + pt.as_tensor(helmert(n_models).T) @ (pt.as_tensor(basis) @ w).T
    logp = (-(m - 1.0) * b / 2.0 * np.log(2.0 * np.pi) - (m - 1.0) * np.linalg.slogdet(basis)[1]
            - b / 2.0 * np.log(m) - (m - 1.0) * log_det - 0.5 * squares + centre_logp(centre, chol, m, mean_sd))
    return theta, logp


def to_coordinates(theta: np.ndarray, chol: np.ndarray, basis: np.ndarray, n_weak: int):
    """The inverse map in NumPy: (θ̄, w_strong, z) of an M × B θ given Σ's Cholesky factor (tests, start points)."""
    theta = np.asarray(theta, dtype=float)
    m, b = theta.shape
    n_strong = b - n_weak
    contrasts = helmert(m)
    w = np.linalg.solve(basis, (contrasts @ theta).T)                      # B × (M − 1)
    inverse = np.linalg.inv(basis)
    lower = np.linalg.cholesky(inverse @ chol @ chol.T @ inverse.T)
    z = w[n_strong:]
    if n_strong:
        z = z - lower[n_strong:, :n_strong] @ np.linalg.solve(lower[:n_strong, :n_strong], w[:n_strong])
    z = np.linalg.solve(lower[n_strong:, n_strong:], z) if n_weak else z
    return theta.mean(axis=0), w[:n_strong].T, z.T
