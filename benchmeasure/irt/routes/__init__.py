"""The fit routes: one module (or folder) per route, each registering itself in :data:`ROUTES`.

A **route** is one way of computing the paper's 1PL posterior (Appendix C.3) or its mode. Each is an entry of
:data:`ROUTES` (the registry idiom of :mod:`benchmeasure.base.registry`: ``@ROUTES.add(...)`` on the route's
``run`` function) that declares what it supports; the plan (:mod:`benchmeasure.irt.plan`: the command line's
refusals, ``--route auto``, the ``--sampler`` and ``--method`` choices) reads those declarations, and nothing
else switches on a route's name:

==========  ========  =====================  ==========================  ============  ========
route       method    samplers               holes / K per cell          anchors       guessing
==========  ========  =====================  ==========================  ============  ========
collapsed   nuts      nutpie, pymc           nutpie, pymc                —             yes
gibbs       nuts      its own (Gibbs)        yes                         —             yes
joint       nuts      nutpie, pymc, numpyro  nutpie, pymc                nutpie, pymc  yes
map         map       —                      yes                         —             yes
2pl         nuts      nutpie                 nutpie                      —             yes
==========  ========  =====================  ==========================  ============  ========

Every route fits the 1PL except ``2pl`` (declared ``models=("2pl",)``), which fits the 2PL only (``fit --model 2pl``).

The built-in routes (:data:`BUILTINS`) are imported the first time the registry is read; each keeps its top
level cheap (the command line's ``choices`` and ``--help`` read the registry) and imports its kernels inside
``run``. A route added by another package (entry point group ``benchmeasure.routes``) gives ``run`` as a
function or as ``"module:function"``, called as ``run(matrix, plan, progress) -> FitResult``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from benchmeasure.base.registry import GROUPS, Registry, lazy

#: the built-in routes' modules, in the order the registry lists them
BUILTINS = ("benchmeasure.irt.routes.collapsed", "benchmeasure.irt.routes.gibbs", "benchmeasure.irt.routes.joint",
            "benchmeasure.irt.routes.map", "benchmeasure.irt.routes.twopl")


@dataclass(frozen=True)
class Route:
    """One way of fitting, and what it supports (see the module docstring).

    ``run(matrix, plan, progress)`` fits; ``method`` is ``"nuts"`` (draws) or ``"map"`` (a mode); ``samplers``
    the ``--sampler`` values it runs with (empty: it has its own and the option must stay at its default);
    ``holes`` and ``anchors`` the samplers with which it accepts a matrix with holes or K per cell and fixed
    difficulties (``True``: with its own); ``observations`` the observation models it runs beyond those that name
    it in their own ``routes``; ``models`` the item-response models it fits (``fit --model``; default the
    paper's ``1pl``); ``priors`` the priors (:data:`benchmeasure.irt.priors.PRIORS`) it fits (default the
    paper's only); ``prefer(matrix, guessing)``, when given, is asked by ``auto``
    before choosing it; ``refusals`` words a refusal of one declaration (``method``, ``sampler``, ``anchors``,
    ``holes``) for this route, with the fields written ``{route}``, ``{sampler}``… as
    :class:`~benchmeasure.irt.plan.SettingsError` renders them (:func:`benchmeasure.irt.plan.refusal`);
    ``defaults`` the NUTS settings (``tune``, ``draws``, ``target_accept``) the route runs with when the user
    gives none, in place of the paper's (:data:`benchmeasure.irt.plan.PAPER_DEFAULTS`; resolved by
    :func:`benchmeasure.irt.plan.plan_fit`).
    """

    DECORATES: ClassVar[str] = "run"

    name: str
    run: object
    method: str = "nuts"
    samplers: tuple = ("nutpie", "pymc")
    holes: tuple | bool = ("nutpie", "pymc")
    anchors: tuple | bool = ()
    guessing: bool = True
    prefer: object = None
    observations: tuple = ()
    models: tuple = ("1pl",)
    priors: tuple = ("paper",)
    summary: str = ""
    refusals: dict = dataclasses.field(default_factory=dict)
    defaults: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "run", lazy(self.run))
        object.__setattr__(self, "prefer", lazy(self.prefer))


ROUTES = Registry("fit route", GROUPS["route"], entry=Route, builtins=BUILTINS)
