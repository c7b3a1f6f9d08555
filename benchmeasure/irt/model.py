"""The paper's Bayesian 1PL model (Appendix C.3), written once as a PyMC model.

Model j solves item i with probability p_ij = g_i + (1 − g_i)·σ(θ_j − b_i); the count of
correct answers in K trials is Y_ij ~ Binomial(K, p_ij); every θ_j and every b_i has an
independent Normal(0, 1) prior. Every sampler (nutpie, PyMC's NUTS, numpyro) and the MAP
fit run on the model :func:`build_model` returns.

Two choices change how fast the posterior is explored, never the posterior itself:

* **Likelihood.** The binomial log-likelihood is evaluated by one fused, numerically
  stable kernel (:mod:`benchmeasure.irt.routes.joint.kernel`) rather than ``pm.Binomial(p=sigmoid(·))``.
  For g = 0 it is ``Y·η − K·softplus(η)`` with η = θ − b; with guessing it is the same
  binomial log-probability written in log space. Only the constant log C(K, Y) is left
  out of the sampled density; it is added to reported log-likelihoods
  (:func:`benchmeasure.irt.likelihood.log_likelihood` with ``with_constant=True``).
* **Coordinates** (``parametrization="rotated"``, the default). The likelihood depends
  on θ and b only through θ_j − b_i, so moving every θ and every b by the same amount
  changes nothing but the prior: that common shift is the posterior's long direction,
  and the mean ability minus the mean difficulty is its tightest. The sampler works on
  z ~ Normal(0, I) with (θ, b) = Q·z for a fixed orthogonal Q: a reflection in the plane
  of the two block means turns z_0 into the common shift and z_M into the contrast
  θ̄ − b̄, and a Householder reflection inside each block turns the remaining coordinates
  into deviations from the block mean. Q is orthogonal, so Q·z has exactly the
  Normal(0, I) prior of the paper and the posterior of (θ, b) is the same; but in z the
  common shift is a coordinate of its own (exactly Normal(0, 1) a posteriori) and the
  other coordinates are nearly uncorrelated, which a diagonal mass matrix handles.
  Applying Q costs O(M + N). ``parametrization="direct"`` samples θ and b as written.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.irt.plan import PARAMETRIZATIONS  # the settings own it


def _householder(k: int) -> np.ndarray:
    """Unit v with (I − 2vvᵀ)·e_0 = 1/√k (and back): the reflection that swaps e_0 and the mean direction."""
    v = np.full(k, -1.0 / np.sqrt(k))
    v[0] += 1.0
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else np.zeros(k)  # k = 1: nothing to reflect


class Rotation:
    """The orthogonal map (θ, b) = Q·z of the rotated coordinates, for NumPy or PyTensor vectors.

    Q = blockdiag(H_M, H_N)·R, where R reflects the plane spanned by coordinates 0 and M
    onto (common shift, contrast) and H_k is the Householder reflection swapping e_0 with
    1/√k. Each factor is symmetric and its own inverse, so Qᵀ = R·blockdiag(H_M, H_N).
    """

    def __init__(self, n_models: int, n_items: int):
        self.m, self.n = n_models, n_items
        total = n_models + n_items
        self.c, self.s = np.sqrt(n_models / total), np.sqrt(n_items / total)
        self.v_models = _householder(n_models)
        self.v_items = _householder(n_items)

    def _plane(self, z0, zm, concat, z_models_rest, z_items_rest):
        a = self.c * z0 + self.s * zm
        d = self.s * z0 - self.c * zm
        return concat([a, z_models_rest]), concat([d, z_items_rest])

    def to_stacked(self, z, backend=np):
        """(θ, b) from z (length M + N); ``backend`` is ``numpy`` or ``pytensor.tensor``."""
        m = self.m

        def concat(parts):
            first, rest = parts
            return backend.concatenate([backend.reshape(first, (1,)), rest])

        x_models, x_items = self._plane(z[0], z[m], concat, z[1:m], z[m + 1:])
        theta = x_models - 2.0 * self.v_models * (x_models @ self.v_models)
        b = x_items - 2.0 * self.v_items * (x_items @ self.v_items)
        return theta, b

    def from_stacked(self, theta, b):
        """z from (θ, b) (NumPy), the inverse of :meth:`to_stacked`."""
        x_models = theta - 2.0 * self.v_models * (theta @ self.v_models)
        x_items = b - 2.0 * self.v_items * (b @ self.v_items)
        a, d = x_models[0], x_items[0]
        z = np.concatenate([x_models, x_items])
        z[0] = self.c * a + self.s * d
        z[self.m] = self.s * a - self.c * d
        return z

    def matrix(self) -> np.ndarray:
        """Q as a dense matrix (for tests)."""
        eye = np.eye(self.m + self.n)
        return np.stack([np.concatenate(self.to_stacked(col)) for col in eye], axis=1)


def build_model(counts, n_trials: int, guessing=0.0, *, models=None, items=None,
                parametrization: str = "rotated", kernel: str = "fused", fixed_b=None, observation=None,
                prior=None):
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
        (:mod:`benchmeasure.irt.routes.joint.kernel`); ``"pytensor"`` writes the same expression with
        PyTensor elementwise operations (used by back ends the fused kernel does not
        support, e.g. JAX, and as a cross-check).
    fixed_b : array_like of shape (N,), optional
        Anchor items (``fit_irt.py --fixed-difficulties``): a finite entry holds that item's b
        at the given value (no prior, no parameter), NaN leaves it free. The free b and every θ
        keep the paper's Normal(0, 1) priors; the sampled parameters are θ and the free b
        (``b_free``, dims ``free_item``), rotated as above among themselves.
    observation : str or ObservationModel, optional
        How the counts are observed (:mod:`benchmeasure.irt.observation`); default the paper's binomial.
        A model's own parameters (the beta-binomial's ``rho``) are added with their priors; ``kernel="fused"``
        applies to a model with a fused Op (the binomial) and the PyTensor expression is used otherwise.
    prior : str, optional
        The prior on (θ, b) (:mod:`benchmeasure.irt.priors`); default (None, ``"paper"``) the paper's N(0, 1). The
        hierarchical prior adds ``sigma_theta``, ``mu_b`` and ``sigma_b`` and its own coordinates (Householder-rotated
        unless ``direct``), with ``theta`` and ``b`` deterministics of them.

    Returns
    -------
    pymc.Model
        With deterministic or free variables ``theta`` (dims ``model``) and ``b`` (dims
        ``item``) and the observed counts ``y`` (dims ``model``, ``item``).
    """
    import pymc as pm
    import pytensor.tensor as pt

    from benchmeasure.irt.observation import ObservationModel
    from benchmeasure.irt.observation import get as get_observation

    obs = observation if isinstance(observation, ObservationModel) else get_observation(observation)
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
    fixed = None if fixed_b is None else np.asarray(fixed_b, dtype=float)
    free = np.arange(n_items) if fixed is None else np.flatnonzero(np.isnan(fixed))
    b_name, b_dim = ("b", "item") if fixed is None else ("b_free", "free_item")
    if fixed is not None:
        coords["free_item"] = [coords["item"][i] for i in free]
    from benchmeasure.irt.priors import get as get_prior

    with pm.Model(coords=coords) as model:
        # another prior places (θ, b) in its own coordinates (irt/priors.py); None: the paper's N(0, 1), written here
        placed = get_prior(prior).place(n_models, free.size, parametrization == "rotated",
                                        None if fixed is None else fixed[np.isfinite(fixed)])
        if placed is not None:
            theta, b = placed
        elif parametrization == "direct":
            theta = pm.Normal("theta", 0.0, 1.0, dims="model")
            b = pm.Normal(b_name, 0.0, 1.0, dims=b_dim)
        else:
            model.add_coord("param", np.arange(n_models + free.size))
            z = pm.Normal("z", 0.0, 1.0, dims="param")
            theta, b = Rotation(n_models, free.size).to_stacked(z, backend=pt)
        if placed is not None or parametrization != "direct":
            theta = pm.Deterministic("theta", theta, dims="model")
            b = pm.Deterministic(b_name, b, dims=b_dim)
        if fixed is not None:  # the anchors' values with the free items filled in
            b = pm.Deterministic("b", pt.set_subtensor(pt.as_tensor_variable(np.nan_to_num(fixed))[free], b),
                                 dims="item")

        extra = [p.prior(p.name) for p in obs.parameters]  # the observation model's own parameters, with priors
        names = [p.name for p in obs.parameters]
        if obs.fused is not None and kernel == "fused" and not extra:
            op = obs.fused(y, n_trials, g)

            def logp(value, theta_col, b_row):
                return op(theta_col[:, 0], b_row[0, :])
        else:
            def logp(value, theta_col, b_row, *own):
                return obs.graph_loglik(value, n_trials, g, theta_col[:, 0], b_row[0, :], dict(zip(names, own)))

        # θ as a column and b as a row broadcast to the (M, N) shape of the counts
        pm.CustomDist("y", theta[:, None], b[None, :], *extra,
                      logp=logp, observed=y, dims=("model", "item"))
    return model


