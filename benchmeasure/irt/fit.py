"""Fit the paper's Bayesian 1PL model (Appendix C.3) to a response matrix.

    from benchmeasure.core.matrix import read_matrix
    from benchmeasure.irt.fit import fit_1pl

    result = fit_1pl(read_matrix("response_matrix.csv", n_trials=2), seed=1)
    result.b_mean, result.b_sd, result.r_hat, result.ess_bulk     # per item, matrix order
    result.theta_mean, result.theta_sd                            # per model
    result.diagnostics["max_r_hat"], result.diagnostics["min_ess_bulk"], result.diagnostics["divergences"]
    result.posterior                   # theta and b draws (Draws, also read as their ArviZ DataTree), None for MAP

Two routes sample the same posterior (``route``):

* ``"collapsed"`` (default with nutpie and PyMC): NUTS on the abilities' marginal posterior,
  every b_i integrated out by quadrature (:func:`benchmeasure.irt.model.build_collapsed_model`),
  then each b_i drawn exactly from its one-dimensional conditional given every θ draw
  (:mod:`benchmeasure.irt.collapsed`). NUTS runs in M dimensions whatever N is.
* ``"joint"``: NUTS on (θ, b) together (:func:`benchmeasure.irt.model.build_model`), the
  only route numpyro runs.

Either model is built once and handed to the chosen sampler: nutpie (default, compiled
with Numba), PyMC's own NUTS, or numpyro (JAX, optional). ``method="map"`` returns the marginal
posterior mode of b instead (:mod:`benchmeasure.irt.marginal_mode`: abilities integrated out by
quadrature, as marginal maximum likelihood does; θ the mode given that b), with no uncertainty (sd,
R-hat and ESS are NaN).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.irt.diagnostics import per_parameter, summarize_diagnostics
from benchmeasure.irt.observation import get as get_observation
from benchmeasure.irt.routes import ROUTES, FitPlan, plan_fit
from benchmeasure.irt.settings import (  # noqa: F401
    FIELDS,
    METHODS,
    SAMPLERS,
    FitSettings,
    SettingsError,
    check_numpyro_available,
)

POSTERIOR_NAME = "posterior.zarr"  # the posterior draws beside a fit's CSVs (benchmeasure fit --save-posterior)
DEFAULTS = {"chains": 4, "tune": 1000, "draws": 1000, "target_accept": 0.95}


@dataclass
class FitResult:
    """Posterior summaries of a 1PL fit.

    Per item (length N, matrix order): ``b_mean``, ``b_sd``, ``r_hat``, ``ess_bulk``.
    Per model (length M): ``theta_mean``, ``theta_sd``, ``theta_r_hat``, ``theta_ess_bulk``.
    For ``method == "map"`` the means are the posterior mode and every sd, R-hat and ESS
    is NaN (a mode carries no uncertainty).

    ``diagnostics`` holds ``max_r_hat``, ``min_ess_bulk``, ``divergences`` (None/None/0 for
    MAP), ``leapfrog_steps_per_draw``, ``compile_time_s``, ``sampling_time_s``,
    ``wall_time_s`` and the rest of :func:`~benchmeasure.irt.diagnostics.summarize_diagnostics`.
    ``settings`` records how the fit was run (method, route, sampler, chains, tune, draws,
    target_accept, seed, seed_used, guessing). On the collapsed route the ``b`` draws are
    stored as float32 (4 bytes × chains × draws × N); every summary is computed in float64.
    ``posterior`` holds the ``theta`` (dim ``model``) and ``b`` (dim ``item``) draws, or None for MAP: a
    :class:`~benchmeasure.irt.draws.Draws` (plain arrays, which also answers as the ArviZ DataTree of the same,
    made when first asked for) or an ArviZ DataTree.
    """

    models: list
    items: list
    n_trials: int
    method: str
    b_mean: np.ndarray
    b_sd: np.ndarray
    r_hat: np.ndarray
    ess_bulk: np.ndarray
    theta_mean: np.ndarray
    theta_sd: np.ndarray
    theta_r_hat: np.ndarray
    theta_ess_bulk: np.ndarray
    diagnostics: dict
    settings: dict
    posterior: object = None
    warnings: list = field(default_factory=list)
    ess_tail: np.ndarray | None = None         # per item, when the fit computed it with the other summaries
    theta_ess_tail: np.ndarray | None = None   # per model

    @property
    def has_uncertainty(self) -> bool:
        return self.method == "nuts"

    def draws(self, var_name: str = "b", dtype=float) -> np.ndarray:
        """Posterior draws of ``theta`` or ``b`` stacked over chains: shape (chains·draws, M or N), as ``dtype``
        (``None``: as stored, float32 b on the collapsed route, with no copy)."""
        if self.posterior is None:
            raise ValueError("a MAP fit has no posterior draws")
        from benchmeasure.irt.draws import Draws

        values = np.asarray(Draws.of(self.posterior).values(var_name), dtype=dtype)
        return values.reshape(-1, values.shape[-1])

    def interval(self, var_name: str = "b", prob: float = 0.94) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed posterior interval of each element of ``theta`` or ``b``."""
        d = self.draws(var_name)
        tail = (1.0 - prob) / 2.0
        return np.quantile(d, tail, axis=0), np.quantile(d, 1.0 - tail, axis=0)

    def difficulty_columns(self) -> dict:
        """``item,b_mean,b_sd,r_hat,ess_bulk`` as column → values: what difficulty.csv holds."""
        return {"item": self.items, "b_mean": self.b_mean, "b_sd": self.b_sd, "r_hat": self.r_hat,
                "ess_bulk": self.ess_bulk}

    def ability_columns(self) -> dict:
        """``model,theta_mean,theta_sd,r_hat,ess_bulk`` as column → values: what ability.csv holds."""
        return {"model": self.models, "theta_mean": self.theta_mean, "theta_sd": self.theta_sd,
                "r_hat": self.theta_r_hat, "ess_bulk": self.theta_ess_bulk}

    def difficulty_table(self):
        """pandas DataFrame of :meth:`difficulty_columns`."""
        import pandas as pd

        return pd.DataFrame(self.difficulty_columns())

    def ability_table(self):
        """pandas DataFrame of :meth:`ability_columns`."""
        import pandas as pd

        return pd.DataFrame(self.ability_columns())


