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

**Does the child fit?** (:func:`item_fit`; ``[search] misfit_p``). A child whose panel answers do not follow a
1PL curve in the panel's abilities — strong models failing it and weak ones solving it (a wrong key, a grader
that fails the right answer), or a curve of another shape — gets a b all the same, and that b says nothing about
its difficulty. The check is ``check-fit``'s item test, :func:`benchmeasure.analyses.item_fit.fixed_ability_fit`
(the curve by ability group and the score of a slope on θ, their posterior predictive p-values averaged over
:data:`FIT_DRAWS` quantiles of b's posterior, the abilities held fixed as here); a child whose combined p-value
(Bonferroni over the two tests, check-fit's ``p_value``) is below ``misfit_p``, or whose slope p-value is below it
with a negative point-biserial (check-fit's ``against_ability`` for one item), is not kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmeasure.irt.anchored import difficulty_posterior

#: Quantiles of b's posterior that the item-fit p-values are averaged over ((i + ½) / FIT_DRAWS).
FIT_DRAWS = 50


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


def item_fit(counts_by_model: dict, abilities: dict, n_trials: int, threshold: float, guessing: float = 0.0) -> dict:
    """check-fit's item test of one child against the panel's fixed abilities (module docstring).

    ``counts_by_model`` ``{model: correct of n_trials}`` for every model of ``abilities`` ``{model: θ}``. Returns
    a JSON-ready record: ``p_value`` (Bonferroni over the curve and slope tests), ``p_curve``, ``p_slope``,
    ``z_slope``, ``point_biserial``, ``against_ability`` (``p_slope`` < ``threshold`` and a negative
    point-biserial), ``misfit`` (``p_value`` < ``threshold`` or against ability), ``reason`` (why, in words;
    empty when it fits), ``threshold``, ``trials`` per model and ``draws``. SciPy is needed (imported here, so
    the loop imports without it)."""
    from benchmeasure.analyses.item_fit import fixed_ability_fit, misfit_reason

    models = sorted(abilities)
    y = np.asarray([[counts_by_model[m]] for m in models], dtype=float)
    theta = np.asarray([abilities[m] for m in models], dtype=float)
    posterior = difficulty_posterior(y[:, 0], theta, n_trials, guessing)
    b = np.asarray(posterior.quantile((np.arange(FIT_DRAWS) + 0.5) / FIT_DRAWS), dtype=float)[:, None]
    fit = {name: float(value[0]) for name, value in
           fixed_ability_fit(y, np.full(y.shape, float(n_trials)), theta, b, guessing).items()}
    against = fit["p_slope"] < threshold and fit["point_biserial"] < 0
    misfit = fit["p_value"] < threshold or against
    reason = ""
    if misfit:
        reason = (f"item-fit p = {fit['p_value']:.3g} (slope p = {fit['p_slope']:.3g}) below {threshold:g}: "
                  + misfit_reason(against, fit["point_biserial"], fit["p_curve"], fit["p_slope"]))
    return {"p_value": fit["p_value"], "p_curve": fit["p_curve"], "p_slope": fit["p_slope"],
            "z_slope": fit["z_slope"], "point_biserial": fit["point_biserial"], "against_ability": against,
            "misfit": misfit, "reason": reason, "threshold": threshold, "trials": n_trials, "draws": FIT_DRAWS}
