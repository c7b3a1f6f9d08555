"""The Gibbs route: the paper's 1PL posterior on a sparse matrix by blocked Gibbs with exact conditional updates.

The model (Appendix C.3) with the trials matrix T (T_ij = 0 for an absent cell): θ_j, b_i ~ N(0, 1),
Y_ij ~ Binomial(T_ij, σ(θ_j − b_i)). The likelihood depends on θ and b only through the differences θ_j − b_i,
so given θ the b_i are independent, and given b the θ_j are; with g = 0 each one-dimensional conditional is
log-concave,

    log p(x | rest) = −x²/2 + s·x·Y_tot − Σ_k T_k·softplus(s·x + o_k) + const,                             (1)

with, for b_i: s = −1, o_k = θ_k over the models k that answered item i; for θ_j: s = +1, o_k = −b_k over the
items k model j answered. One sweep (each chain):

1. every b_i given θ, 2. every θ_j given b, each by one independence Metropolis–Hastings step whose proposal is a
   Student-t (ν = 5) centred at the mode of (1) with the scale of its curvature there. The mode is found by a fixed
   number of damped Newton steps started at a point computed from the data and the conditioning block only
   (s·(logit p̂ − mean o_k), p̂ = (Y_tot + ½)/(T_tot + 1)), so the proposal does not depend on the coordinate's
   current value and each step leaves (1) invariant: the posterior is exact, the approximation only affects the
   acceptance rate (reported as ``gibbs.acceptance_b`` / ``acceptance_theta``). How many Newton steps (0, 1 or
   2) each coordinate gets is chosen in burn-in (:func:`adaptation_window`): the choices are tried in turn, and
   each coordinate keeps the one with the most effective draws per pass over its cells (:func:`choose_steps`;
   a Newton step is one pass, the MH step two). A coordinate whose start is already near its mode takes none,
   one far out in a tail or against a guessing floor takes more. The choice is fixed before the kept sweeps, so
   they are one fixed Markov kernel with the exact posterior as its invariant law, as NUTS's step size adapted in
   warm-up; ``gibbs.newton_steps`` reports the shares chosen;
3. a shift move: θ_j + c and b_i + c for one c leaves every difference, so only the priors change, and
   c | rest ~ N(−(Σθ + Σb)/(M + N), 1/(M + N)) exactly (a group move on the translations, unit Jacobian; Liu &
   Sabatti 2000). Without it the common level of θ and b moves by a random walk of many sweeps.

Cost of a sweep: a few passes over the present cells (O(cells), independent of how many distinct trials columns
the holes make, which is what limits the collapsed route on sparse suites). σ and softplus come from
e^(s·x)·e^(o_k) (one exponential per coordinate and Newton step, not per cell) where no |x| + |o_k| nears 600.
Every random number is drawn in NumPy from one seeded Generator per chain, so the draws do not depend on how many
threads run the chains.

With a guessing floor (p = g_i + (1 − g_i)σ(η), per item) a cell adds Y log p − (T − Y) softplus(η) instead of its
term in (1); the conditional need not be log-concave then, so the Newton steps use the Fisher information
T(1 − g)σ²(1 − σ)/p (always positive) as the curvature (Fisher scoring). The MH step keeps the exact conditional
either way; only the acceptance rate depends on the approximation.

The parts, each imported when the route runs (this module stays cheap to import: the registry reads it):
:mod:`.sparse` (the settings and the present cells by item and by model), :mod:`.sums` (the one-pass sums over a
coordinate's cells), :mod:`.kernel` (the proposal, the block update, the shift move, the sweeps) and :mod:`.chains`
(burn-in adaptation, the chains, the posterior summary, and :func:`~.chains.prefers_gibbs`).
"""

from __future__ import annotations

from benchmeasure.irt.routes import ROUTES


def prefer(matrix, g) -> bool:
    """``auto`` takes the gibbs route for a matrix with holes where the collapsed route shares few integrals
    (:func:`~.chains.prefers_gibbs`)."""
    trials = getattr(matrix, "trials", None)
    if trials is None:   # a complete matrix never takes gibbs: its kernels need not be loaded
        return False
    from benchmeasure.irt.routes.gibbs.chains import prefers_gibbs

    return prefers_gibbs(matrix.counts, trials, matrix.n_trials, g)[0]


@ROUTES.add(
    "gibbs", samplers=(), holes=True, prefer=prefer,
    summary="blocked Gibbs with exact conditional updates, for large sparse matrices",
    refusals={"method": "{route} gibbs samples the posterior ({method} nuts); the posterior mode ({method} map) has "
                        "no route",
              "sampler": "{route} gibbs runs its own Gibbs sampler, not NUTS: leave {sampler} at its default "
                         "(got {value!r})",
              "anchors": "fixed difficulties are fitted on the joint route ({route} joint or auto): the gibbs route "
                         "samples every difficulty"})
def run(matrix, plan, progress=None):
    """Blocked Gibbs on (θ, b) with exact conditional updates: a :class:`~benchmeasure.irt.fit.FitResult`."""
    import numpy as np

    from benchmeasure.irt.routes.gibbs.chains import gibbs_posterior
    from benchmeasure.irt.routes.nuts import NutsRun, nuts_result

    run, g, settings = NutsRun.of(plan, progress), plan.guessing, plan.record(matrix.items)
    s = run.settings
    trials = getattr(matrix, "trials", None)
    if trials is None:
        trials = np.full(np.shape(matrix.counts), matrix.n_trials, dtype=np.int64)
    idata, b_stats, theta_stats, diagnostics = gibbs_posterior(
        matrix.counts, trials, models=matrix.models, items=matrix.items, chains=s.chains, tune=s.tune,
        draws=s.draws, seed=run.seed_used, cores=run.cores, guessing=g, progress=run.progress)
    return nuts_result(matrix, b_stats, theta_stats, diagnostics, settings, idata)