# ---------------------------------------------------------------------------------------------
# validation (everything is checked before any compilation or sampling)


def check_guessing(guessing, n_items: int, items=None):
    """Return ``guessing`` as a float or a float array of shape (N,), each in [0, 1); else InputError."""
    if np.ndim(guessing) == 0:
        try:
            g = float(guessing)
        except (TypeError, ValueError):
            fail(f"guessing must be a number in [0, 1), got {guessing!r}")
        if not (math.isfinite(g) and 0.0 <= g < 1.0):
            fail(f"guessing must be in [0, 1), got {g}")
        return g
    g = np.asarray(guessing, dtype=float)
    if g.shape != (n_items,):
        fail(f"per-item guessing must have one value per item ({n_items}), got shape {g.shape}")
    bad = np.flatnonzero(~(np.isfinite(g) & (g >= 0.0) & (g < 1.0)))
    if bad.size:
        k = int(bad[0])
        name = items[k] if items is not None else k
        fail(f"guessing for item {name!r} is {g[k]}, outside [0, 1)")
    return g


def check_settings(**fields) -> FitSettings:
    """The :class:`~benchmeasure.irt.settings.FitSettings` of ``fields``; one InputError line if impossible."""
    return FitSettings(**fields)


# ---------------------------------------------------------------------------------------------
# the fit


