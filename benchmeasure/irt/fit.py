"""Fit the paper's Bayesian 1PL model (Appendix C.3) to a response matrix.

    from benchmeasure.core.matrix import read_matrix
    from benchmeasure.irt.fit import fit_1pl

    result = fit_1pl(read_matrix("response_matrix.csv", n_trials=2), seed=1)
    result.b_mean, result.b_sd, result.r_hat, result.ess_bulk     # per item, matrix order
    result.theta_mean, result.theta_sd                            # per model
    result.diagnostics["max_r_hat"], result.diagnostics["min_ess_bulk"], result.diagnostics["divergences"]
    result.posterior                   # theta and b draws (Draws, also read as their ArviZ DataTree), None for MAP

The fit runs the plan of :mod:`benchmeasure.irt.plan` (settings, route, seed: :func:`~benchmeasure.irt.plan.plan_fit`)
by calling its route (:mod:`benchmeasure.irt.routes`: ``collapsed``, the default, NUTS on θ's marginal with every
b integrated out and then exact draws of b; ``joint``, NUTS on (θ, b); ``gibbs``, blocked Gibbs for sparse
matrices; ``map``, the marginal posterior mode of b with no uncertainty: sd, R-hat and ESS are NaN), then pools
tied items and checks the dispersion (:func:`_finish`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from dataclasses import dataclass, field

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.irt.fit_folder import POSTERIOR_NAME  # noqa: F401 - a public name of the fit
from benchmeasure.irt.plan import FIELDS, FitPlan, FitSettings, plan_fit


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
    a_mean: np.ndarray | None = None           # per item, the 2PL's slopes (fit --model 2pl); None for the 1PL
    a_sd: np.ndarray | None = None

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
        """``item,b_mean,b_sd,r_hat,ess_bulk`` as column → values: what difficulty.csv holds (then ``a_mean,a_sd``
        for the 2PL)."""
        columns = {"item": self.items, "b_mean": self.b_mean, "b_sd": self.b_sd, "r_hat": self.r_hat,
                   "ess_bulk": self.ess_bulk}
        if self.a_mean is not None:
            columns.update(a_mean=self.a_mean, a_sd=self.a_sd)
        return columns

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
        How to fit (:class:`benchmeasure.irt.plan.FitSettings`: method, sampler, chains, tune, draws,
        target_accept, seed, route, parametrization, adaptation, cores, observation); the defaults are the
        paper's (NUTS, 4 chains × (1,000 warm-up + 1,000 draws), 0.95, binomial), but ``tune``, ``draws`` and
        ``target_accept`` left unset take the route's own where it declares them (``model="2pl"``: the 2pl
        route's, docs/irt.md). Instead of ``settings``
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
        The plan already resolved from these inputs (:func:`benchmeasure.irt.plan.plan_fit`, as the command
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
    if plan.refusal("collapsed") is not None:
        return None
    settings = dataclasses.replace(plan.settings, route="collapsed")
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
    # the column sum is sufficient for b only under the binomial 1PL; other models tie whole columns
    whole = observation != "binomial" or plan.settings.model != "1pl"
    result.diagnostics["ties"] = tie_summary(matrix.counts, g, trials=trials, whole_column=whole)
    b_draws = result.draws("b", dtype=None)   # as stored, no copy
    if fixed_b is None:   # b_mean, b_sd are each item's own draws' moments: pooled without reading the draws
        result.b_mean, result.b_sd = pool_moments(tie_groups(matrix.counts, g, trials=trials, whole_column=whole),
                                                  result.b_mean, result.b_sd, b_draws.shape[0])
    if trials is None and observation == "binomial" and plan.settings.model == "1pl":   # replicates of the 1PL
        result.diagnostics["dispersion"] = dispersion_check(matrix.counts, matrix.n_trials,
                                                            result.draws("theta"), b_draws, g, seed=seed)
    return result


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, so a container's limit counts)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1
