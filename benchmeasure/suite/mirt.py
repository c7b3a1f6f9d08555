"""The multidimensional 1PL of a suite, sampled by NUTS: one ability per model per benchmark, correlated.

Model (B benchmarks; item i belongs to benchmark k(i); the cells present in the matrix only):

    Y_ji ~ Binomial(T_ji, σ(θ_j,k(i) − b_i))            absent cells (T_ji = 0) add nothing: the masked likelihood
    b_i ~ Normal(0, b_prior_sd²)                         the paper's Normal(0, 1) by default
    θ_j ~ Normal(μ, diag(s) R diag(s)),  via its Cholesky factor diag(s) · L,  L = cholesky(R)
    μ_k ~ Normal(0, 3²) with two or more benchmarks; μ = 0 with one
    R ~ LKJ(η)                                           η = 2 by default (mild shrinkage towards independence)
    s_k ~ HalfNormal(scale_sd) (``scales="half-normal"``, default)  or  s_k = 1 (``scales="unit"``, the paper's)

Why the means and the scales: R is the correlation of the abilities' deviations from each benchmark's mean, in
that benchmark's spread. On ZeroEval (GSM8K is easy, MATH level 5 hard) a first version with μ = 0 and s = 1
estimated the GSM8K–MATH correlation at −0.13 [−0.23, −0.02] while the posterior mean abilities of the 29 models
that answered both correlate at 0.88: with mean 0 imposed, R measures E[θ_gsm8k θ_math] about 0, dominated by
the two benchmarks' opposite mean levels (2.1 and −0.6). Fixed unit scales bias R as well when a benchmark's
abilities spread more or less than 1 (the maximum-likelihood ρ under wrong unit variances is not the correlation).
The location of each benchmark (μ_k against its b) is still set by the priors only, as in the paper's model.

Coordinates (``parametrization``): ``"partial"`` (the default with several benchmarks) is centred along the
directions of Σ that the data resolve and non-centred along the others (:mod:`.coordinates`); ``"centred"``
samples θ itself given L; ``"non-centred"`` samples z_j ~ Normal(0, I) with θ_j = diag(s) L z_j. Between the
last two: every model answers tens to thousands of items, so each θ_j is well determined by its data and the
centred form mixes better: on a simulated 50-model × 2 × 300-item suite
(2 chains × (300 + 300), same seed) the lowest bulk ESS was 205 centred against 61 non-centred (the correlation
itself mixing slowest there), with 15 against 18 leapfrog steps per draw; nutpie's low-rank mass matrix
(``adaptation="low_rank"``) raised the ESS (364) but cost 4 times as long per draw there. With the benchmark means
μ (below) the low-rank adaptation is the default: the location of each benchmark (μ_k, its θ and its b moving
together) is one direction across hundreds of coordinates that a diagonal mass matrix follows slowly. On a
simulated 50 × (2 × 30) suite, 2 chains × (300 + 300): diagonal, R-hat 1.079 and bulk ESS 28 for μ; low-rank,
max R-hat 1.032 over every parameter and min bulk ESS 603, at 29 s against 18 s.

The benchmark means are integrated out by default (``means="integrated"``): given Σ = diag(s) R diag(s), θ's
density with μ ~ Normal(0, 3² I) integrated out is Gaussian in closed form (:func:`.prior.theta_marginal_logp`), so NUTS
runs on (θ, s, R) and each posterior draw of μ is drawn afterwards from its exact conditional
μ | θ, Σ ~ Normal(V M Σ⁻¹ θ̄, V), V = (M Σ⁻¹ + I/9)⁻¹ (:func:`draw_means`). The joint draws are draws of the same
posterior. μ_k was the slowest coordinate: it moves with its benchmark's abilities, and only the priors hold it.
Measured side by side on MMLU-Pro with 200 items per category (``bench/bench_suite_means.py``, 2 chains ×
(500 + 500)): min bulk ESS 236 against 75, and the same 63 leapfrog steps per draw.

``prior="hierarchical"`` (``fit-suite --prior hierarchical``, the joint route only): b_i ~ Normal(0, σ_b,k(i)) with
σ_b,k ~ HalfNormal(3) per benchmark and s_k ~ HalfNormal(3), the registry's hierarchical prior
(:mod:`benchmeasure.irt.priors`) per benchmark in this model's location convention: each benchmark's location is
its mean ability μ_k ~ Normal(0, 3²) with b centred at 0, where the registry centres θ at 0 and gives b the mean
μ_b ~ Normal(0, 3²). The two are one law of (θ − μ_k, b − μ_k) with μ_b,k = −μ_k, and the likelihood sees θ − b
only. The collapsed route integrates b out under Normal(0, 1) and cannot take it.

With one benchmark and ``scales="unit"`` this is exactly the paper's 1PL (θ_j ~ Normal(0, 1), b_i ~ Normal(0, 1)).
The posterior of R says how far two benchmarks measure the same ability: :func:`fit_correlated` returns the
posterior mean, sd, equal-tailed 94 % interval, R-hat and bulk ESS of every pairwise correlation, and the same
summaries for every θ_jk and b_i. The likelihood is evaluated on the present cells only (a gather of θ_j,k(i) − b_i
over them), so its cost is the number of present cells, whatever the holes.

Two routes sample this posterior: ``route="collapsed"`` (default) integrates every b out per benchmark and draws
them exactly afterwards (:mod:`.mirt_collapsed`; NUTS on (θ, μ, s, R) only), ``route="joint"`` samples
:func:`build_model` as it stands. Sampling is nutpie, by default on the collapsed density compiled once into the
kernel cache (:mod:`.density`, in the default coordinates), else on the PyMC model's graph compiled in the
process (the same compiler settings as :mod:`benchmeasure.irt.fit`: no fast-math, so a seed gives the same
draws), with the same progress display (:class:`benchmeasure.irt.progress.Progress`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.base.registry import Registry
from benchmeasure.suite.prior import MEAN_SD, ability_prior, coordinates_basis

log = logging.getLogger(__name__)

SCALES = ("unit", "half-normal")



@dataclass(frozen=True)
class SuiteRoute:
    """How ``fit-suite --route NAME`` samples (:func:`fit_correlated`).

    ``build(counts, trials, item_benchmark, n_benchmarks, *, b_prior_sd, **options) -> (PyMC model, data)`` the model
    NUTS samples (``data``: what ``draw_b`` needs, else None); ``draw_b(data, posterior, n_items, seed, progress) ->
    (posterior with b, quadrature checks, seconds)`` draws the difficulties after NUTS (None: NUTS samples b);
    ``unit_b_prior``: the route needs the paper's b ~ Normal(0, 1); ``compiled_density``: the cached Numba density
    of :mod:`.density` can stand in for the PyMC graph.
    """

    name: str
    build: object
    draw_b: object = None
    unit_b_prior: bool = False
    compiled_density: bool = False
    summary: str = ""

    DECORATES: ClassVar[str] = "build"


#: the fit-suite routes, in the order of ``--route``'s choices, registered below with ``@ROUTES.add`` (no entry-point
#: group: a route is written against this module's model and draws, not a public protocol)
ROUTES = Registry("route", entry=SuiteRoute, builtins=("benchmeasure.suite.mirt",))
DENSITIES = ("compiled", "pymc")   # the cached Numba density (suite/density.py) where it applies, or PyMC's graph
INTERVAL = 0.94


@dataclass(frozen=True)
class CorrelatedFit:
    """Posterior summaries of :func:`fit_correlated` (arrays in the suite's model, item and benchmark order)."""

    theta: dict          # mean, sd, r_hat, ess_bulk: each (M, B)
    b: dict              # mean, sd, r_hat, ess_bulk: each (N,)
    correlation: dict    # mean, sd, low, high, r_hat, ess_bulk: each (B, B) (diagonal 1, no R-hat)
    scales: dict | None  # mean, sd, low, high of s_k (half-normal scales), else None
    diagnostics: dict    # max_r_hat, min_ess_bulk, divergences, … (irt.diagnostics.summarize_diagnostics)
    settings: dict
    posterior: object    # the ArviZ DataTree (theta, b, corr[, scale][, sigma_b])
    sigma_b: dict | None = None   # mean, sd, low, high of σ_b,k under the hierarchical prior, else None


def default_means(parametrization: str) -> str:
    """What :func:`fit_correlated` does with the benchmark means when not told: integrated out in the centred
    coordinates (where that is defined), sampled in the non-centred ones."""
    return "sampled" if parametrization == "non-centred" else "integrated"


def draw_means(theta, corr, scale, mean_sd: float, seed: int) -> np.ndarray:
    """Exact draws of μ given each posterior draw of (θ, R, s): μ | θ, Σ ~ N(V M Σ⁻¹ θ̄, V), V = (M Σ⁻¹ + I/τ²)⁻¹.

    ``theta`` (chains, draws, M, B), ``corr`` (chains, draws, B, B), ``scale`` (chains, draws, B) or None (unit
    scales); returns (chains, draws, B). One seeded normal vector per draw, so a seed gives the same μ."""
    theta = np.asarray(theta, dtype=float)
    n_models, n_benchmarks = theta.shape[-2:]
    cov = np.asarray(corr, dtype=float)
    if scale is not None:
        s = np.asarray(scale, dtype=float)
        cov = s[..., :, None] * cov * s[..., None, :]
    precision = n_models * np.linalg.inv(cov) + np.eye(n_benchmarks) / mean_sd ** 2
    centre = theta.mean(axis=-2)
    rhs = n_models * np.linalg.solve(cov, centre[..., None])[..., 0]
    lower = np.linalg.cholesky(precision)                      # P = L Lᵀ, so μ = P⁻¹ rhs + L⁻ᵀ z
    mean = np.linalg.solve(precision, rhs[..., None])[..., 0]
    z = np.random.default_rng(seed).standard_normal(centre.shape)
    return mean + np.linalg.solve(np.swapaxes(lower, -1, -2), z[..., None])[..., 0]


def build_model(counts, trials, item_benchmark, n_benchmarks: int, *, eta: float = 2.0, scales: str = "half-normal",
                scale_sd: float = 1.0, b_prior_sd: float = 1.0, parametrization: str = "centred",
                mean_sd: float = MEAN_SD, means: str = "sampled", basis=None, prior: str = "paper"):
    """The PyMC model above; ``counts`` and ``trials`` are models × items (``trials`` 0 = absent cell); ``prior``
    ``"hierarchical"``: b_i ~ Normal(0, σ_b,k(i)), σ_b,k ~ HalfNormal(3) in place of Normal(0, ``b_prior_sd``)."""
    import pymc as pm
    import pytensor.tensor as pt

    counts = np.asarray(counts)
    trials = np.asarray(trials)
    n_models, n_items = counts.shape
    rows, cols = np.nonzero(trials > 0)
    y = counts[rows, cols].astype(float)
    n = trials[rows, cols].astype(float)
    which = np.asarray(item_benchmark, dtype=np.int64)[cols]
    with pm.Model() as model:
        if prior == "hierarchical":
            from benchmeasure.irt.priors import HYPER_SCALE

            sigma_b = pm.HalfNormal("sigma_b", HYPER_SCALE, shape=n_benchmarks)
            b = pm.Normal("b", 0.0, sigma_b[np.asarray(item_benchmark, dtype=np.int64)], shape=n_items)
        else:
            b = pm.Normal("b", 0.0, b_prior_sd, shape=n_items)
        theta = ability_prior(n_models, n_benchmarks, eta=eta, scales=scales, scale_sd=scale_sd,
                              parametrization=parametrization, mean_sd=mean_sd, means=means,
                              basis=coordinates_basis(counts, trials, item_benchmark, n_benchmarks, parametrization,
                                                      basis))
        logit = theta[rows, which] - b[cols]
        # binomial log-likelihood without log C(T, Y): Y·η − T·softplus(η), on the present cells only
        pm.Potential("loglik", pt.sum(y * logit - n * pt.softplus(logit)))
    return model


def fit_correlated(counts, trials, item_benchmark, benchmarks: list, *, eta: float = 2.0, scales: str = "half-normal",
                   scale_sd: float = 1.0, b_prior_sd: float = 1.0, chains: int = 4, tune: int = 1000,
                   draws: int = 1000, target_accept: float = 0.9, seed: int = 0, cores: int | None = None,
                   parametrization: str | None = None, adaptation: str = "low_rank", route: str = "collapsed",
                   means: str | None = None, density: str = "compiled", progress=None,
                   prior: str = "paper") -> CorrelatedFit:
    """Sample the model with nutpie; summaries of θ, b and the correlation matrix.

    ``route="collapsed"`` (default; needs the paper's b prior, ``b_prior_sd=1``): NUTS on (θ, μ, s, R) with every
    b integrated out, then exact draws of b (:mod:`.mirt_collapsed`); ``route="joint"``: NUTS on everything
    (:func:`build_model`). Both sample the same posterior. ``means="integrated"`` (the default in the centred
    and partial coordinates) leaves the benchmark means μ out of NUTS and draws them exactly afterwards
    (:func:`.prior.theta_marginal_logp`, :func:`draw_means`); ``"sampled"`` (the default in the non-centred ones) has
    NUTS sample them (the model as written). ``parametrization`` (θ's coordinates; the same posterior): left
    unset, ``"partial"`` (:mod:`.coordinates`) with two or more benchmarks and the means integrated, else
    ``"centred"``. ``density="compiled"`` (default) hands nutpie the cached Numba density of
    :mod:`.density` where it applies (the collapsed route in the partial coordinates, the means integrated out:
    the default with two or more benchmarks), no PyTensor compilation; ``"pymc"`` compiles the PyMC model's graph
    (the reference; every other combination uses it). ``progress`` is a
    :class:`~benchmeasure.irt.progress.Progress` (or None): compiling, warm-up and draws (and, collapsed, the b
    draws) are shown on it. ``cores`` defaults to min(chains, CPUs available). ``prior="hierarchical"`` (joint
    route; the module docstring): σ_b,k per benchmark, sampled and summarized (``CorrelatedFit.sigma_b``); pass
    ``scale_sd`` 3 for the registry's HalfNormal(3) on the spreads.
    """
    from benchmeasure.irt.diagnostics import summarize_diagnostics, summarize_draws
    from benchmeasure.irt.fit import available_cpus
    from benchmeasure.irt.nutpie_run import import_nutpie, sample_nutpie

    if scales not in SCALES:
        fail(f"scales must be one of {', '.join(SCALES)}, got {scales!r}")
    if not eta > 0:
        fail(f"the LKJ shape eta must be > 0, got {eta}")
    if route not in ROUTES:
        fail(f"route must be one of {', '.join(ROUTES)}, got {route!r}")
    chosen = ROUTES[route]
    if density not in DENSITIES:
        fail(f"density must be one of {', '.join(DENSITIES)}, got {density!r}")
    if chosen.unit_b_prior and prior != "paper":
        fail(f"the {route} route integrates b under the paper's Normal(0, 1) prior; the {prior} prior needs "
             "route='joint'")
    if chosen.unit_b_prior and b_prior_sd != 1.0:
        fail(f"the {route} route integrates b under the paper's Normal(0, 1) prior; b_prior_sd {b_prior_sd:g} "
             "needs route='joint'")
    n_benchmarks = len(benchmarks)
    if parametrization is None:
        parametrization = "centred" if means == "sampled" else "partial"
    if n_benchmarks == 1 and parametrization == "partial":
        parametrization = "centred"   # one benchmark: nothing to correlate, the paper's 1PL
    means = default_means(parametrization) if means is None else means
    basis = coordinates_basis(counts, trials, item_benchmark, n_benchmarks, parametrization)
    names = (["theta", "b", "corr"] + (["mu"] if n_benchmarks > 1 else [])
             + (["scale"] if scales == "half-normal" else []) + (["sigma_b"] if prior == "hierarchical" else []))
    integrated = means == "integrated" and n_benchmarks > 1
    sampled = [name for name in names
               if (chosen.draw_b is None or name != "b") and not (integrated and name == "mu")]
    cached = density == "compiled" and chosen.compiled_density and integrated and parametrization == "partial"
    start = time.perf_counter()
    if progress is not None:
        progress.update("compiling", 0, 0)
    if cached:
        from benchmeasure.irt.nutpie_run import nutpie_model
        from benchmeasure.suite.density import suite_density
        from benchmeasure.suite.mirt_collapsed import benchmark_data

        data = benchmark_data(counts, trials, item_benchmark, n_benchmarks)
        compiled = nutpie_model(suite_density(data, basis, n_models=np.asarray(counts).shape[0], eta=eta,
                                              scales=scales, scale_sd=scale_sd, mean_sd=MEAN_SD))
    else:
        compiled, data = _pymc_compiled(counts, trials, item_benchmark, n_benchmarks, route=chosen, eta=eta,
                                        scales=scales, scale_sd=scale_sd, b_prior_sd=b_prior_sd,
                                        parametrization=parametrization, means=means, basis=basis, sampled=sampled,
                                        **({} if prior == "paper" else {"prior": prior}))
    nutpie = import_nutpie()
    compile_time = time.perf_counter() - start
    callback = progress.nutpie_callback(tune + draws) if progress is not None else None
    sample_start = time.perf_counter()
    idata = sample_nutpie(nutpie, compiled, chains=chains, tune=tune, draws=draws, seed=int(seed),
                          cores=cores or min(chains, available_cpus()), target_accept=float(target_accept),
                          adaptation=adaptation, progress_bar=False, progress_callback=callback,
                          save_warmup=False).tree()
    sampling_time = time.perf_counter() - sample_start
    posterior = idata["posterior"].to_dataset()
    extra = [v for v in posterior.data_vars if v not in names]
    if extra:
        idata["posterior"] = posterior.drop_vars(extra)
        posterior = idata["posterior"].to_dataset()
    quadrature = draw_time = None
    if chosen.draw_b is not None:
        posterior, quadrature, draw_time = chosen.draw_b(data, posterior, np.asarray(counts).shape[1], seed, progress)
        idata["posterior"] = posterior
    if integrated:
        scale_draws = posterior["scale"].values if scales == "half-normal" else None
        mu_seed = int(np.random.SeedSequence([int(seed), 2]).generate_state(1)[0])
        mu = draw_means(posterior["theta"].transpose("chain", "draw", ...).values, posterior["corr"].values,
                        scale_draws, MEAN_SD, mu_seed)
        posterior = posterior.assign(mu=(("chain", "draw", "mu_dim_0"), mu))
        idata["posterior"] = posterior
    draws_of = {name: np.asarray(posterior[name].values, dtype=float) for name in names}
    n_models = np.asarray(counts).shape[0]
    theta_stats = summarize_draws(draws_of["theta"].reshape(chains, draws, -1))
    b_stats = summarize_draws(draws_of["b"])
    pairs = np.triu_indices(n_benchmarks, k=1)
    corr_draws = draws_of["corr"][:, :, pairs[0], pairs[1]]
    corr_stats = summarize_draws(corr_draws) if pairs[0].size else None
    stats = {"theta": theta_stats, "b": b_stats}
    if corr_stats is not None:
        stats["corr_pairs"] = corr_stats
    checked = [name for name in ("theta", "b", "mu", "scale", "sigma_b") if name in names]  # convergence: all
    stats.update({name: summarize_draws(draws_of[name]) for name in checked if name not in stats})
    diagnostics = summarize_diagnostics(idata, checked, sampling_time_s=sampling_time,
                                        stats={name: stats[name] for name in checked})
    if corr_stats is not None:  # the correlations' own convergence (the diagonal is 1 exactly)
        worst = int(np.nanargmax(corr_stats["r_hat"]))
        if corr_stats["r_hat"][worst] > (diagnostics["max_r_hat"] or 0):
            diagnostics["max_r_hat"] = float(corr_stats["r_hat"][worst])
            diagnostics["worst_r_hat"] = f"corr[{benchmarks[pairs[0][worst]]}, {benchmarks[pairs[1][worst]]}]"
        low = int(np.nanargmin(corr_stats["ess_bulk"]))
        if corr_stats["ess_bulk"][low] < (diagnostics["min_ess_bulk"] or np.inf):
            diagnostics["min_ess_bulk"] = float(corr_stats["ess_bulk"][low])
            diagnostics["worst_ess_bulk"] = f"corr[{benchmarks[pairs[0][low]]}, {benchmarks[pairs[1][low]]}]"
    diagnostics["compile_time_s"] = compile_time
    diagnostics["route"] = route
    if chosen.draw_b is not None:
        diagnostics["difficulty_draw_time_s"] = draw_time
        diagnostics["quadrature"] = quadrature
    tail = (1.0 - INTERVAL) / 2.0
    flat_corr = draws_of["corr"].reshape(-1, n_benchmarks, n_benchmarks)
    correlation = {"mean": flat_corr.mean(axis=0), "sd": flat_corr.std(axis=0, ddof=1),
                   "low": np.quantile(flat_corr, tail, axis=0), "high": np.quantile(flat_corr, 1 - tail, axis=0),
                   "r_hat": np.full((n_benchmarks, n_benchmarks), np.nan),
                   "ess_bulk": np.full((n_benchmarks, n_benchmarks), np.nan)}
    if corr_stats is not None:
        for key in ("r_hat", "ess_bulk"):
            correlation[key][pairs] = corr_stats[key]
            correlation[key][pairs[1], pairs[0]] = corr_stats[key]
    def spread(name):
        flat = draws_of[name].reshape(-1, n_benchmarks)
        return {"mean": flat.mean(axis=0), "sd": flat.std(axis=0, ddof=1),
                "low": np.quantile(flat, tail, axis=0), "high": np.quantile(flat, 1 - tail, axis=0)}

    scale_summary = spread("scale") if scales == "half-normal" else None
    settings = {"model": "multidimensional 1PL, abilities correlated across benchmarks",
                "prior": ("b_i ~ Normal(0, sigma_b[k(i)]^2), sigma_b_k ~ HalfNormal(3) (hierarchical); "
                          if prior == "hierarchical" else f"b ~ Normal(0, {b_prior_sd:g}^2); ")
                         + "theta_j ~ Normal(mu, diag(s) R diag(s)); "
                         + (f"mu_k ~ Normal(0, {MEAN_SD:g}^2); " if n_benchmarks > 1 else "mu = 0; ")
                         + f"R ~ LKJ({eta:g}); "
                         + ("s = 1 (unit scales)" if scales == "unit" else f"s_k ~ HalfNormal({scale_sd:g})"),
                "means": means if n_benchmarks > 1 else None, "parametrization": parametrization,
                "non_centred_directions": None if basis is None else int(basis[1]),
                "sampler": "nutpie", "density": "compiled (cached)" if cached else "pymc", "route": route,
                "adaptation": adaptation, "chains": chains, "tune": tune,
                "draws": draws,
                "target_accept": float(target_accept), "seed": int(seed), "interval": INTERVAL}
    reshape = {key: value.reshape(n_models, n_benchmarks) for key, value in theta_stats.items()}
    return CorrelatedFit(reshape, b_stats, correlation, scale_summary, diagnostics, settings, idata,
                         spread("sigma_b") if prior == "hierarchical" else None)


def _pymc_compiled(counts, trials, item_benchmark, n_benchmarks: int, *, route: SuiteRoute, sampled: list,
                   **options):
    """nutpie's compiled form of the route's PyMC model and the data its ``draw_b`` needs (None for the joint
    route)."""
    import nutpie
    import pytensor

    model, data = route.build(counts, trials, item_benchmark, n_benchmarks, **options)
    with pytensor.config.change_flags(numba__fastmath=False):
        return nutpie.compile_pymc_model(model, var_names=sampled), data


def _draw_b(data, posterior, n_items: int, seed: int, progress):
    """The collapsed route's second step: exact b draws given every θ draw, added to the posterior dataset."""
    from benchmeasure.suite.mirt_collapsed import draw_all_difficulties, quadrature_checks

    start = time.perf_counter()
    theta = posterior["theta"]
    theta_draws = np.asarray(theta.transpose("chain", "draw", *theta.dims[2:]).values, dtype=float)

    def on_block(done, total):
        if progress is not None:
            progress.update("drawing difficulties", done, total)

    b_seed = int(np.random.SeedSequence([int(seed), 1]).generate_state(1)[0])
    b_draws = draw_all_difficulties(data, theta_draws, n_items, b_seed, on_block=on_block)
    posterior = posterior.assign(b=(("chain", "draw", "b_dim_0"), b_draws))
    check = quadrature_checks(data, theta_draws, seed=int(seed))
    return posterior, check, time.perf_counter() - start


@ROUTES.add("collapsed", draw_b=_draw_b, unit_b_prior=True, compiled_density=True,
            summary="NUTS with every b integrated out, then exact b draws (default)")
def build_collapsed(counts, trials, item_benchmark, n_benchmarks: int, *, b_prior_sd: float, **options):
    """The collapsed route's model (:func:`benchmeasure.suite.mirt_collapsed.build_collapsed_model`) and its data."""
    from benchmeasure.suite.mirt_collapsed import build_collapsed_model

    return build_collapsed_model(counts, trials, item_benchmark, n_benchmarks, **options)


@ROUTES.add("joint", summary="NUTS on everything, every b included")
def build_joint(counts, trials, item_benchmark, n_benchmarks: int, *, b_prior_sd: float, **options):
    """The joint route's model (:func:`build_model`); no data for later draws."""
    return build_model(counts, trials, item_benchmark, n_benchmarks, b_prior_sd=b_prior_sd, **options), None
