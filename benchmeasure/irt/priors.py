"""The priors of a 1PL fit (``fit --prior NAME``): a small registry, :data:`PRIORS`, in the project's one idiom.

* ``paper`` (default, the paper's Appendix C.3): θ_j ~ Normal(0, 1), b_i ~ Normal(0, 1). Every route fits it, and
  every output made with it is unchanged (the model graphs, the compiled densities and the records are the paper's).
* ``hierarchical``: θ_j ~ Normal(0, σ_θ), b_i ~ Normal(μ_b, σ_b), with weakly informative hyperpriors
  σ_θ ~ HalfNormal(3), σ_b ~ HalfNormal(3), μ_b ~ Normal(0, 3) (docs/irt.md, "Priors that fit LLM panels": LLM
  panels span up to ten logits, which the N(0, 1) prior pulls in; the scales are learned from the panel). Written
  centred, with μ_b sampled through the contrast mean(b) − mean(θ) (:func:`place_hierarchical`), an exact change
  of coordinates, so the posterior is the hierarchical model's. Only the
  joint route fits it; a route declares the priors it fits (``Route.priors``) and the refusals and ``--route auto``
  follow from that. With nutpie it samples a density compiled once (``compiled``:
  :mod:`benchmeasure.irt.routes.joint.hierarchical`, the graph's coordinates, holes and anchors included), else the
  PyMC graph.

An entry's ``place(n_models, n_items, rotated, anchors)`` runs inside the PyMC model: it adds the prior's
hyperparameters (named in ``hyper``) and its own coordinates, and returns the (θ, b) tensors (``n_items`` the free
items; ``anchors``: the anchored items' fixed b, which are draws of the same prior and so inform its
hyperparameters). The paper's ``place`` returns None: its graph is the paper's as written in
:func:`benchmeasure.irt.model.build_model`.

An entry's ``compiled``, when given (``"module:function"``), builds the joint route's compiled density under the prior
(a :class:`~benchmeasure.irt.compiled.Density`, or None where it does not apply) as
``compiled(counts, n_trials, guessing, models=, items=, trials=, parametrization=, fixed_b=)``; the joint route samples
it with nutpie for the binomial, in place of the PyMC graph. The paper's prior has none: its N(0, 1) is built into
the joint route's own density.

An entry's ``sides`` says what the prior puts on one side when the other is held fixed (``calibrate-items``: the
items' b given fixed abilities; ``score-models``: the models' θ given fixed difficulties, :mod:`.anchored`): a
Normal(mean, sd) per side, each of mean and sd a number or the name of one of ``hyper``, whose value comes from the
fit that fixed the other side (:meth:`Prior.normal`; :mod:`.fixed_prior` reads it from the fit folder).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from benchmeasure.base.registry import Registry, lazy

DEFAULT = "paper"


@dataclass(frozen=True)
class Prior:
    """One prior on (θ, b): ``place`` (module docstring), the hyperparameters it adds, a one-line summary."""

    DECORATES: ClassVar[str] = "place"

    name: str
    place: object
    hyper: tuple = ()
    summary: str = ""
    sides: dict = field(default_factory=dict)
    compiled: object = None

    def normal(self, side: str, hyper: dict | None = None) -> tuple[float, float]:
        """(mean, sd) of the Normal prior on ``side`` ("model": θ, "item": b) with the other side held fixed; a
        hyperparameter named in :attr:`sides` takes its value from ``hyper``."""
        return tuple(float(hyper[v]) if isinstance(v, str) else float(v) for v in self.sides[side])

    def __post_init__(self):
        object.__setattr__(self, "place", lazy(self.place))
        object.__setattr__(self, "compiled", lazy(self.compiled))


PRIORS = Registry("prior", entry=Prior, builtins=("benchmeasure.irt.priors",))   # the built-ins are below


def get(name: str | None) -> Prior:
    """The registered prior called ``name`` (None: the paper's)."""
    return PRIORS.get(DEFAULT if name is None else name)


@PRIORS.add("paper", summary="theta ~ Normal(0, 1), b ~ Normal(0, 1) (the paper's)",
            sides={"model": (0.0, 1.0), "item": (0.0, 1.0)})
def place_paper(n_models: int, n_items: int, rotated: bool = True, anchors=None):
    """None: the model keeps its own coordinates, which carry the paper's N(0, 1) prior (:mod:`~benchmeasure.irt.model`,
    and the compiled densities of the collapsed and joint routes)."""
    return None

#: the hierarchical prior's hyperpriors' scales (docs/irt.md)
HYPER_SCALE = 3.0


def _reflect(x, n: int):
    """H·x for the Householder reflection H that swaps e_0 and the mean direction 1/√n (H = Hᵀ = H⁻¹; x a tensor)."""
    import numpy as np

    v = np.full(n, -1.0 / np.sqrt(n))
    v[0] += 1.0
    norm = np.linalg.norm(v)
    if norm == 0:   # n = 1: nothing to reflect
        return x
    v = v / norm
    return x - 2.0 * v * (x @ v)


@PRIORS.add("hierarchical", hyper=("sigma_theta", "mu_b", "sigma_b"),
            summary="theta ~ Normal(0, sigma_theta), b ~ Normal(mu_b, sigma_b); sigma_theta, sigma_b ~ "
                    "HalfNormal(3), mu_b ~ Normal(0, 3)",
            sides={"model": (0.0, "sigma_theta"), "item": ("mu_b", "sigma_b")},
            compiled="benchmeasure.irt.routes.joint.hierarchical:hierarchical_density")
def place_hierarchical(n_models: int, n_items: int, rotated: bool = True, anchors=None):
    """(θ, b) of the hierarchical prior in the current PyMC model, with its hyperparameters.

    Centred: θ = H_M·u, u ~ Normal(0, σ_θ) i.i.d., and b = μ_b + H_N·v, v ~ Normal(0, σ_b) i.i.d. (H_k the Householder
    reflection that makes coordinate 0 the scaled mean, orthogonal, so θ and b − μ_b keep exactly their i.i.d. laws;
    without ``rotated``, H = I). LLM panels inform every ability by hundreds of items and σ_b by as many items, where
    centred coordinates mix and non-centred ones leave a ridge between σ_θ and the scaled abilities (R-hat 1.2 at
    2 × 150 draws on an 8 × 40 matrix). μ_b is sampled through the contrast w = mean(b) − mean(θ), which the data
    pin down: μ_b = w + mean(θ) − mean(H_N·v), a shift by a function of the other coordinates (Jacobian 1), with μ_b's
    Normal(0, 3) prior as a potential. The likelihood then does not depend on the panel's common location (the scaled
    mean ability u_0), which only the priors hold: no long diagonal for a diagonal mass matrix to cross.
    """
    import pymc as pm

    sigma_theta = pm.HalfNormal("sigma_theta", HYPER_SCALE)
    sigma_b = pm.HalfNormal("sigma_b", HYPER_SCALE)
    u = pm.Normal("theta_centred", 0.0, sigma_theta, shape=n_models)
    v = pm.Normal("b_centred", 0.0, sigma_b, shape=n_items)
    theta = _reflect(u, n_models) if rotated else u
    spread = _reflect(v, n_items) if rotated else v
    contrast = pm.Flat("b_minus_theta")
    mu_b = pm.Deterministic("mu_b", contrast + theta.mean() - spread.mean())
    pm.Potential("mu_b_prior", pm.logp(pm.Normal.dist(0.0, HYPER_SCALE), mu_b))
    if anchors is not None and len(anchors):   # the anchored items' b: known draws of the same N(μ_b, σ_b)
        pm.Potential("anchors_prior", pm.logp(pm.Normal.dist(mu_b, sigma_b), anchors).sum())
    return theta, mu_b + spread


def add_option(parser, hierarchical: str, default_meaning: str = "the paper's N(0, 1)") -> None:
    """The ``--prior NAME`` option of a command other than ``fit`` (choices from :data:`PRIORS`; default the paper's):
    ``hierarchical`` says what the hierarchical prior means in that command, ``default_meaning`` what the default
    keeps."""
    parser.add_argument("--prior", default=DEFAULT, choices=PRIORS,
                        help=f"the prior: {DEFAULT} (default, {default_meaning}) or hierarchical ({hierarchical}; "
                             "docs/irt.md)")
