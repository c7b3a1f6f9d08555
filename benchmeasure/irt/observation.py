"""Observation models: how a model–item cell's K trials turn the 1PL's success probability into a count.

Every fit writes θ_j ~ Normal(0, 1), b_i ~ Normal(0, 1) and p_ij = g_i + (1 − g_i)·σ(θ_j − b_i); an
observation model says how the count Y_ij of correct answers in K trials depends on p_ij. It is one
:class:`ObservationModel` entry in :data:`OBSERVATIONS` (``fit --observation NAME``), holding its
log-likelihood in NumPy (reported log-likelihoods, BIC, independent checks) and in the PyTensor graph
every sampler runs, its extra parameters with their priors, a simulator, and the fit routes it supports.

* ``binomial`` (default, the paper's Appendix C.3): Y_ij ~ Binomial(K, p_ij), the K trials independent
  given (θ_j, b_i). Its log-likelihood is :func:`benchmeasure.irt.likelihood.log_likelihood`
  (NumPy) and :mod:`benchmeasure.irt.routes.joint.op` (the fused Numba Op and the PyTensor expression); the
  collapsed route (:mod:`.collapsed`) and the marginal mode (:mod:`.marginal_mode`) integrate it.
* ``beta-binomial``: overdispersed repeated samples. The K trials of one model on one item share a
  cell-level success rate π_ij ~ Beta(p_ij·c, (1 − p_ij)·c), c = (1 − ρ)/ρ, and Y_ij | π_ij ~
  Binomial(K, π_ij). So E[Y_ij] = K·p_ij as in the 1PL, and Var(Y_ij) = K·p_ij(1 − p_ij)(1 + (K − 1)ρ):
  ρ ∈ (0, 1) is the correlation between two trials of the same cell (ρ → 0 is the binomial). One ρ for
  the whole matrix, with prior **ρ ~ Beta(1, 1)** (uniform on (0, 1): no preference between independent
  and all-or-nothing trials). With K = 1 the data say nothing about ρ (its posterior is its prior) and the
  model equals the binomial. It runs on the joint route (NUTS on θ, b and ρ); the collapsed route and
  the marginal mode are binomial-only.

Adding a model (ARCHITECTURE.md, "Adding an extension"): one module with its two log-likelihoods and a
simulator, the log-likelihood decorated with ``@OBSERVATIONS.add(NAME, graph_loglik=..., simulate=..., ...)`` (the
built-ins below do so; another package's module is imported through its entry point, group
``benchmeasure.observation_models``); :func:`benchmeasure.irt.model.build_model` and
:func:`benchmeasure.irt.fit.fit_1pl` then run it by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from benchmeasure.base.registry import GROUPS, Registry, lazy
from benchmeasure.irt.likelihood import log_sigmoid


@dataclass(frozen=True)
class Parameter:
    """An observation model's own parameter: its name, its PyMC prior ``prior(name) -> variable``, prose, and a
    typical value ``example`` at which the registry's tests check the model (scalar parameters only)."""

    name: str
    prior: object
    description: str = ""
    example: float = 0.3


@dataclass(frozen=True)
class ObservationModel:
    """One way of observing K trials per cell (module docstring).

    Fields
    ------
    name : str
        ``fit --observation NAME``.
    loglik : callable ``(counts, n_trials, eta, guessing, params, with_constant) -> ndarray``
        Element-wise log P(Y | η, g, params) in NumPy; ``params`` maps each :class:`Parameter` to a value.
    graph_loglik : callable ``(counts, n_trials, guessing, theta, b, params) -> tensor (M, N)``
        The same in PyTensor (θ a vector of M, b of N; the constant in Y may be left out).
    simulate : callable ``(rng, n_trials, p, params) -> int ndarray``
        Counts drawn at success probabilities ``p``.
    parameters : tuple of :class:`Parameter`
        Sampled with the model's θ and b (names must not clash with ``theta``, ``b``, ``z``).
    routes : tuple of str
        Fit routes that support it: ``"joint"`` always; ``"collapsed"`` and ``"map"`` integrate the binomial;
        ``"gibbs"`` samples its conditionals.
    fused : callable ``(counts, n_trials, guessing) -> Op``, optional
        A compiled Op computing the summed log-likelihood and gradient (the binomial's Numba kernel).
    """

    name: str
    loglik: object
    graph_loglik: object
    simulate: object
    parameters: tuple = ()
    routes: tuple = ("joint",)
    fused: object = None
    description: str = ""
    notes: dict = field(default_factory=dict)

    DECORATES: ClassVar[str] = "loglik"   # OBSERVATIONS.add(...) decorates the NumPy log-likelihood

    def __post_init__(self):
        for name in ("loglik", "graph_loglik", "simulate", "fused"):
            object.__setattr__(self, name, lazy(getattr(self, name)))
        if "joint" not in self.routes:
            raise ValueError(f"observation model {self.name!r} must support the joint route")
        taken = {"theta", "b", "b_free", "z", "theta_z", "y"}
        for p in self.parameters:
            if p.name in taken:
                raise ValueError(f"observation model {self.name!r}: parameter name {p.name!r} is taken")


OBSERVATIONS = Registry("observation model", GROUPS["observation model"], entry=ObservationModel,
                        builtins=("benchmeasure.irt.observation",))   # the built-ins are below
DEFAULT = "binomial"


def get(name: str | None) -> ObservationModel:
    """The registered model called ``name`` (None: the default, the paper's binomial)."""
    return OBSERVATIONS.get(DEFAULT if name is None else name)


