"""Online calibration: the difficulty of one new item given the panel's fixed abilities.

BenchFill annotates each child with the same 1PL model as the benchmark's fit (paper,
Appendix C.3; ``scripts/fit_irt.py``): P(correct) = g + (1 − g)·σ(θ_j − b), binomial
counts over K trials, and a N(0, 1) prior on b. With the abilities θ_j held at their fitted
posterior means the posterior of b is one-dimensional,

    p(b | y, θ) ∝ N(b; 0, 1) · Π_j Binomial(y_j; K, p_j(b)),

so its mean and standard deviation are computed by quadrature on a fine grid (no sampler).
The log-likelihood is :func:`benchmeasure.irt.likelihood.log_likelihood`, the one the fit
uses. Difficulties are then put on the benchmark's normalized axis with the *original*
benchmark's min and max (paper, Section 4), so a new item's z is comparable with the gap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmeasure.irt.likelihood import log_likelihood

GRID_POINTS = 4001
GRID_MARGIN = 12.0


@dataclass(frozen=True)
class Annotation:
    """Posterior summary of one item's difficulty.

    Attributes
    ----------
    b_mean, b_sd : float
        Posterior mean and sd of b (unnormalized logit scale).
    z, z_sd : float
        The same on the original benchmark's min–max scale: z = (b − b_min)/(b_max − b_min).
    """

    b_mean: float
    b_sd: float
    z: float
    z_sd: float


def posterior_b(counts, abilities, n_trials: int, guessing: float = 0.0) -> tuple:
    """Posterior mean and sd of one item's difficulty b given fixed abilities.

    Parameters
    ----------
    counts : array_like of int, shape (M,)
        Correct counts of the M panel models, each in [0, n_trials].
    abilities : array_like of float, shape (M,)
        The models' fixed abilities θ (posterior means of the benchmark fit).
    n_trials : int
        Trials per model (K).
    guessing : float
        Lower asymptote g of the item.

    Returns
    -------
    (float, float)
        E[b | y, θ] and sd[b | y, θ].
    """
    y = np.asarray(counts, dtype=float)
    theta = np.asarray(abilities, dtype=float)
    if y.shape != theta.shape or y.ndim != 1 or y.size == 0:
        raise ValueError(f"counts {y.shape} and abilities {theta.shape} must be equal-length vectors")
    if np.any(y < 0) or np.any(y > n_trials):
        raise ValueError(f"counts must lie in [0, {n_trials}]")
    # The posterior sits between the prior and the abilities; this range holds all its mass.
    grid = np.linspace(min(theta.min(), 0.0) - GRID_MARGIN, max(theta.max(), 0.0) + GRID_MARGIN, GRID_POINTS)
    eta = theta[None, :] - grid[:, None]  # shape (G, M)
    log_post = log_likelihood(y[None, :], n_trials, eta, guessing).sum(axis=1) - 0.5 * grid**2
    weights = np.exp(log_post - log_post.max())
    integrate = np.trapezoid if hasattr(np, "trapezoid") else np.trapz  # NumPy < 2 has only trapz
    weights /= integrate(weights, grid)
    mean = float(integrate(grid * weights, grid))
    var = float(integrate((grid - mean) ** 2 * weights, grid))
    return mean, float(np.sqrt(max(var, 0.0)))


def annotate(counts_by_model: dict, abilities: dict, n_trials: int, b_min: float, b_max: float,
             guessing: float = 0.0) -> Annotation:
    """Annotate one item from ``{model: correct count}`` with abilities ``{model: θ}``.

    Every panel model with an ability must have a count (a missing model would silently
    change the estimator); models without an ability are an error too.
    """
    missing = sorted(set(abilities) - set(counts_by_model))
    unknown = sorted(set(counts_by_model) - set(abilities))
    if missing or unknown:
        raise ValueError(f"panel mismatch: no counts for {missing}, no ability for {unknown}")
    models = sorted(abilities)
    mean, sd = posterior_b([counts_by_model[m] for m in models], [abilities[m] for m in models], n_trials, guessing)
    span = b_max - b_min
    return Annotation(mean, sd, (mean - b_min) / span, sd / span)
