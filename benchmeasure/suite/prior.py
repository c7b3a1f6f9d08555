"""The ability prior of the multidimensional 1PL (:mod:`benchmeasure.suite.mirt`), shared by its joint and
collapsed (:mod:`benchmeasure.suite.mirt_collapsed`) models: R ~ LKJ(η), the spreads s, the benchmark means μ and
θ (M × B), in the centred, non-centred or partial (:mod:`benchmeasure.suite.coordinates`) coordinates, with μ
sampled or integrated out (:func:`theta_marginal_logp`). Both models import it from here, and it imports neither.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.base.errors import fail

PARAMETRIZATIONS = ("centred", "non-centred", "partial")   # θ's coordinates (partial: suite/coordinates.py)
MEANS = ("sampled", "integrated")   # the benchmark means μ: NUTS samples them, or they are integrated out
MEAN_SD = 3.0  # prior sd of each benchmark's mean ability (several benchmarks only)


def ability_prior(n_models: int, n_benchmarks: int, *, eta: float, scales: str, scale_sd: float,
                  parametrization: str, mean_sd: float, means: str = "sampled", basis=None):
    """Inside a PyMC model: R (``corr``), s, μ and θ (M × B) with the priors of :mod:`.mirt`; returns θ.

    Shared by the joint model (:func:`.mirt.build_model`) and the collapsed one (:mod:`.mirt_collapsed`), so the two
    have the same prior by construction. ``means="integrated"`` (several benchmarks, centred coordinates) leaves μ
    out of the model: θ gets its density with μ integrated out (:func:`theta_marginal_logp`), and μ is drawn
    afterwards from its exact conditional (:func:`.mirt.draw_means`). ``parametrization="partial"`` (μ integrated)
    samples θ in the coordinates of :mod:`.coordinates`, with ``basis`` = (T, r) from :func:`.coordinates.pilot_basis`.
    """
    import pymc as pm
    import pytensor.tensor as pt

    if means not in MEANS:
        fail(f"means must be one of {', '.join(MEANS)}, got {means!r}")
    if parametrization not in PARAMETRIZATIONS:
        fail(f"parametrization must be one of {', '.join(PARAMETRIZATIONS)}, got {parametrization!r}")
    integrated = means == "integrated" and n_benchmarks > 1
    if integrated and parametrization == "non-centred":
        fail("the benchmark means are integrated out in the centred and partial coordinates only")
    if parametrization == "partial" and not integrated:
        fail("the partial coordinates need two or more benchmarks with their means integrated out")

    if n_benchmarks == 1:
        chol = pt.ones((1, 1))
    else:
        chol = pm.LKJCorr("chol_corr", n=n_benchmarks, eta=eta)  # PyMC 6: the Cholesky factor of R
    pm.Deterministic("corr", chol @ chol.T)
    if scales == "half-normal":
        scale = pm.HalfNormal("scale", scale_sd, shape=n_benchmarks)
        chol = scale[:, None] * chol                         # Cholesky factor of diag(s) R diag(s)
    # with several benchmarks each has its own mean ability (a benchmark's items may all be easy): R is the
    # correlation of deviations from those means; with one there is nothing to correlate, and the model is
    # the paper's (mean 0)
    if integrated and parametrization == "partial":
        from benchmeasure.suite.coordinates import partial_abilities

        t, n_weak = basis
        centre = pm.Flat("theta_centre", shape=n_benchmarks)
        strong = pm.Flat("theta_strong", shape=(n_models - 1, n_benchmarks - n_weak)) if n_weak < n_benchmarks \
            else None
        weak = pm.Flat("theta_weak", shape=(n_models - 1, n_weak)) if n_weak else None
        theta, logp = partial_abilities(centre, strong, weak, chol, np.asarray(t, dtype=float), int(n_weak),
                                        n_models, mean_sd)
        pm.Potential("theta_given_cov", logp)
        return pm.Deterministic("theta", theta)
    if integrated:
        theta = pm.Flat("theta", shape=(n_models, n_benchmarks))
        pm.Potential("theta_given_cov", theta_marginal_logp(theta, chol, mean_sd))
        return theta
    mu = pm.Normal("mu", 0.0, mean_sd, shape=n_benchmarks) if n_benchmarks > 1 else pt.zeros(1)
    if parametrization == "non-centred":
        z = pm.Normal("z", 0.0, 1.0, shape=(n_models, n_benchmarks))
        return pm.Deterministic("theta", mu[None, :] + z @ chol.T)   # rows ~ Normal(μ, diag(s) R diag(s))
    if n_benchmarks == 1:
        return pm.Normal("theta", 0.0, chol[0, 0], shape=(n_models, 1))
    return pm.MvNormal("theta", mu=mu, chol=chol, shape=(n_models, n_benchmarks))


def theta_marginal_logp(theta, chol, mean_sd: float):
    """log p(θ | Σ) with μ ~ Normal(0, τ² I) integrated out (τ = ``mean_sd``; Σ = C Cᵀ, ``chol`` = C; PyTensor).

    With θ̄ the mean of the M rows and S = Σ_j (θ_j − θ̄)(θ_j − θ̄)ᵀ, Π_j N(θ_j; μ, Σ) factors into a part in S
    and N(θ̄; μ, Σ/M), and the Gaussian integral over μ gives

        log p(θ | Σ) = −(M − 1)B/2 · log 2π − (M − 1)/2 · log|Σ| − B/2 · log M − tr(Σ⁻¹ S)/2
                       + log N(θ̄; 0, Σ/M + τ² I),

    exactly (``tests/test_suite_lkj_collapsed.py`` checks it against the (M·B)-dimensional Gaussian
    vec θ ~ N(0, I ⊗ Σ + τ² 11ᵀ ⊗ I)).
    """
    import pytensor.tensor as pt
    from pytensor.tensor.linalg import solve_triangular

    from benchmeasure.suite.coordinates import centre_logp

    n_models, n_benchmarks = theta.shape[0], chol.shape[0]
    m = pt.cast(n_models, "float64")
    k = pt.cast(n_benchmarks, "float64")
    centre = theta.mean(axis=0)
    white = solve_triangular(chol, (theta - centre[None, :]).T, lower=True)
    log_det = 2.0 * pt.sum(pt.log(pt.diag(chol)))
    log_2pi = np.log(2.0 * np.pi)
    return (-(m - 1.0) * k / 2.0 * log_2pi - (m - 1.0) / 2.0 * log_det - k / 2.0 * pt.log(m)
            - 0.5 * pt.sum(white ** 2) + centre_logp(centre, chol, m, mean_sd))


def coordinates_basis(counts, trials, item_benchmark, n_benchmarks: int, parametrization: str, basis=None):
    """(T, r) of the partial coordinates (:func:`.coordinates.pilot_basis`) when they are asked for, else None."""
    if parametrization != "partial" or basis is not None:
        return basis
    from benchmeasure.suite.coordinates import pilot_basis

    t, n_weak, _ = pilot_basis(counts, trials, item_benchmark, n_benchmarks)
    return t, n_weak
