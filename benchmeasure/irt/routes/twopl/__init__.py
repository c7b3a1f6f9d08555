"""The 2pl route: NUTS (nutpie on a PyMC model) on the 2PL, the only route for ``fit --model 2pl``.

P(correct) = g_i + (1 − g_i)·σ(a_i(θ_j − b_i)), θ ~ N(0, 1), b ~ N(0, 1), a ~ LogNormal(0, 0.5) (docs/irt.md);
holes and K per cell through the trials matrix. With ``--compare 1pl`` the same model with every a = 1 (the
paper's 1PL posterior) is sampled too and both are compared by PSIS-LOO over the cells (:mod:`.loo`). The
parts are imported when the route runs: :mod:`.model` (the PyMC model, the pointwise log-likelihood) and
:mod:`.loo`.
"""

from __future__ import annotations

from benchmeasure.irt.routes import ROUTES

#: what ``fit --model 2pl`` runs with when --tune or --target-accept is not given (--draws keeps the paper's
#: 1000): measured to converge on the simulated 51 × 800 and on MATH level 5 at about half the leapfrog steps per
#: draw of 0.95 (docs/irt.md, "At the default settings")
DEFAULTS = {"tune": 500, "target_accept": 0.8}


@ROUTES.add(
    "2pl", samplers=("nutpie",), holes=("nutpie",), models=("2pl",), observations=("binomial",),
    summary="NUTS (nutpie, PyMC model) on the 2PL: a slope per item, a ~ LogNormal(0, 0.5)",
    refusals={"sampler": "{route} 2pl runs with {sampler} nutpie, not {value!r}"},
    defaults=DEFAULTS)
def run(matrix, plan, progress=None):
    """The 2PL posterior: a :class:`~benchmeasure.irt.fit.FitResult` with ``a_mean``/``a_sd`` filled in."""
    from benchmeasure.irt.routes.twopl.fit import fit_2pl

    return fit_2pl(matrix, plan, progress)
