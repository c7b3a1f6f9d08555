"""Online calibration: the difficulty of one new item given the panel's fixed abilities.

BenchFill annotates each child with the same 1PL model as the benchmark's fit (paper,
Appendix C.3; ``scripts/fit_irt.py``): P(correct) = g + (1 − g)·σ(θ_j − b), binomial
counts over K trials, and a N(0, 1) prior on b. With the abilities θ_j held at their fitted
posterior means the posterior of b is one-dimensional,

    p(b | y, θ) ∝ N(b; 0, 1) · Π_j Binomial(y_j; K, p_j(b)),

so its mean and standard deviation are computed by quadrature on a fine grid (no sampler),
by :func:`benchmeasure.irt.anchored.difficulty_posterior` — the same function
``scripts/calibrate_items.py`` runs, with the log-likelihood the fit uses. Difficulties are
then put on the benchmark's normalized axis with the *original* benchmark's min and max
(paper, Section 4), so a new item's z is comparable with the gap.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmeasure.irt.anchored import difficulty_posterior


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

    The one implementation is :func:`benchmeasure.irt.anchored.difficulty_posterior`, which
    ``scripts/calibrate_items.py`` uses too.

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
    posterior = difficulty_posterior(counts, abilities, n_trials, guessing)
    return posterior.mean, posterior.sd


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
