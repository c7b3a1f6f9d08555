"""The joint route: NUTS on (θ, b) together, the only route for numpyro, anchors and other observation models.

The parts, each imported when the route runs (this module stays cheap to import: the registry reads it):
:mod:`.kernel` (the fused binomial log-likelihood and its gradient), :mod:`.op` (it as a PyTensor Op, for the
PyMC model :func:`benchmeasure.irt.model.build_model`), :mod:`.density` (the density compiled once for nutpie) and
:mod:`.hierarchical` (the same under ``--prior hierarchical``, holes included).
"""

from __future__ import annotations

from benchmeasure.irt.routes import ROUTES


@ROUTES.add(
    "joint", samplers=("nutpie", "pymc", "numpyro"), anchors=("nutpie", "pymc"), priors=("paper", "hierarchical"),
    summary="NUTS on (theta, b) together; the only route for numpyro, anchors and other observation models",
    refusals={"anchors": "fixed difficulties are fitted by {sampler} nutpie or pymc on the joint route"})
def run(matrix, plan, progress=None):
    """NUTS on (θ, b) together (on θ and the free b when the plan holds anchors): a
    :class:`~benchmeasure.irt.fit.FitResult`."""
    import numpy as np

    from benchmeasure.irt.diagnostics import per_parameter, summarize_diagnostics
    from benchmeasure.irt.model import build_model
    from benchmeasure.irt.observation import get as get_observation
    from benchmeasure.irt.priors import get as get_prior
    from benchmeasure.irt.routes.nuts import NutsRun, is_density, keep, nuts_result, run_nuts

    run, g, settings, fixed_b = NutsRun.of(plan, progress), plan.guessing, plan.record(matrix.items), plan.fixed_b
    s = run.settings
    observation = get_observation(s.observation)
    trials = getattr(matrix, "trials", None)  # holes: the trials matrix in place of K
    prior = get_prior(s.prior)   # the paper's N(0, 1) is built into the compiled density; another prior: its own
    compiled = s.sampler == "nutpie" and observation.fused is not None and not observation.parameters
    model = None
    if compiled and trials is None and not prior.hyper:
        from benchmeasure.irt.routes.joint.density import joint_density  # compiled once, loaded from the kernel cache

        model = joint_density(matrix.counts, matrix.n_trials, g, models=matrix.models, items=matrix.items,
                              parametrization=s.parametrization, fixed_b=fixed_b)
    elif compiled and prior.compiled is not None:   # the prior's own compiled density (holes too), or None
        model = prior.compiled(matrix.counts, matrix.n_trials, g, models=matrix.models, items=matrix.items,
                               trials=trials, parametrization=s.parametrization, fixed_b=fixed_b)
    if model is None:   # the PyMC graph: another sampler, observation model or prior, or the paper's with holes
        model = build_model(matrix.counts, matrix.n_trials if trials is None else trials.astype(float), g,
                            models=matrix.models, items=matrix.items, parametrization=s.parametrization,
                            kernel="pytensor" if s.sampler == "numpyro" or trials is not None else "fused",
                            fixed_b=fixed_b, observation=observation, prior=s.prior)
    # the observation model's parameters (beta-binomial: rho) and the prior's hyperparameters (hierarchical)
    own = [p.name for p in observation.parameters] + list(prior.hyper)
    names = (["theta", "b"] if fixed_b is None else ["theta", "b", "b_free"]) + own
    checked = (["theta", "b"] if fixed_b is None else ["theta", "b_free"]) + own
    idata, compile_time, sampling_time = run_nuts(model, names, run)
    idata = keep(idata, names)
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

    def summary(name):
        return {key: float(stats[name][key][0]) for key in ("mean", "sd", "r_hat", "ess_bulk")}

    if observation.parameters:  # the observation model's own parameters: posterior mean, sd, R-hat, ESS of each
        diagnostics["observation"] = {"name": observation.name, **{
            p.name: summary(p.name) for p in observation.parameters}}
    if prior.hyper:   # the prior and its hyperparameters' posterior summaries (none for the paper's prior)
        diagnostics["prior"] = {"name": prior.name, "summary": prior.summary,
                                "density": "compiled" if is_density(model) else "pymc graph",
                                "hyperparameters": {name: summary(name) for name in prior.hyper}}
    return nuts_result(matrix, b_stats, theta_stats, diagnostics, settings, idata)