def fit_1pl(matrix: ResponseMatrix, *, guessing=0.0, settings: FitSettings | None = None, progress=False,
            fixed_b=None, plan: FitPlan | None = None, **fields) -> FitResult:
    """Fit the Bayesian 1PL model of paper Appendix C.3 to ``matrix``.

    Parameters
    ----------
    matrix : ResponseMatrix
        Counts of correct answers, models × items, ``matrix.n_trials`` trials per cell.
    guessing : float or array_like of shape (N,)
        Lower asymptote g in [0, 1), one constant or one value per item (matrix order).
    settings : FitSettings, optional
        How to fit (:class:`benchmeasure.irt.settings.FitSettings`: method, sampler, chains, tune, draws,
        target_accept, seed, route, parametrization, adaptation, cores, observation); the defaults are the
        paper's (NUTS, 4 chains × (1,000 warm-up + 1,000 draws), 0.95, binomial). Instead of ``settings``
        its fields may be given as keywords (``fit_1pl(m, seed=1, draws=500)``). A fit with the same seed,
        inputs and sampler gives identical draws; with ``seed=None`` a seed is drawn and recorded in
        ``result.settings["seed_used"]``.
    progress : bool or :class:`benchmeasure.irt.progress.Progress`
        Show progress on stderr (a redrawn line on a terminal, a line every ~10 s in a log):
        True makes one, or pass your own.
    fixed_b : array_like of shape (N,), optional
        Anchored fit: finite entries hold those items' b fixed (NaN: free); NUTS on the joint route.
        Fixed items come back with their value as ``b_mean``, ``b_sd`` 0 and no R-hat/ESS, and
        ``settings["fixed_items"]`` lists them; convergence is judged on θ and the free b.
    plan : FitPlan, optional
        The plan already resolved from these inputs (:func:`benchmeasure.irt.routes.plan_fit`, as the command
        does before writing anything); then ``guessing``, ``settings`` and ``fixed_b`` are the plan's.

    Returns
    -------
    FitResult
    """
    wall_start = time.perf_counter()
    if plan is None:
        if settings is not None and fields:
            fail(f"give fit settings either as settings= or as keywords, not both ({', '.join(sorted(fields))})")
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise TypeError(f"fit_1pl() got an unexpected keyword argument {unknown[0]!r}")
        plan = plan_fit(matrix, settings if settings is not None else FitSettings(**fields), guessing, fixed_b)
    from benchmeasure.irt.progress import Progress

    s = plan.settings
    shown = None
    if plan.nuts:
        shown = progress if isinstance(progress, Progress) else (
            Progress("1PL fit", chains=s.chains) if progress else None)
    with (shown if shown is not None else contextlib.nullcontext()):
        result = plan.entry.run(matrix, plan, shown)
    fallback = _auto_fallback(result, plan)
    if fallback is not None:   # auto chose gibbs and it did not mix: the collapsed route samples the same posterior
        plan, why = fallback
        with (shown if shown is not None else contextlib.nullcontext()):
            result = plan.entry.run(matrix, plan, shown)
        result.diagnostics["route_fallback"] = why
    if plan.nuts:
        result = _finish(result, matrix, plan)
    result.diagnostics["wall_time_s"] = time.perf_counter() - wall_start
    return result


def _auto_fallback(result: FitResult, plan: FitPlan) -> tuple[FitPlan, dict] | None:
    """The collapsed route's plan, and why, when ``--route auto`` chose gibbs and its chains did not mix (max R-hat
    above the rule, or bulk ESS below it): a real growing benchmark's weakest models (θ ≈ −6) left gibbs at R-hat 2.15
    where the collapsed route converges (issue 31). None otherwise, or when the collapsed route refuses the fit."""
    from benchmeasure.core.difficulty_file import ESS_BULK_MIN, R_HAT_MAX

    d = result.diagnostics
    r_hat, ess = d.get("max_r_hat"), d.get("min_ess_bulk")
    if not (plan.auto and plan.route == "gibbs") or (
            (r_hat is None or r_hat <= R_HAT_MAX) and (ess is None or ess >= ESS_BULK_MIN)):
        return None
    settings = dataclasses.replace(plan.settings, route="collapsed")
    if ROUTES["collapsed"].refusal(settings, holes=plan.holes, anchors=plan.fixed_b is not None) is not None:
        return None
    why = {"from": "gibbs", "to": "collapsed", "gibbs_max_r_hat": r_hat, "gibbs_min_ess_bulk": ess,
           "gibbs_sampling_time_s": d.get("sampling_time_s")}
    return dataclasses.replace(plan, route="collapsed", settings=settings), why