# ---------------------------------------------------------------------------------------------
# binomial (the paper's model): the implementations live in likelihood.py and routes/joint/


def _binomial_graph(counts, n_trials, guessing, theta, b, params=None):
    from benchmeasure.irt.routes.joint.op import pytensor_loglik

    return pytensor_loglik(counts, n_trials, guessing, theta, b)


def _binomial_fused(counts, n_trials, guessing):
    from benchmeasure.irt.routes.joint.op import loglik_op

    return loglik_op(counts, n_trials, guessing)


def _binomial_simulate(rng, n_trials, p, params=None):
    return rng.binomial(n_trials, p).astype(np.int64)


@OBSERVATIONS.add("binomial", graph_loglik=_binomial_graph, simulate=_binomial_simulate,
                  routes=("collapsed", "joint", "map", "gibbs"), fused=_binomial_fused,
                  description="Y ~ Binomial(K, p): the K trials independent given theta and b (the paper's model)")
def _binomial_loglik(counts, n_trials, eta, guessing=0.0, params=None, with_constant=False):
    from benchmeasure.irt.likelihood import log_likelihood

    return log_likelihood(counts, n_trials, eta, guessing, with_constant=with_constant)


# ---------------------------------------------------------------------------------------------
# beta-binomial


def _log_p_q(eta, g):
    """(log p, log(1 − p)) for p = g + (1 − g)·σ(η), in log space (finite for any finite η)."""
    g = np.asarray(g, dtype=float)
    log_q = np.log1p(-g) + log_sigmoid(-eta)
    with np.errstate(divide="ignore"):
        log_g = np.log(g)
    log_p = np.logaddexp(log_g, np.log1p(-g) + log_sigmoid(eta))
    return log_p, log_q


def _rising_log(y, log_a, a, gammaln, where):
    """log(a·(a+1)···(a+y−1)) = log a + lnΓ(y + a) − lnΓ(1 + a) for y ≥ 1, 0 for y = 0 (finite as a → 0)."""
    return where(y > 0, log_a + gammaln(y + a) - gammaln(1.0 + a), 0.0)


def beta_binomial_graph(counts, n_trials, guessing, theta, b, params):
    """The beta-binomial log-likelihood (without log C(K, Y)) as a PyTensor (M, N) expression."""
    import pytensor.tensor as pt

    g = np.asarray(guessing, dtype=float)
    g = g[None, :] if g.ndim == 1 else g
    y = counts
    rho = params["rho"]
    eta = theta[:, None] - b[None, :]
    log1m_g = np.log1p(-g)
    log_q = log1m_g - pt.softplus(eta)                      # log((1 − g)(1 − σ(η)))
    if np.any(g > 0):
        with np.errstate(divide="ignore"):
            log_g = np.where(g > 0, np.log(np.where(g > 0, g, 1.0)), -np.inf)
        log_p = pt.logaddexp(log_g, log1m_g - pt.softplus(-eta))
    else:
        log_p = -pt.softplus(-eta)
    log_c = pt.log1p(-rho) - pt.log(rho)
    c = pt.exp(log_c)
    return (_rising_log(y, log_p + log_c, pt.exp(log_p) * c, pt.gammaln, pt.switch)
            + _rising_log(n_trials - y, log_q + log_c, pt.exp(log_q) * c, pt.gammaln, pt.switch)
            - (log_c + pt.gammaln(n_trials + c) - pt.gammaln(1.0 + c)))  # K ≥ 1: the y = K case of _rising_log


def beta_binomial_simulate(rng, n_trials, p, params):
    """Counts with a shared success rate per cell: π ~ Beta(p·c, (1 − p)·c), Y ~ Binomial(K, π)."""
    rho = float(params["rho"])
    p = np.clip(np.asarray(p, dtype=float), 1e-12, 1 - 1e-12)
    c = (1.0 - rho) / rho
    return rng.binomial(n_trials, rng.beta(p * c, (1.0 - p) * c)).astype(np.int64)


def _rho_prior(name):
    import pymc as pm

    return pm.Beta(name, 1.0, 1.0)


@OBSERVATIONS.add(
    "beta-binomial", graph_loglik=beta_binomial_graph, simulate=beta_binomial_simulate,
    parameters=(Parameter("rho", _rho_prior, "correlation of two trials of one cell, prior Beta(1, 1)"),),
    description="Y ~ BetaBinomial(K, p c, (1 - p) c), c = (1 - rho)/rho: trials of one cell share a success rate",
)
def beta_binomial_loglik(counts, n_trials, eta, guessing=0.0, params=None, with_constant=False):
    """Element-wise beta-binomial log-likelihood (NumPy), mean p = g + (1 − g)σ(η), intra-cell correlation ρ."""
    from scipy.special import gammaln

    rho = float(params["rho"])
    y = np.asarray(counts, dtype=float)
    eta = np.asarray(eta, dtype=float)
    log_p, log_q = _log_p_q(eta, guessing)
    log_c = np.log1p(-rho) - np.log(rho)
    c = np.exp(log_c)
    value = (_rising_log(y, log_p + log_c, np.exp(log_p) * c, gammaln, np.where)
             + _rising_log(n_trials - y, log_q + log_c, np.exp(log_q) * c, gammaln, np.where)
             - _rising_log(np.full_like(y, n_trials), log_c, c, gammaln, np.where))
    if with_constant:
        value = value + gammaln(n_trials + 1) - gammaln(y + 1) - gammaln(n_trials - y + 1)
    return value
