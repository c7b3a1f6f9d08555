"""The fit routes, one registry, and the plan a fit runs by: settings resolved once.

A **route** is one way of computing the paper's 1PL posterior (Appendix C.3) or its mode. Each is an entry of
:data:`ROUTES` (the registry style of :mod:`benchmeasure.base.registry`, like graders and log formats) that
declares what it supports; the command line's refusals and ``--route auto`` both read those declarations, and
nothing else switches on a route's name:

==========  ========  =====================  ==========================  ============  ========
route       method    samplers               holes / K per cell          anchors       guessing
==========  ========  =====================  ==========================  ============  ========
collapsed   nuts      nutpie, pymc           nutpie, pymc                —             yes
gibbs       nuts      its own (Gibbs)        yes                         —             yes
joint       nuts      nutpie, pymc, numpyro  nutpie, pymc                nutpie, pymc  yes
map         map       —                      yes                         —             yes
==========  ========  =====================  ==========================  ============  ========

An observation model (:mod:`benchmeasure.irt.observation`) declares the routes it runs on (``routes``); a route
whose name is not among them refuses it.

:func:`plan_fit` turns a matrix, :class:`~benchmeasure.irt.settings.FitSettings`, the guessing floors and the
anchors into a :class:`FitPlan`: the route (``auto`` resolved: the first route in :data:`AUTO_ORDER` that
accepts the fit and, where it has one, whose ``prefer`` test says yes), the sampler, the seed actually used, and
the record of all of it that ``diagnostics.json`` keeps. The command resolves the plan once, before any output,
and :func:`benchmeasure.irt.fit.fit_1pl` runs it as it is.

A route added by another package (entry point group ``benchmeasure.routes``, :mod:`benchmeasure.base.registry`)
gives ``run`` as ``"module:function"``, called as ``run(matrix, plan, progress) -> FitResult``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from benchmeasure.base.registry import GROUPS, Registry, lazy
from benchmeasure.irt.settings import FitSettings, SettingsError


@dataclass(frozen=True)
class Route:
    """One way of fitting, and what it supports (see the module docstring).

    ``run(matrix, plan, progress)`` fits; ``method`` is ``"nuts"`` (draws) or ``"map"`` (a mode); ``samplers``
    the ``--sampler`` values it runs with (empty: it has its own and the option must stay at its default);
    ``holes`` and ``anchors`` the samplers with which it accepts a matrix with holes or K per cell and fixed
    difficulties (``True``: with its own); ``observations`` the observation models it runs beyond those that name
    it in their own ``routes``; ``prefer(matrix, guessing)``, when given, is asked by ``auto``
    before choosing it; ``refusals`` words a refusal of one declaration (``sampler``, ``anchors``) for this
    route, with the fields written ``{route}``, ``{sampler}``… as :class:`SettingsError` renders them.
    """

    name: str
    run: object
    method: str = "nuts"
    samplers: tuple = ("nutpie", "pymc")
    holes: tuple | bool = ("nutpie", "pymc")
    anchors: tuple | bool = ()
    guessing: bool = True
    prefer: object = None
    observations: tuple = ()
    summary: str = ""
    refusals: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "run", lazy(self.run))
        object.__setattr__(self, "prefer", lazy(self.prefer))

    def _takes(self, declared, sampler: str) -> bool:
        return bool(declared) if isinstance(declared, bool) else sampler in declared

    def refusal(self, settings: FitSettings, *, holes: bool, anchors: bool) -> SettingsError | None:
        """Why this route cannot run ``settings`` on this fit (the first declaration it fails), or None."""
        from benchmeasure.irt.observation import OBSERVATIONS

        s = settings
        if s.method != self.method:
            return SettingsError(self.refusals.get("method", "{route} " + self.name + " gives the posterior "
                                                   + ("draws ({method} nuts); {method} map has a route of its "
                                                      "own: leave {route} at auto" if self.method == "nuts"
                                                      else "mode ({method} map)")))
        if self.samplers and s.sampler not in self.samplers:
            return SettingsError(self.refusals.get("sampler", "{route} " + self.name + " runs with {sampler} "
                                                   + " or ".join(self.samplers) + ", not {value!r}"),
                                 value=s.sampler)
        if not self.samplers and s.method == "nuts" and s.sampler != "nutpie":
            return SettingsError(self.refusals.get("sampler", "{route} " + self.name + " runs its own sampler: "
                                                   "leave {sampler} at its default (got {value!r})"),
                                 value=s.sampler)
        own = OBSERVATIONS[s.observation].routes
        if self.name not in own and s.observation not in self.observations:
            routes = [name for name in ROUTES if name in own or s.observation in ROUTES[name].observations]
            return SettingsError("{observation} {value} runs on the " + " or ".join(routes) + " route (use {route} "
                                 + " or ".join(routes) + " or auto)", value=s.observation)
        if anchors and not self._takes(self.anchors, s.sampler):
            return SettingsError(self.refusals.get(
                "anchors", "fixed difficulties are fitted on the joint route ({route} joint or auto)"))
        if holes and not self._takes(self.holes, s.sampler):
            return SettingsError(self.refusals.get(
                "holes", "a matrix with absent cells or K per cell is fitted by NUTS with nutpie or pymc "
                         "({sampler} nutpie or pymc) or by {method} map; the numpyro model assumes one K for "
                         "every cell"))
        return None


ROUTES = Registry("fit route", GROUPS["route"])

ROUTES.register(Route(
    "collapsed", "benchmeasure.irt.fit:run_collapsed",
    summary="NUTS on the abilities' marginal posterior (every b integrated out), then exact draws of b",
    refusals={"sampler": "the collapsed route runs with {sampler} nutpie or pymc; numpyro samples the joint model "
                         "(use {route} joint with {sampler} numpyro)",
              "anchors": "fixed difficulties are fitted on the joint route ({route} joint or auto): the collapsed "
                         "route integrates every difficulty out"}))
ROUTES.register(Route(
    "gibbs", "benchmeasure.irt.fit:run_gibbs", samplers=(), holes=True,
    prefer="benchmeasure.irt.fit:gibbs_preferred",
    summary="blocked Gibbs with exact conditional updates, for large sparse matrices",
    refusals={"method": "{route} gibbs samples the posterior ({method} nuts); the posterior mode ({method} map) has "
                        "no route",
              "sampler": "{route} gibbs runs its own Gibbs sampler, not NUTS: leave {sampler} at its default "
                         "(got {value!r})",
              "anchors": "fixed difficulties are fitted on the joint route ({route} joint or auto): the gibbs route "
                         "samples every difficulty"}))
ROUTES.register(Route(
    "joint", "benchmeasure.irt.fit:run_joint", samplers=("nutpie", "pymc", "numpyro"), anchors=("nutpie", "pymc"),
    summary="NUTS on (theta, b) together; the only route for numpyro, anchors and other observation models",
    refusals={"anchors": "fixed difficulties are fitted by {sampler} nutpie or pymc on the joint route"}))
ROUTES.register(Route(
    "map", "benchmeasure.irt.fit:run_map", method="map", samplers=(), holes=True,
    summary="the marginal posterior mode of b (theta integrated out), no uncertainty",
    refusals={"anchors": "fixed difficulties need {method} nuts (the posterior mode is not implemented for "
                         "anchored fits)"}))

AUTO_ORDER = ("map", "gibbs", "collapsed", "joint")   # what --route auto tries, in order (built-in routes only)


def route_choices() -> list:
    """What ``--route`` accepts: ``auto`` and every registered route that samples (extensions included)."""
    return ["auto", *(name for name in ROUTES if ROUTES[name].method == "nuts")]


@dataclass(frozen=True)
class FitPlan:
    """Everything a fit runs by, resolved once (:func:`plan_fit`): the checked settings with the route chosen,
    the guessing floors, the anchors, whether the matrix has holes, and the seed actually used."""

    settings: FitSettings
    route: str
    guessing: object
    fixed_b: object
    holes: bool
    seed_used: int
    auto: bool = False   # the route was chosen by --route auto (so a fit may fall back: irt/fit.py)

    @property
    def entry(self) -> Route:
        return ROUTES[self.route]

    @property
    def nuts(self) -> bool:
        return self.settings.method == "nuts"

    @property
    def sampler(self) -> str | None:
        """The sampler that runs: the setting's on NUTS routes, ``"gibbs"`` on the gibbs route, None for MAP."""
        if not self.nuts:
            return None
        return self.settings.sampler if self.entry.samplers else self.route

    def record(self, items=None) -> dict:
        """The plan as ``diagnostics.json`` keeps it (``settings``), JSON-ready."""
        s, nuts, g = self.settings, self.nuts, self.guessing
        own_sampler = nuts and not self.entry.samplers          # gibbs: no NUTS settings apply
        record = {
            "method": s.method,
            "route": self.route if nuts else None,
            "sampler": self.sampler,
            "chains": s.chains if nuts else None,
            "tune": s.tune if nuts else None,
            "draws": s.draws if nuts else None,
            "target_accept": float(s.target_accept) if nuts and not own_sampler else None,
            "seed": None if s.seed is None else int(s.seed),
            "seed_used": self.seed_used,
            "guessing": g if np.ndim(g) == 0 else np.asarray(g).tolist(),
            "parametrization": s.parametrization if self.route == "joint" and nuts else None,
            "adaptation": s.adaptation if nuts and self.sampler == "nutpie" else None,
            "fixed_items": None if self.fixed_b is None else [
                item for item, value in zip(items if items is not None else range(len(self.fixed_b)), self.fixed_b)
                if np.isfinite(value)],
        }
        if s.observation != "binomial":  # the paper's binomial fit records exactly what it always did
            record["observation"] = s.observation
        return record


