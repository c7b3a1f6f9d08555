"""The chain's ``lkj_correlated`` method: predictions from the LKJ model's posterior, not a plug-in Σ.

At a step of the Growing Pains protocol, the multidimensional 1PL with the LKJ prior (:mod:`.mirt`, collapsed
route) is fitted by NUTS on the calibration models' answers to every benchmark seen so far (every item refit,
as concurrent calibration does). Then, for a held-out model that answered only the anchors, for each of S
posterior draws s of (μ, s, R, b), thinned evenly from the chains:

1. its abilities' posterior given the anchors under θ ~ Normal(μ_s, diag(s_s) R_s diag(s_s)), the anchors'
   difficulties at draw s (Laplace, :func:`.predict.correlated_posterior`);
2. the predictive distribution of its accuracy on each benchmark at Gauss–Hermite nodes of that posterior, the
   non-anchor items' difficulties at draw s (:func:`.predict.mixture_moments`).

The prediction is the mixture over draws and nodes (mean and central interval,
:func:`.predict.mixture_quantiles`): it integrates over the posterior of the correlation, the spreads, the
means and every difficulty, where ``fixed_correlated`` plugs in the method-of-moments Σ and the EM difficulties.
What remains approximate: the Laplace posterior of a held-out model's abilities given one draw, and the normal
approximation of the non-anchor sum (as for every method).
"""

from __future__ import annotations

import numpy as np

from benchmeasure.suite.predict import correlated_posterior, mixture_moments, mixture_quantiles

METHOD = "lkj_correlated"
HERMITE = np.polynomial.hermite_e.hermegauss(11)
HERMITE_W = HERMITE[1] / HERMITE[1].sum()


def lkj_posterior(ctr, ttr, bench_items: dict, names: list, n_items: int, *, seed: int, draws: int,
                  keep: int, chains: int = 2) -> dict:
    """Fit the collapsed LKJ model on the calibration models (``ctr``, ``ttr``: models × all items of the suite)
    over the benchmarks ``names``; ``keep`` draws of μ (S, D), Σ (S, D, D) and b (S, n_items; NaN for items of
    other benchmarks), and the fit's diagnostics."""
    from benchmeasure.suite.mirt import fit_correlated

    columns = np.concatenate([bench_items[d] for d in names])
    which = np.concatenate([np.full(bench_items[d].size, k) for k, d in enumerate(names)])
    fit = fit_correlated(ctr[:, columns], ttr[:, columns], which, list(names), chains=chains, tune=draws,
                         draws=draws, seed=seed, route="collapsed")
    post = fit.posterior["posterior"].to_dataset()
    total = chains * draws
    pick = np.linspace(0, total - 1, min(keep, total)).round().astype(int)

    def flat(name):
        values = np.asarray(post[name].values, dtype=float)
        return values.reshape(total, *values.shape[2:])[pick]

    n_bench = len(names)
    mu = flat("mu") if n_bench > 1 else np.zeros((pick.size, 1))
    corr = flat("corr").reshape(pick.size, n_bench, n_bench)
    scale = flat("scale")
    sigma = corr * scale[:, :, None] * scale[:, None, :]
    b = np.full((pick.size, n_items), np.nan)
    b[:, columns] = flat("b")
    return {"mu": mu, "sigma": sigma, "b": b, "diagnostics": fit.diagnostics}


def lkj_predictions(post: dict, names: list, anchor_sets: dict, bench_items: dict, cte, tte, level: float) -> dict:
    """{benchmark: (predicted, low, high)} for every held-out model (rows of ``cte``/``tte``)."""
    loc: dict = {d: [] for d in names}
    scale: dict = {d: [] for d in names}
    rest = {d: np.setdiff1d(bench_items[d], anchor_sets[d]) for d in names}
    a_correct = {d: cte[:, anchor_sets[d]].sum(axis=1) for d in names}
    total = {d: tte[:, bench_items[d]].sum(axis=1) for d in names}
    for s in range(post["mu"].shape[0]):
        b = post["b"][s]
        mode, cov = correlated_posterior([cte[:, anchor_sets[d]] for d in names],
                                         [tte[:, anchor_sets[d]] for d in names],
                                         [b[anchor_sets[d]] for d in names], post["mu"][s], post["sigma"][s])
        for k, d in enumerate(names):
            nodes = mode[:, k, None] + np.sqrt(cov[:, k, k])[:, None] * HERMITE[0][None, :]
            mean, sd = mixture_moments(nodes, b[rest[d]], tte[:, rest[d]].astype(float), a_correct[d], total[d])
            loc[d].append(mean)
            scale[d].append(sd)
    n_draws = post["mu"].shape[0]
    out = {}
    for d in names:
        weights = np.tile(HERMITE_W, n_draws)[None, :] / n_draws
        out[d] = mixture_quantiles(np.concatenate(loc[d], axis=1), np.concatenate(scale[d], axis=1), weights,
                                   level)
    return out