def _finish(result: FitResult, matrix: ResponseMatrix, plan: FitPlan) -> FitResult:
    """Tied items get their pooled b_mean/b_sd (irt/ties.py); binomial K > 1 fits without holes get the
    dispersion check (irt/dispersion.py, which compares with binomial replicates of one K)."""
    from benchmeasure.irt.dispersion import dispersion_check
    from benchmeasure.irt.ties import pool_moments, tie_groups, tie_summary

    g, fixed_b, seed, observation = plan.guessing, plan.fixed_b, plan.seed_used, plan.settings.observation
    trials = getattr(matrix, "trials", None)
    # the column sum is sufficient for b only under the binomial; other observation models tie whole columns
    whole = observation != "binomial"
    result.diagnostics["ties"] = tie_summary(matrix.counts, g, trials=trials, whole_column=whole)
    b_draws = result.draws("b", dtype=None)   # as stored, no copy
    if fixed_b is None:   # b_mean, b_sd are each item's own draws' moments: pooled without reading the draws
        result.b_mean, result.b_sd = pool_moments(tie_groups(matrix.counts, g, trials=trials, whole_column=whole),
                                                  result.b_mean, result.b_sd, b_draws.shape[0])
    if trials is None and observation == "binomial":
        result.diagnostics["dispersion"] = dispersion_check(matrix.counts, matrix.n_trials,
                                                            result.draws("theta"), b_draws, g, seed=seed)
    return result


def gibbs_preferred(matrix: ResponseMatrix, g) -> bool:
    """``auto`` takes the gibbs route for a matrix with holes where the collapsed route shares few integrals
    (:func:`benchmeasure.irt.gibbs.prefers_gibbs`)."""
    trials = getattr(matrix, "trials", None)
    if trials is None:   # a complete matrix never takes gibbs: its kernels need not be loaded
        return False
    from benchmeasure.irt.gibbs import prefers_gibbs

    return prefers_gibbs(matrix.counts, trials, matrix.n_trials, g)[0]


def run_gibbs(matrix, plan: FitPlan, progress=None) -> FitResult:
    """The gibbs route: blocked Gibbs on (θ, b) with exact conditional updates (:mod:`benchmeasure.irt.gibbs`)."""
    from benchmeasure.irt.gibbs import gibbs_posterior

    run, g, settings = _Run.of(plan, progress), plan.guessing, plan.record(matrix.items)
    s = run.settings
    trials = getattr(matrix, "trials", None)
    if trials is None:
        trials = np.full(np.shape(matrix.counts), matrix.n_trials, dtype=np.int64)
    idata, b_stats, theta_stats, diagnostics = gibbs_posterior(
        matrix.counts, trials, models=matrix.models, items=matrix.items, chains=s.chains, tune=s.tune,
        draws=s.draws, seed=run.seed_used, cores=run.cores, guessing=g, progress=run.progress)
    return _nuts_result(matrix, b_stats, theta_stats, diagnostics, settings, idata)


@dataclass(frozen=True)
class _Run:
    """A NUTS run: the checked settings plus what was resolved from them (seed, cores, progress display)."""

    settings: FitSettings
    seed_used: int
    cores: int
    progress: object

    @classmethod
    def of(cls, plan: FitPlan, progress) -> _Run:
        s = plan.settings
        return cls(s, plan.seed_used, s.cores if s.cores is not None else min(s.chains, available_cpus()), progress)