def plan_fit(matrix, settings: FitSettings, guessing=0.0, fixed_b=None) -> FitPlan:
    """The :class:`FitPlan` of fitting ``matrix``; :class:`SettingsError` (fields named) for what cannot run."""
    from benchmeasure.irt.fit import check_guessing

    g = check_guessing(guessing, len(matrix.items), matrix.items)
    holes = getattr(matrix, "trials", None) is not None
    anchors = fixed_b is not None
    s = settings
    if s.route != "auto" and s.route in ROUTES:   # an explicit route's own refusal comes first
        refusal = ROUTES[s.route].refusal(s, holes=holes, anchors=anchors)
        if refusal is not None:
            raise refusal
    if holes and s.observation != "binomial":
        raise SettingsError("a matrix with absent cells or K per cell is fitted with the binomial {observation} "
                            "model only, not {value!r}", value=s.observation)
    if s.route == "auto":
        route = None
        for name in AUTO_ORDER:
            entry = ROUTES[name]
            if entry.refusal(s, holes=holes, anchors=anchors) is None and (
                    entry.prefer is None or entry.prefer(matrix, g)):
                route = name
                break
        if route is None:   # nothing takes it: say why the last route of its method does not
            last = [name for name in AUTO_ORDER if ROUTES[name].method == s.method][-1]
            raise ROUTES[last].refusal(s, holes=holes, anchors=anchors)
    else:
        if s.route not in ROUTES:
            raise SettingsError("{route} must be one of auto, {choices}, got {value!r}",
                                choices=", ".join(n for n in ROUTES if ROUTES[n].method == "nuts"), value=s.route)
        refusal = ROUTES[s.route].refusal(s, holes=holes, anchors=anchors)
        if refusal is not None:
            raise refusal
        route = s.route
    seed_used = int(s.seed) if s.seed is not None else int(np.random.SeedSequence().entropy % (2**32))
    return FitPlan(settings=dataclasses.replace(s, route=route), route=route, guessing=g,
                   fixed_b=None if fixed_b is None else np.asarray(fixed_b, dtype=float), holes=holes,
                   seed_used=seed_used, auto=s.route == "auto")
