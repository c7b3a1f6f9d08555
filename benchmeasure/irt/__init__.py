"""Bayesian 1PL item response theory, as the paper's Appendix C.3 specifies.

Public entry points (imported lazily so that ``import benchmeasure.irt`` stays cheap):

* :func:`benchmeasure.irt.fit.fit_1pl` → :class:`benchmeasure.irt.fit.FitResult`
* :func:`benchmeasure.irt.diagnostics.summarize_diagnostics` (max R-hat, min bulk ESS,
  divergences of any PyMC / nutpie posterior) and :func:`~benchmeasure.irt.diagnostics.per_parameter`
* :func:`benchmeasure.irt.model.build_model` (the PyMC model every sampler runs)
* :func:`benchmeasure.irt.likelihood.log_likelihood` (NumPy, with the binomial constant for BIC)
"""

__all__ = ["FitResult", "fit_1pl", "per_parameter", "summarize_diagnostics"]


def __getattr__(name):
    if name in ("fit_1pl", "FitResult"):
        from benchmeasure.irt import fit

        return getattr(fit, name)
    if name in ("summarize_diagnostics", "per_parameter"):
        from benchmeasure.irt import diagnostics

        return getattr(diagnostics, name)
    raise AttributeError(name)
