"""The paper's Bayesian 1PL model (Appendix C.3), written once as a PyMC model.

Model j solves item i with probability p_ij = g_i + (1 − g_i)·σ(θ_j − b_i); the count of
correct answers in K trials is Y_ij ~ Binomial(K, p_ij); every θ_j and every b_i has an
independent Normal(0, 1) prior. Every sampler (nutpie, PyMC's NUTS, numpyro) and the MAP
fit run on the model :func:`build_model` returns.

Two choices change how fast the posterior is explored, never the posterior itself:

* **Likelihood.** The binomial log-likelihood is evaluated by one fused, numerically
  stable kernel (:mod:`benchmeasure.irt.kernel`) rather than ``pm.Binomial(p=sigmoid(·))``.
  For g = 0 it is ``Y·η − K·softplus(η)`` with η = θ − b; with guessing it is the same
  binomial log-probability written in log space. Only the constant log C(K, Y) is left
  out of the sampled density; it is added to reported log-likelihoods
  (:func:`benchmeasure.irt.likelihood.log_likelihood` with ``with_constant=True``).
* **Coordinates** (``parametrization="rotated"``, the default). The likelihood depends
  on θ and b only through θ_j − b_i, so moving every θ and every b by the same amount
  changes nothing but the prior: that common shift is the posterior's long direction.
  The sampler works on z ~ Normal(0, I) with (θ, b) = H·z, where H is the Householder
  reflection that maps the first coordinate onto the common-shift direction
  1/√(M+N). H is orthogonal and its own inverse, so H·z has exactly the Normal(0, I)
  prior of the paper, and the posterior of (θ, b) is unchanged; but in z the common
  shift is one coordinate of its own (exactly Normal(0, 1) a posteriori, independent of
  the rest), which a diagonal mass matrix handles. The reflected coordinate is the
  first item's b rather than a θ, so the dense coupling H introduces falls on a
  loosely determined parameter. ``parametrization="direct"`` samples θ and b as
  written, for comparison.
"""

from __future__ import annotations

import numpy as np

PARAMETRIZATIONS = ("rotated", "direct")


def householder_vector(n_models: int, n_items: int) -> np.ndarray:
    """The unit vector v of the reflection H = I − 2·v·vᵀ used by the rotated coordinates.

    H maps the basis vector of the first item's b (index ``n_models`` in the stacked
    vector (θ, b)) onto the common-shift direction 1/√(M+N), and vice versa.
    """
    n = n_models + n_items
    v = np.full(n, -1.0 / np.sqrt(n))
    v[n_models] += 1.0
    return v / np.linalg.norm(v)


def stacked_from_rotated(z, v: np.ndarray):
    """(θ, b) stacked = H·z for the reflection defined by unit vector ``v`` (NumPy or PyTensor)."""
    return z - 2.0 * v * (z @ v)


def build_model(counts, n_trials: int, guessing=0.0, *, models=None, items=None,
                parametrization: str = "rotated", kernel: str = "fused"):
    """The 1PL PyMC model for a count matrix.

    Parameters
    ----------
    counts : array_like of int, shape (M, N)
        Correct counts, each in [0, n_trials].
    n_trials : int
        Trials per model–item pair (K).
    guessing : float or array_like of shape (N,)
        Lower asymptote g (constant or per item), each in [0, 1).
    models, items : sequence of str, optional
        Coordinate labels for θ (dim ``model``) and b (dim ``item``); default 0 … M−1 / N−1.
    parametrization : {"rotated", "direct"}
        Sampler coordinates (see the module docstring); the posterior is the same.
    kernel : {"fused", "pytensor"}
        The log-likelihood implementation: ``"fused"`` is the single-pass Numba kernel
        (:mod:`benchmeasure.irt.kernel`); ``"pytensor"`` writes the same expression with
        PyTensor elementwise operations (used by back ends the fused kernel does not
        support, e.g. JAX, and as a cross-check).

    Returns
    -------
    pymc.Model
        With deterministic or free variables ``theta`` (dims ``model``) and ``b`` (dims
        ``item``) and the observed counts ``y`` (dims ``model``, ``item``).
    """
    import pymc as pm
    import pytensor.tensor as pt

    from .kernel import loglik_op, pytensor_loglik

    y = np.asarray(counts, dtype=np.int64)
    n_models, n_items = y.shape
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (n_items,)).copy()
    if parametrization not in PARAMETRIZATIONS:
        raise ValueError(f"parametrization must be one of {PARAMETRIZATIONS}, got {parametrization!r}")
    if kernel not in ("fused", "pytensor"):
        raise ValueError(f"kernel must be 'fused' or 'pytensor', got {kernel!r}")
    coords = {
        "model": list(models) if models is not None else list(range(n_models)),
        "item": list(items) if items is not None else list(range(n_items)),
    }
    with pm.Model(coords=coords) as model:
        if parametrization == "direct":
            theta = pm.Normal("theta", 0.0, 1.0, dims="model")
            b = pm.Normal("b", 0.0, 1.0, dims="item")
        else:
            model.add_coord("param", np.arange(n_models + n_items))
            v = householder_vector(n_models, n_items)
            z = pm.Normal("z", 0.0, 1.0, dims="param")
            stacked = stacked_from_rotated(z, pt.as_tensor_variable(v))
            theta = pm.Deterministic("theta", stacked[:n_models], dims="model")
            b = pm.Deterministic("b", stacked[n_models:], dims="item")

        if kernel == "fused":
            op = loglik_op(y, n_trials, g)

            def logp(value, theta_col, b_row):
                return op(theta_col[:, 0], b_row[0, :])
        else:
            def logp(value, theta_col, b_row):
                return pytensor_loglik(value, n_trials, g, theta_col[:, 0], b_row[0, :])

        # θ as a column and b as a row broadcast to the (M, N) shape of the counts
        pm.CustomDist("y", theta[:, None], b[None, :], logp=logp, observed=y, dims=("model", "item"))
    return model
