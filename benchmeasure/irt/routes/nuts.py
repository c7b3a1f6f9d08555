"""Running NUTS on a route's model, shared by the collapsed and joint routes: nutpie on a compiled density
(:mod:`benchmeasure.irt.compiled`) or a PyMC model, or PyMC's own NUTS (numpyro through it), and the
:class:`~benchmeasure.irt.fit.FitResult` of the per-parameter summaries."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass

from benchmeasure.irt.fit import FitResult, available_cpus


@dataclass(frozen=True)
class NutsRun:
    """A NUTS run: the checked settings plus what was resolved from them (seed, cores, progress display)."""

    settings: object
    seed_used: int
    cores: int
    progress: object

    @classmethod
    def of(cls, plan, progress) -> NutsRun:
        s = plan.settings
        return cls(s, plan.seed_used, s.cores if s.cores is not None else min(s.chains, available_cpus()), progress)


def run_nuts(model, var_names, run: NutsRun):
    """Sample ``model`` with nutpie or PyMC's NUTS; returns (:class:`~benchmeasure.irt.draws.Draws` of
    ``var_names``, compile_time_s, sampling_time_s)."""
    s, progress, seed_used, cores = run.settings, run.progress, run.seed_used, run.cores
    sampler, chains, tune, draws, target_accept = s.sampler, s.chains, s.tune, s.draws, s.target_accept
    compile_start = time.perf_counter()
    if progress is not None:
        progress.update("loading the compiled sampler" if is_density(model) else "compiling", 0, 0)
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
    return keep(idata, var_names), compile_time, sampling_time


def is_density(model) -> bool:
    """Whether ``model`` is a compiled :class:`~benchmeasure.irt.compiled.Density` (not a PyMC model), without
    importing that module (Numba) where the fit does not use it."""
    return type(model).__name__ == "Density" and type(model).__module__ == "benchmeasure.irt.compiled"


def keep(idata, names):
    """The draws of ``names`` only (drops the sampler's internal variables), as a
    :class:`~benchmeasure.irt.draws.Draws`."""
    from benchmeasure.irt.draws import Draws

    return Draws.of(idata).keep(names)


def nuts_result(matrix, b_stats, theta_stats, diagnostics, settings, idata) -> FitResult:
    """The :class:`FitResult` of a sampled fit from the per-parameter summaries of b and θ (every sampling route)."""
    return FitResult(
        models=list(matrix.models), items=list(matrix.items), n_trials=matrix.n_trials, method="nuts",
        b_mean=b_stats["mean"], b_sd=b_stats["sd"], r_hat=b_stats["r_hat"], ess_bulk=b_stats["ess_bulk"],
        theta_mean=theta_stats["mean"], theta_sd=theta_stats["sd"], theta_r_hat=theta_stats["r_hat"],
        theta_ess_bulk=theta_stats["ess_bulk"], diagnostics=diagnostics, settings=settings, posterior=idata,
        ess_tail=b_stats.get("ess_tail"), theta_ess_tail=theta_stats.get("ess_tail"),
    )


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