def _run_nuts(model, var_names, run: _Run):
    """Sample ``model`` with nutpie or PyMC's NUTS; returns (:class:`~benchmeasure.irt.draws.Draws` of
    ``var_names``, compile_time_s, sampling_time_s)."""
    s, progress, seed_used, cores = run.settings, run.progress, run.seed_used, run.cores
    sampler, chains, tune, draws, target_accept = s.sampler, s.chains, s.tune, s.draws, s.target_accept
    compile_start = time.perf_counter()
    if progress is not None:
        progress.update("loading the compiled sampler" if _is_density(model) else "compiling", 0, 0)
    if sampler == "nutpie":
        from benchmeasure.irt.compiled import Density
        from benchmeasure.irt.nutpie_run import import_nutpie, nutpie_model, sample_nutpie

        nutpie = import_nutpie()

        if isinstance(model, Density):   # compiled once per package version, loaded from the kernel cache
            compiled = nutpie_model(model)
        else:
            import pytensor

            # PyTensor's default fast-math flags let LLVM reassociate the graph's small reductions
            # in an address-dependent way, so the same seed could give different last bits (and
            # then different draws). The hot loop is the fused kernel, which keeps its own flags.
            with pytensor.config.change_flags(numba__fastmath=False):
                compiled = nutpie.compile_pymc_model(model, var_names=var_names)
        compile_time = time.perf_counter() - compile_start
        sample_start = time.perf_counter()
        callback = progress.nutpie_callback(tune + draws) if progress is not None else None
        idata = sample_nutpie(nutpie, compiled, chains=chains, tune=tune, draws=draws, seed=seed_used, cores=cores,
                              target_accept=float(target_accept), adaptation=s.adaptation, progress_bar=False,
                              progress_callback=callback, save_warmup=False)
        sampling_time = time.perf_counter() - sample_start
    else:
        import pymc as pm

        if progress is not None:
            progress.update(f"NUTS ({'numpyro' if sampler == 'numpyro' else 'PyMC'})", 0, 0)
        sample_start = time.perf_counter()
        with _quiet_logger("pymc", quiet=True):
            idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed_used,
                              target_accept=float(target_accept), nuts_sampler=sampler, model=model,
                              progressbar=False, compute_convergence_checks=False, var_names=var_names)
        total = time.perf_counter() - sample_start
        reported = idata["posterior"].attrs.get("sampling_time")
        sampling_time = float(reported) if reported else total
        compile_time = max(total - sampling_time, 0.0)
    return _keep(idata, var_names), compile_time, sampling_time


def _is_density(model) -> bool:
    return type(model).__name__ == "Density" and type(model).__module__ == "benchmeasure.irt.compiled"


def run_collapsed(matrix, plan: FitPlan, progress=None) -> FitResult:
    """The collapsed route: NUTS on θ's marginal, then exact draws of b given each θ draw."""
    from benchmeasure.irt import warm

    run, g, settings = _Run.of(plan, progress), plan.guessing, plan.record(matrix.items)
    # an empty kernel cache: a second process compiles the kernels used after NUTS while this one compiles the
    # density (irt/warm.py)
    child = warm.start(warm.kind_of(getattr(matrix, "trials", None), g))
    try:
        return _collapsed(matrix, plan, run, g, settings)
    finally:
        warm.stop(child)


