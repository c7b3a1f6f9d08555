"""The map route: the marginal posterior mode of b (θ integrated out by quadrature, :mod:`.mode`), no uncertainty.

This module stays cheap to import (the registry reads it); :mod:`.mode` is imported when the route runs.
"""

from __future__ import annotations

from benchmeasure.irt.routes import ROUTES


@ROUTES.add(
    "map", method="map", samplers=(), holes=True,
    summary="the marginal posterior mode of b (theta integrated out), no uncertainty",
    refusals={"anchors": "fixed difficulties need {method} nuts (the posterior mode is not implemented for "
                         "anchored fits)"})
def run(matrix, plan, progress=None):
    """The marginal posterior mode of b and each θ's mode given it: a :class:`~benchmeasure.irt.fit.FitResult`
    whose sd, R-hat and ESS are NaN."""
    import time

    import numpy as np

    from benchmeasure.irt.fit import FitResult
    from benchmeasure.irt.routes.map.mode import marginal_mode

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
