"""The priors of a 1PL fit (``fit --prior NAME``): a small registry, :data:`PRIORS`, in the project's one idiom.

* ``paper`` (default, the paper's Appendix C.3): θ_j ~ Normal(0, 1), b_i ~ Normal(0, 1). Every route fits it, and
  every output made with it is unchanged (the model graphs, the compiled densities and the records are the paper's).
* ``hierarchical``: θ_j ~ Normal(0, σ_θ), b_i ~ Normal(μ_b, σ_b), with weakly informative hyperpriors
  σ_θ ~ HalfNormal(3), σ_b ~ HalfNormal(3), μ_b ~ Normal(0, 3) (docs/irt.md, "Priors that fit LLM panels": LLM
  panels span up to ten logits, which the N(0, 1) prior pulls in; the scales are learned from the panel). Written
  non-centred: θ = σ_θ·θ̃, b = μ_b + σ_b·b̃ with (θ̃, b̃) ~ Normal(0, I) in the model's own coordinates (the rotated
  ones of :mod:`benchmeasure.irt.model` keep that law exactly), so the posterior is the hierarchical model's. Only the
  joint route fits it (its PyMC graph: the paper's compiled density has the N(0, 1) prior built in); a route declares
  the priors it fits (``Route.priors``) and the refusals and ``--route auto`` follow from that.

An entry's ``place(theta_raw, b_raw, anchors)`` runs inside the PyMC model: it adds the prior's hyperparameters
(named in ``hyper``) and returns (θ, b) from standard-normal raw coordinates (``anchors``: the anchored items' fixed
b, which are draws of the same prior and so inform its hyperparameters). The paper's prior has no ``place``: its
graph is the paper's as written in :func:`benchmeasure.irt.model.build_model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from benchmeasure.base.registry import Registry, lazy

DEFAULT = "paper"


@dataclass(frozen=True)
class Prior:
    """One prior on (θ, b): ``place`` (None for the paper's), the hyperparameters it adds, a one-line summary."""

    DECORATES: ClassVar[str] = "place"

    name: str
    place: object = None
    hyper: tuple = ()
    summary: str = ""

    def __post_init__(self):
        object.__setattr__(self, "place", lazy(self.place))


PRIORS = Registry("prior", entry=Prior, builtins=("benchmeasure.irt.priors",))   # the built-ins are below


def get(name: str | None) -> Prior:
    """The registered prior called ``name`` (None: the paper's)."""
    return PRIORS.get(DEFAULT if name is None else name)


PRIORS.register(Prior("paper", summary="theta ~ Normal(0, 1), b ~ Normal(0, 1) (the paper's)"))

#: the hierarchical prior's hyperpriors' scales (docs/irt.md)
HYPER_SCALE = 3.0


@PRIORS.add("hierarchical", hyper=("sigma_theta", "mu_b", "sigma_b"),
            summary="theta ~ Normal(0, sigma_theta), b ~ Normal(mu_b, sigma_b); sigma_theta, sigma_b ~ "
                    "HalfNormal(3), mu_b ~ Normal(0, 3)")
def place_hierarchical(theta_raw, b_raw, anchors=None):
    """(θ, b) = (σ_θ·θ̃, μ_b + σ_b·b̃), the hyperparameters added to the current PyMC model."""
    import pymc as pm

    sigma_theta = pm.HalfNormal("sigma_theta", HYPER_SCALE)
    mu_b = pm.Normal("mu_b", 0.0, HYPER_SCALE)
    sigma_b = pm.HalfNormal("sigma_b", HYPER_SCALE)
    if anchors is not None and len(anchors):   # the anchored items' b: known draws of the same N(μ_b, σ_b)
        pm.Potential("anchors_prior", pm.logp(pm.Normal.dist(mu_b, sigma_b), anchors).sum())
    return sigma_theta * theta_raw, mu_b + sigma_b * b_raw