def _collapsed(matrix, plan, run, g, settings) -> FitResult:
    from benchmeasure.irt.collapsed import collapsed_data, draw_difficulties, quadrature_check
    from benchmeasure.irt.compiled import collapsed_density
    from benchmeasure.irt.diagnostics import summarize_draws
    from benchmeasure.irt.model import build_collapsed_model

    if run.settings.sampler == "nutpie":   # the compiled density (irt/compiled.py): no graph to compile
        data = collapsed_data(matrix.counts, matrix.n_trials, g, getattr(matrix, "trials", None))
        model = collapsed_density(data, matrix.models)
    else:                                   # PyMC's own NUTS runs the reference model
        model, data = build_collapsed_model(matrix.counts, matrix.n_trials, g, models=matrix.models,
                                            trials=getattr(matrix, "trials", None))
    idata, compile_time, sampling_time = _run_nuts(model, ["theta"], run)
    progress, seed_used = run.progress, run.seed_used
    theta_draws = np.asarray(idata.values("theta"), dtype=float)   # (chain, draw, model)
    draw_start = time.perf_counter()
    total_draws = theta_draws.shape[0] * theta_draws.shape[1]

    def on_block(done, total):
        if progress is not None:
            progress.update("drawing difficulties", done, total)

    on_block(0, total_draws)
    b_seed = int(np.random.SeedSequence([seed_used, 1]).generate_state(1)[0])
    b_draws = draw_difficulties(data, theta_draws, b_seed, on_block=on_block)
    draw_time = time.perf_counter() - draw_start
    check = quadrature_check(data, theta_draws, seed=seed_used)
    idata = idata.with_variable("b", ("item",), b_draws, {"item": list(matrix.items)})
    summary_start = time.perf_counter()

    def on_chunk(done, total):
        if progress is not None:
            progress.update("summarizing (R-hat, ESS per item)", done, total)

    on_chunk(0, len(matrix.items))
    b_stats = summarize_draws(b_draws, on_chunk=on_chunk)
    theta_stats = summarize_draws(theta_draws)
    diagnostics = summarize_diagnostics(idata, ["theta", "b"], sampling_time_s=sampling_time,
                                        stats={"theta": theta_stats, "b": b_stats})
    diagnostics["compile_time_s"] = compile_time
    diagnostics["difficulty_draw_time_s"] = draw_time
    diagnostics["summary_time_s"] = time.perf_counter() - summary_start
    diagnostics["quadrature"] = check
    diagnostics["route"] = "collapsed"
    return _nuts_result(matrix, b_stats, theta_stats, diagnostics, settings, idata)


def _nuts_result(matrix, b_stats, theta_stats, diagnostics, settings, idata) -> FitResult:
    """The :class:`FitResult` of a NUTS fit from the per-parameter summaries of b and θ (either route)."""
    return FitResult(
        models=list(matrix.models), items=list(matrix.items), n_trials=matrix.n_trials, method="nuts",
        b_mean=b_stats["mean"], b_sd=b_stats["sd"], r_hat=b_stats["r_hat"], ess_bulk=b_stats["ess_bulk"],
        theta_mean=theta_stats["mean"], theta_sd=theta_stats["sd"], theta_r_hat=theta_stats["r_hat"],
        theta_ess_bulk=theta_stats["ess_bulk"], diagnostics=diagnostics, settings=settings, posterior=idata,
        ess_tail=b_stats.get("ess_tail"), theta_ess_tail=theta_stats.get("ess_tail"),
    )


