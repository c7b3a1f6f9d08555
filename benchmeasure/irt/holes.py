"""The joint 1PL posterior of a matrix with holes and K per cell (NUTS), without touching the default routes.

The paper's model with a trials matrix T in place of the constant K: Y_ij ~ Binomial(T_ij, σ(θ_j − b_i)),
θ ~ Normal(0, 1), b ~ Normal(0, 1). An absent cell has T_ij = 0 = Y_ij and contributes exactly 0 to the
log-likelihood (Y·η − T·softplus(η)), so the model is :func:`benchmeasure.irt.model.build_model` on its PyTensor
kernel with T as an (M, N) array — the masked likelihood. The fused kernel and the collapsed route assume one K
for every cell and are not used here.

Used to verify the suite fit (:mod:`benchmeasure.suite`) and as the reference NUTS posterior for small matrices
with holes; ``tests/test_suite_chain.py`` checks it against brute-force quadrature of the joint posterior.
"""

from __future__ import annotations

import numpy as np


def sample_with_holes(counts, trials, *, draws: int = 1000, tune: int = 1000, chains: int = 2, seed: int = 0,
                      target_accept: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Posterior draws (θ of shape (S, M), b of shape (S, N)) by PyMC's NUTS on the masked joint model."""
    import pymc as pm

    from .model import build_model

    counts = np.asarray(counts, dtype=np.int64)
    trials = np.asarray(trials, dtype=float)
    if counts.shape != trials.shape or np.any(counts > trials) or np.any(counts < 0):
        raise ValueError("counts and trials must have one shape and 0 ≤ count ≤ trials in every cell")
    model = build_model(counts, trials, kernel="pytensor", parametrization="direct")
    with model:
        idata = pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed, progressbar=False, cores=1,
                          target_accept=target_accept, compute_convergence_checks=False)
    post = idata.posterior
    return (post["theta"].values.reshape(-1, counts.shape[0]), post["b"].values.reshape(-1, counts.shape[1]))
