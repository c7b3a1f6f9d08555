"""The collapsed route: NUTS on the abilities' marginal posterior (every b integrated out), then exact draws of b.

The parts, each imported when the route runs (this module stays cheap to import: the registry reads it):

* :mod:`.marginal` — the items grouped by what their integral depends on (:class:`~.marginal.CollapsedData`) and
  the marginal log-likelihood of θ with its gradient (:func:`~.marginal.marginal_logp_grad`);
* :mod:`.holes` — the same on a matrix with holes or K per cell (:class:`~.holes.CollapsedHolesData`);
* :mod:`.quadrature` — the grid, the one-dimensional integrals and exact draws they share;
* :mod:`.difficulties` — the exact draws of every b_i given each θ draw, and the quadrature's accuracy check;
* :mod:`.density` — the density compiled once for nutpie; :mod:`.op` — the PyTensor Op of the marginal (PyMC's
  NUTS runs :func:`benchmeasure.irt.model.build_collapsed_model`).
"""

from __future__ import annotations

from benchmeasure.irt.routes import ROUTES


@ROUTES.add(
    "collapsed",
    summary="NUTS on the abilities' marginal posterior (every b integrated out), then exact draws of b",
    refusals={"sampler": "the collapsed route runs with {sampler} nutpie or pymc; numpyro samples the joint model "
                         "(use {route} joint with {sampler} numpyro)",
              "anchors": "fixed difficulties are fitted on the joint route ({route} joint or auto): the collapsed "
                         "route integrates every difficulty out"})
def run(matrix, plan, progress=None):
    """NUTS on θ's marginal, then exact draws of b given each θ draw (a :class:`~benchmeasure.irt.fit.FitResult`)."""
    from benchmeasure.irt import warm

    # an empty kernel cache: a second process compiles the kernels used after NUTS while this one compiles the
    # density (irt/warm.py)
    child = warm.start(warm.kind_of(getattr(matrix, "trials", None), plan.guessing))
    try:
        return _collapsed(matrix, plan, progress)
    finally:
        warm.stop(child)


def _collapsed(matrix, plan, progress):
    import time

    import numpy as np

    from benchmeasure.irt.diagnostics import summarize_diagnostics, summarize_draws
    from benchmeasure.irt.routes.collapsed.difficulties import draw_difficulties, quadrature_check
    from benchmeasure.irt.routes.collapsed.marginal import collapsed_data
    from benchmeasure.irt.routes.nuts import NutsRun, nuts_result, run_nuts

    run, g, settings = NutsRun.of(plan, progress), plan.guessing, plan.record(matrix.items)
    if run.settings.sampler == "nutpie":   # the compiled density (density.py): no graph to compile
        from benchmeasure.irt.routes.collapsed.density import collapsed_density

        data = collapsed_data(matrix.counts, matrix.n_trials, g, getattr(matrix, "trials", None))
        model = collapsed_density(data, matrix.models)
    else:                                   # PyMC's own NUTS runs the reference model
        from benchmeasure.irt.model import build_collapsed_model

        model, data = build_collapsed_model(matrix.counts, matrix.n_trials, g, models=matrix.models,
                                            trials=getattr(matrix, "trials", None))
    idata, compile_time, sampling_time = run_nuts(model, ["theta"], run)
    seed_used = run.seed_used
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
    return nuts_result(matrix, b_stats, theta_stats, diagnostics, settings, idata)