def build_collapsed_model(counts, n_trials: int, guessing=0.0, *, models=None, data=None, trials=None):
    """The PyMC model of the abilities' marginal posterior (every b_i integrated out), for the collapsed route.

    θ ~ Normal(0, 1) (dims ``model``) and a potential equal to
    Σ_i log ∫ N(b; 0, 1) Π_j Binom(Y_ij | K, p(θ_j − b, g_i)) db (:mod:`benchmeasure.irt.routes.collapsed`),
    so the model's posterior is exactly the θ-marginal of :func:`build_model`'s, up to the
    quadrature error (about 1e−17 relative). As in the joint model's rotated coordinates,
    the sampler works on z ~ Normal(0, I) with θ = H·z, H the Householder reflection that
    makes z_0 the (scaled) mean ability: the abilities' common shift, which the data barely
    constrain, gets a coordinate (and a mass-matrix entry) of its own. H is orthogonal, so
    θ keeps exactly its Normal(0, I) prior. ``data`` is the
    :class:`~benchmeasure.irt.routes.collapsed.marginal.CollapsedData` to use (built from ``counts`` when None); with
    ``trials`` (M × N, 0 = absent cell) it is a :class:`~benchmeasure.irt.routes.collapsed.holes.CollapsedHolesData`
    (the masked likelihood). Returns ``(model, data)``.
    """
    import pymc as pm

    from benchmeasure.irt.routes.collapsed.marginal import collapsed_data
    from benchmeasure.irt.routes.collapsed.op import MarginalLoglik

    if data is None:
        data = collapsed_data(counts, n_trials, guessing, trials)
    n_models = data.n_models
    coords = {"model": list(models) if models is not None else list(range(n_models))}
    v = _householder(n_models)
    with pm.Model(coords=coords) as model:
        z = pm.Normal("theta_z", 0.0, 1.0, dims="model")
        theta = pm.Deterministic("theta", z - 2.0 * v * (z @ v), dims="model")
        pm.Potential("b_integrated", MarginalLoglik(data)(theta))
    return model, data
