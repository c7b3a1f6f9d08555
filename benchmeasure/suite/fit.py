"""One fit of a whole suite: every item on one scale, per-benchmark difficulties, abilities and metrics.

* ``abilities="one"`` (the paper's model): one θ per model; items calibrated jointly by marginal maximum a
  posteriori (:func:`~.calibration.fit_items`, masked likelihood: absent cells add nothing). Item standard errors
  are 1/sqrt(observed information) at the mode, given the models' grid posteriors.
* ``abilities="correlated"``: the same item difficulties; then one θ per model per benchmark, whose mean and
  covariance across benchmarks are estimated by the method of moments (:func:`~.predict.ability_covariance`),
  and each model's per-benchmark abilities are its posterior given that Normal(μ, Σ) prior (Laplace). The
  correlation matrix says how far two benchmarks measure the same thing. This is an empirical-Bayes point
  estimate of Σ, not a posterior under an LKJ prior (not built).

``prior="hierarchical"`` (``fit-suite --prior hierarchical``): the same fits with θ ~ Normal(0, σ_θ) and, per
benchmark k, b ~ Normal(μ_b,k, σ_b,k), the hyperparameters estimated with the difficulties
(:mod:`.hierarchical`), θ on that module's wider grid; ``SuiteFit.hyper`` holds them. The default keeps the
paper-prior EM exactly (θ ~ Normal(0, 1), b ~ Normal(0, ``prior_sd``²)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmeasure.suite.calibration import GRID, fit_items, sigmoid
from benchmeasure.suite.predict import ability_covariance, correlated_posterior
from benchmeasure.suite.reader import Suite


@dataclass(frozen=True)
class SuiteFit:
    b: np.ndarray            # (N,) difficulty, one scale
    b_sd: np.ndarray         # (N,)
    theta: np.ndarray        # (M,) one ability: posterior mean
    theta_sd: np.ndarray     # (M,)
    iterations: int
    per_benchmark: np.ndarray | None = None      # (M, B) correlated abilities (posterior mode)
    per_benchmark_sd: np.ndarray | None = None   # (M, B)
    correlation: np.ndarray | None = None        # (B, B)
    hyper: object = None                         # the hierarchical prior's hyperparameters (.hierarchical.Hyper)


def fit_suite(suite: Suite, abilities: str = "one", prior_sd: float = 3.0, prior: str = "paper") -> SuiteFit:
    n_items = len(suite.items)
    grid, hyper = GRID, None
    if prior == "hierarchical":
        from benchmeasure.suite.hierarchical import GRID as grid
        from benchmeasure.suite.hierarchical import fit_items_hierarchical

        b, w, iterations, hyper = fit_items_hierarchical(suite.counts, suite.trials, np.zeros(n_items),
                                                         np.ones(n_items, dtype=bool), suite.item_benchmark)
        prior_var = hyper.sigma_b[suite.item_benchmark] ** 2
    else:
        b, w, iterations = fit_items(suite.counts, suite.trials, np.zeros(n_items), np.ones(n_items, dtype=bool),
                                     prior_sd=prior_sd)
        prior_var = prior_sd**2
    n = w.T @ suite.trials.astype(float)
    s = sigmoid(grid[:, None] - b[None, :])
    b_sd = 1.0 / np.sqrt((n * s * (1 - s)).sum(axis=0) + 1.0 / prior_var)
    theta = w @ grid
    theta_sd = np.sqrt(np.maximum(w @ grid**2 - theta**2, 0.0))
    if abilities == "one":
        return SuiteFit(b, b_sd, theta, theta_sd, iterations, hyper=hyper)
    columns = [np.flatnonzero(suite.item_benchmark == k) for k in range(len(suite.benchmarks))]
    counts = [suite.counts[:, c] for c in columns]
    trials = [suite.trials[:, c] for c in columns]
    bs = [b[c] for c in columns]
    mu, sigma = ability_covariance(counts, trials, bs, grid)
    mode, cov = correlated_posterior(counts, trials, bs, mu, sigma)
    sd = np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
    scale = np.sqrt(np.diag(sigma))
    return SuiteFit(b, b_sd, theta, theta_sd, iterations, mode, sd, sigma / np.outer(scale, scale), hyper)