def run_joint(matrix, plan: FitPlan, progress=None) -> FitResult:
    """The joint route: NUTS on (θ, b) together (on θ and the free b when the plan holds anchors)."""
    run, g, settings, fixed_b = _Run.of(plan, progress), plan.guessing, plan.record(matrix.items), plan.fixed_b
    from benchmeasure.irt.model import build_model

    s = run.settings
    observation = get_observation(s.observation)
    trials = getattr(matrix, "trials", None)  # holes: the trials matrix in place of K (PyTensor kernel)
    if s.sampler == "nutpie" and trials is None and observation.fused is not None and not observation.parameters:
        from benchmeasure.irt.compiled import joint_density  # compiled once, loaded from the kernel cache

        model = joint_density(matrix.counts, matrix.n_trials, g, models=matrix.models, items=matrix.items,
                              parametrization=s.parametrization, fixed_b=fixed_b)
    else:
        model = build_model(matrix.counts, matrix.n_trials if trials is None else trials.astype(float), g,
                            models=matrix.models, items=matrix.items, parametrization=s.parametrization,
                            kernel="pytensor" if s.sampler == "numpyro" or trials is not None else "fused",
                            fixed_b=fixed_b, observation=observation)
    own = [p.name for p in observation.parameters]  # the observation model's parameters (beta-binomial: rho)
    names = (["theta", "b"] if fixed_b is None else ["theta", "b", "b_free"]) + own
    checked = (["theta", "b"] if fixed_b is None else ["theta", "b_free"]) + own
    idata, compile_time, sampling_time = _run_nuts(model, names, run)
    idata = _keep(idata, names)
    b_stats = per_parameter(idata, "b")
    theta_stats = per_parameter(idata, "theta")
    stats = {"theta": theta_stats, "b": b_stats}
    if fixed_b is not None:  # anchors: exactly their value, nothing to diagnose
        anchored = np.isfinite(np.asarray(fixed_b, dtype=float))
        stats = {"theta": theta_stats, "b_free": per_parameter(idata, "b_free")}
        b_stats["sd"][anchored] = 0.0
        b_stats["r_hat"][anchored] = np.nan
        b_stats["ess_bulk"][anchored] = np.nan
    stats.update({name: per_parameter(idata, name) for name in own})
    diagnostics = summarize_diagnostics(idata, checked, sampling_time_s=sampling_time, stats=stats)
    diagnostics["compile_time_s"] = compile_time
    diagnostics["route"] = "joint"
    if own:  # the observation model's own parameters: posterior mean, sd, R-hat, ESS of each
        diagnostics["observation"] = {"name": observation.name, **{
            name: {key: float(stats[name][key][0]) for key in ("mean", "sd", "r_hat", "ess_bulk")} for name in own}}
    return _nuts_result(matrix, b_stats, theta_stats, diagnostics, settings, idata)


def run_map(matrix, plan: FitPlan, progress=None) -> FitResult:
    """The map route: the marginal posterior mode of b (:mod:`benchmeasure.irt.marginal_mode`)."""
    from benchmeasure.irt.marginal_mode import marginal_mode

    guessing, settings = plan.guessing, plan.record(matrix.items)

    start = time.perf_counter()
    theta, b, info = marginal_mode(matrix.counts, matrix.n_trials, guessing, trials=getattr(matrix, "trials", None))
    optimize_time = time.perf_counter() - start
    m, n = len(matrix.models), len(matrix.items)
    nan_n, nan_m = np.full(n, np.nan), np.full(m, np.nan)
    diagnostics = {
        "max_r_hat": None, "min_ess_bulk": None, "divergences": 0,
        "note": "marginal posterior mode of b (theta integrated out by quadrature, as marginal maximum likelihood "
                "does), theta the mode given that b: no posterior uncertainty; b_sd, r_hat and ess_bulk are empty",
        "optimization_time_s": optimize_time,
        "optimizer": info,
        "sampling_time_s": None,
        "compile_time_s": None,
        "leapfrog_steps_per_draw": None,
        "wall_time_s": None,   # set by fit_1pl
    }
    return FitResult(
        models=list(matrix.models), items=list(matrix.items), n_trials=matrix.n_trials, method="map",
        b_mean=np.asarray(b, dtype=float), b_sd=nan_n, r_hat=nan_n.copy(), ess_bulk=nan_n.copy(),
        theta_mean=np.asarray(theta, dtype=float), theta_sd=nan_m, theta_r_hat=nan_m.copy(),
        theta_ess_bulk=nan_m.copy(), diagnostics=diagnostics, settings=settings, posterior=None,
    )


def _keep(idata, names):
    """The draws of ``names`` only (drops the sampler's internal variables), as a
    :class:`~benchmeasure.irt.draws.Draws`."""
    from benchmeasure.irt.draws import Draws

    return Draws.of(idata).keep(names)


@contextlib.contextmanager
def _quiet_logger(name: str, quiet: bool):
    """Silence a library's informational log lines (PyMC's "Initializing NUTS…") unless showing progress."""
    logger = logging.getLogger(name)
    level = logger.level
    if quiet:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, so a container's limit counts)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1
