"""The plan of a 1PL fit, owned here: its settings, checked once; the route it runs; the record it leaves.

    from benchmeasure.irt.plan import FitSettings, plan_fit
    settings = FitSettings(chains=4, draws=1000, seed=1, observation="beta-binomial")
    plan = plan_fit(matrix, settings, guessing=0.25)        # what cannot run is refused here, before any output
    fit_1pl(matrix, plan=plan)

* :class:`FitSettings` — every check of a setting lives in its ``__post_init__`` and fails with a
  :class:`SettingsError` whose message names the *field* (``route``, ``sampler``…). A command maps fields to its
  flags with :meth:`SettingsError.render` (``commands/fit_irt.py``: ``route`` → ``--route``), so the library and
  the command line say the same thing each in its own words. The ``--sampler``, ``--method`` and ``--route``
  choices are read from the routes' declarations (:data:`benchmeasure.irt.routes.ROUTES`):
  :func:`sampler_choices`, :func:`method_choices`, :func:`route_choices`.
* :func:`check_guessing` — the guessing floors, one number or one per item.
* :func:`refusal` — why a route cannot run some settings (the first declaration it fails), or None.
* :func:`plan_fit` → :class:`FitPlan` — the route (``auto`` resolved: the first route in :data:`AUTO_ORDER`
  that accepts the fit and, where it has one, whose ``prefer`` test says yes), the sampler, the seed actually
  used. The command resolves the plan once, before any output, and :func:`benchmeasure.irt.fit.fit_1pl` runs
  it as it is.
* :meth:`FitPlan.record` — the settings as a fit keeps them (``FitResult.settings``), and :func:`fit_record` —
  the one record of a fit that ``diagnostics.json`` holds and every report reads.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import asdict, dataclass

import numpy as np

from benchmeasure.base.errors import InputError, fail
from benchmeasure.irt.observation import OBSERVATIONS
from benchmeasure.irt.priors import PRIORS
from benchmeasure.irt.routes import ROUTES, Route

PARAMETRIZATIONS = ("rotated", "direct")
ADAPTATIONS = ("diag", "low_rank")
FIELDS = ("method", "sampler", "chains", "tune", "draws", "target_accept", "seed", "route", "parametrization",
          "adaptation", "cores", "observation", "prior", "model", "compare")
AUTO_ORDER = ("map", "gibbs", "collapsed", "joint", "2pl")   # what --route auto tries, in order (built-in routes only)
#: the paper's NUTS run: what ``tune``, ``draws`` and ``target_accept`` left unset (None) become, unless the route
#: declares its own (:attr:`benchmeasure.irt.routes.Route.defaults`)
PAPER_DEFAULTS = {"tune": 1000, "draws": 1000, "target_accept": 0.95}
#: Packages whose versions a fit record names.
PACKAGES = ["numpy", "scipy", "pandas", "pymc", "pytensor", "nutpie", "numba", "arviz", "xarray", "zarr",
            "numpyro", "jax"]


def _ordered(values) -> tuple:
    return tuple(dict.fromkeys(values))


def sampler_choices() -> tuple:
    """What ``sampler`` accepts: every sampler a registered route declares (``nutpie`` first: the default)."""
    return _ordered(s for name in ROUTES for s in ROUTES[name].samplers)


def method_choices() -> tuple:
    """What ``method`` accepts: the methods of the registered routes (``nuts`` first: the default)."""
    return _ordered(ROUTES[name].method for name in ROUTES)


def model_choices() -> tuple:
    """What ``model`` accepts: every item-response model a registered route declares (``1pl`` first: the default)."""
    return _ordered(["1pl", *(m for name in ROUTES for m in ROUTES[name].models)])


def route_choices() -> list:
    """What ``route`` accepts: ``auto`` and every registered route that samples (extensions included)."""
    return ["auto", *(name for name in ROUTES if ROUTES[name].method == "nuts")]


class SettingsError(InputError):
    """A bad fit setting. ``template`` names fields as ``{field}``; :meth:`render` words them for a caller."""

    def __init__(self, template: str, **values):
        self.template = template
        self.values = values
        super().__init__(self.render())

    def render(self, names: dict | None = None) -> str:
        """The message with each ``{field}`` written as ``names[field]`` (default: the field's own name)."""
        names = names or {}
        return self.template.format(**{f: names.get(f, f) for f in FIELDS}, **self.values)


@dataclass(frozen=True)
class FitSettings:
    """The settings of one fit (:func:`benchmeasure.irt.fit.fit_1pl`), checked when made (the only checks of them).

    ``method`` nuts (posterior by NUTS, the paper's) or map (marginal posterior mode); ``sampler``
    nutpie, pymc or numpyro; ``chains``, ``tune``, ``draws``, ``target_accept`` NUTS settings (on the gibbs
    route ``tune`` is the burn-in sweeps and ``target_accept`` is unused); ``tune``, ``draws`` and
    ``target_accept`` left None are resolved by :func:`plan_fit`: the route's own defaults where it declares
    them (the 2pl route's, docs/irt.md), else the paper's (:data:`PAPER_DEFAULTS`: 1000, 1000, 0.95);
    ``seed`` an integer in [0, 2^32) or None (drawn, recorded); ``route`` auto,
    or a name in :data:`~benchmeasure.irt.routes.ROUTES`; ``parametrization`` and
    ``adaptation`` the joint route's coordinates and
    nutpie's mass matrix; ``cores`` chains in parallel (None: as many as CPUs allow); ``observation``
    a name in :data:`benchmeasure.irt.observation.OBSERVATIONS` (default the paper's binomial); ``model`` the
    item-response model, one a route declares in its ``models`` (default the paper's ``1pl``; ``2pl`` adds a
    slope per item, docs/irt.md); ``compare`` None or a model to compare with by PSIS-LOO (``2pl`` fits only);
    ``prior`` a name in :data:`benchmeasure.irt.priors.PRIORS` (default the paper's N(0, 1); ``hierarchical``
    where a route declares it).
    """

    method: str = "nuts"
    sampler: str = "nutpie"
    chains: int = 4
    tune: int | None = None
    draws: int | None = None
    target_accept: float | None = None
    seed: int | None = None
    route: str = "auto"
    parametrization: str = "rotated"
    adaptation: str = "diag"
    cores: int | None = None
    observation: str = "binomial"
    prior: str = "paper"
    model: str = "1pl"
    compare: str | None = None

    def __post_init__(self):
        if self.method not in method_choices():
            raise SettingsError("{method} must be one of {choices}, got {value!r}",
                                choices=", ".join(method_choices()), value=self.method)
        if self.sampler not in sampler_choices():
            raise SettingsError("{sampler} must be one of {choices}, got {value!r}",
                                choices=", ".join(sampler_choices()), value=self.sampler)
        for name, low in (("chains", 1), ("tune", 0), ("draws", 1)):
            value = getattr(self, name)
            if value is None and name != "chains":   # the route's default (plan_fit)
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise SettingsError("{" + name + "} must be an integer ≥ {low}, got {value!r}", low=low, value=value)
        accept = self.target_accept
        if accept is not None and (isinstance(accept, bool) or not (isinstance(accept, (int, float))
                                                                    and 0.0 < float(accept) < 1.0)):
            raise SettingsError("{target_accept} must be strictly between 0 and 1, got {value!r}", value=accept)
        seed = self.seed
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                                 or not 0 <= int(seed) < 2**32):
            raise SettingsError("{seed} must be an integer in [0, 2^32), got {value!r}", value=seed)
        if self.parametrization not in PARAMETRIZATIONS:
            raise SettingsError("{parametrization} must be one of {choices}, got {value!r}",
                                choices=", ".join(PARAMETRIZATIONS), value=self.parametrization)
        if self.adaptation not in ADAPTATIONS:
            raise SettingsError("{adaptation} must be one of {choices}, got {value!r}",
                                choices=", ".join(ADAPTATIONS), value=self.adaptation)
        if self.cores is not None and (isinstance(self.cores, bool) or not isinstance(self.cores, (int, np.integer))
                                       or self.cores < 1):
            raise SettingsError("{cores} must be an integer ≥ 1, got {value!r}", value=self.cores)
        if self.observation not in OBSERVATIONS:
            raise SettingsError("{observation} must be one of {choices}, got {value!r}",
                                choices=", ".join(OBSERVATIONS), value=self.observation)
        if self.model not in model_choices():
            raise SettingsError("{model} must be one of {choices}, got {value!r}",
                                choices=", ".join(model_choices()), value=self.model)
        if not any(self.model in ROUTES[n].models and ROUTES[n].method == self.method for n in ROUTES):
            raise SettingsError("{model} {value} is fitted by {method} nuts only (no route gives its mode)",
                                value=self.model)
        if self.compare is not None and (self.compare != "1pl" or self.model != "2pl"):
            raise SettingsError("{compare} takes 1pl with {model} 2pl (the 2PL is compared with the 1PL it "
                                "extends), got {value!r} with {model} {model_value}", value=self.compare,
                                model_value=self.model)
        if self.prior not in PRIORS:
            raise SettingsError("{prior} must be one of {choices}, got {value!r}",
                                choices=", ".join(PRIORS), value=self.prior)
        if self.method == "nuts" and self.sampler == "nutpie" and self.tune is not None and self.tune < 1:
            raise SettingsError("{tune} must be at least 1 with the nutpie sampler (its warm-up schedule needs "
                                "one step)")
        if self.method == "nuts" and self.sampler == "numpyro":
            check_numpyro_available()
        routes = OBSERVATIONS[self.observation].routes
        if self.method == "map" and "map" not in routes:
            raise SettingsError("{observation} {value} needs {method} nuts (the posterior mode integrates the "
                                "binomial only)", value=self.observation)
        if self.route != "auto" and self.route not in ROUTES:   # which routes exist: irt/routes/
            raise SettingsError("{route} must be one of {choices}, got {value!r}",
                                choices=", ".join(route_choices()), value=self.route)

    def as_dict(self) -> dict:
        return asdict(self)


def check_numpyro_available() -> None:
    """SettingsError naming the missing package when the numpyro sampler cannot run here."""
    try:
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError as exc:
        raise SettingsError(
            "{sampler} numpyro needs the optional packages jax and numpyro, which are not installed here "
            "({missing} is missing); install them with pip install 'benchmeasure[numpyro]' "
            "(in a checkout: bash scripts/setup_env.sh numpyro) or use {sampler} nutpie (default) or {sampler} pymc",
            missing=exc.name) from None


def check_guessing(guessing, n_items: int, items=None):
    """Return ``guessing`` as a float or a float array of shape (N,), each in [0, 1); else InputError."""
    if np.ndim(guessing) == 0:
        try:
            g = float(guessing)
        except (TypeError, ValueError):
            fail(f"guessing must be a number in [0, 1), got {guessing!r}")
        if not (math.isfinite(g) and 0.0 <= g < 1.0):
            fail(f"guessing must be in [0, 1), got {g}")
        return g
    g = np.asarray(guessing, dtype=float)
    if g.shape != (n_items,):
        fail(f"per-item guessing must have one value per item ({n_items}), got shape {g.shape}")
    bad = np.flatnonzero(~(np.isfinite(g) & (g >= 0.0) & (g < 1.0)))
    if bad.size:
        k = int(bad[0])
        name = items[k] if items is not None else k
        fail(f"guessing for item {name!r} is {g[k]}, outside [0, 1)")
    return g


# ---------------------------------------------------------------------------------------------
# which route runs


def _takes(declared, sampler: str) -> bool:
    return bool(declared) if isinstance(declared, bool) else sampler in declared


def refusal(route: Route, settings: FitSettings, *, holes: bool, anchors: bool) -> SettingsError | None:
    """Why ``route`` cannot run ``settings`` on this fit (the first declaration it fails), or None."""
    s, name, words = settings, route.name, route.refusals
    if s.method != route.method:
        return SettingsError(words.get("method", "{route} " + name + " gives the posterior "
                                       + ("draws ({method} nuts); {method} map has a route of its "
                                          "own: leave {route} at auto" if route.method == "nuts"
                                          else "mode ({method} map)")))
    if route.samplers and s.sampler not in route.samplers:
        return SettingsError(words.get("sampler", "{route} " + name + " runs with {sampler} "
                                       + " or ".join(route.samplers) + ", not {value!r}"), value=s.sampler)
    if not route.samplers and s.method == "nuts" and s.sampler != "nutpie":
        return SettingsError(words.get("sampler", "{route} " + name + " runs its own sampler: "
                                       "leave {sampler} at its default (got {value!r})"), value=s.sampler)
    if s.model not in route.models:
        fitted = [n for n in ROUTES if s.model in ROUTES[n].models]
        return SettingsError("{route} " + name + " fits the " + " or ".join(route.models) + " model, not {model} "
                             + s.model + " (use {route} " + " or ".join(fitted) + " or auto)")
    own = OBSERVATIONS[s.observation].routes
    if name not in own and s.observation not in route.observations:
        routes = [n for n in ROUTES if n in own or s.observation in ROUTES[n].observations]
        return SettingsError("{observation} {value} runs on the " + " or ".join(routes) + " route (use {route} "
                             + " or ".join(routes) + " or auto)", value=s.observation)
    if s.prior not in route.priors:   # the priors a route fits are its declaration (Route.priors)
        routes = [n for n in ROUTES if s.prior in ROUTES[n].priors]
        return SettingsError("{prior} " + s.prior + " is fitted on the " + " or ".join(routes) + " route, not on "
                             + name + " (use {route} " + " or ".join(routes) + " or auto)")
    if anchors and not _takes(route.anchors, s.sampler):
        return SettingsError(words.get(
            "anchors", "fixed difficulties are fitted on the joint route ({route} joint or auto)"))
    if holes and not _takes(route.holes, s.sampler):
        return SettingsError(words.get(
            "holes", "a matrix with absent cells or K per cell is fitted by NUTS with nutpie or pymc "
                     "({sampler} nutpie or pymc) or by {method} map; the numpyro model assumes one K for "
                     "every cell"))
    return None


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
    route_defaults: tuple = ()   # the settings left unset that took the route's own default (Route.defaults)

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

    def refusal(self, route: str) -> SettingsError | None:
        """Why ``route`` cannot run this plan's settings, inputs and anchors (:func:`refusal`), or None."""
        settings = dataclasses.replace(self.settings, route=route)
        return refusal(ROUTES[route], settings, holes=self.holes, anchors=self.fixed_b is not None)

    def record(self, items=None) -> dict:
        """The plan as a fit keeps it (``FitResult.settings``, the ``settings`` of :func:`fit_record`), JSON-ready."""
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
            "parametrization": s.parametrization if self.route in ("joint", "2pl") and nuts else None,
            "adaptation": s.adaptation if nuts and self.sampler == "nutpie" else None,
            "fixed_items": None if self.fixed_b is None else [
                item for item, value in zip(items if items is not None else range(len(self.fixed_b)), self.fixed_b)
                if np.isfinite(value)],
        }
        if s.observation != "binomial":  # the paper's binomial fit records exactly what it always did
            record["observation"] = s.observation
        if s.model != "1pl":   # likewise the 1PL: its record has no model key
            record["model"] = s.model
        if s.compare is not None:
            record["compare"] = s.compare
        if s.prior != "paper":   # likewise the paper's prior
            record["prior"] = s.prior
        if self.route_defaults and nuts:   # the route's own defaults, not the paper's (the 2pl route's)
            record["route_defaults"] = list(self.route_defaults)
        return record


def plan_fit(matrix, settings: FitSettings, guessing=0.0, fixed_b=None) -> FitPlan:
    """The :class:`FitPlan` of fitting ``matrix``; :class:`SettingsError` (fields named) for what cannot run."""
    g = check_guessing(guessing, len(matrix.items), matrix.items)
    holes = getattr(matrix, "trials", None) is not None
    anchors = fixed_b is not None
    s = settings
    if s.route != "auto":   # an explicit route's own refusal comes first (FitSettings checked that it exists)
        refused = refusal(ROUTES[s.route], s, holes=holes, anchors=anchors)
        if refused is not None:
            raise refused
    if holes and s.observation != "binomial":
        raise SettingsError("a matrix with absent cells or K per cell is fitted with the binomial {observation} "
                            "model only, not {value!r}", value=s.observation)
    route = s.route
    if route == "auto":
        route = next((name for name in AUTO_ORDER
                      if refusal(ROUTES[name], s, holes=holes, anchors=anchors) is None
                      and (ROUTES[name].prefer is None or ROUTES[name].prefer(matrix, g))), None)
        if route is None:   # nothing takes it: say why the last route of its method does not
            last = [name for name in AUTO_ORDER if ROUTES[name].method == s.method][-1]
            raise refusal(ROUTES[last], s, holes=holes, anchors=anchors)
    seed_used = int(s.seed) if s.seed is not None else int(np.random.SeedSequence().entropy % (2**32))
    unset = [name for name in PAPER_DEFAULTS if getattr(s, name) is None]
    defaults = {name: ROUTES[route].defaults.get(name, PAPER_DEFAULTS[name]) for name in unset}
    own = tuple(name for name in unset if name in ROUTES[route].defaults)
    return FitPlan(settings=dataclasses.replace(s, route=route, **defaults), route=route, guessing=g,
                   fixed_b=None if fixed_b is None else np.asarray(fixed_b, dtype=float), holes=holes,
                   seed_used=seed_used, auto=s.route == "auto", route_defaults=own)


# ---------------------------------------------------------------------------------------------
# the record of a fit


def fit_record(result, matrix, *, matrix_path, benchmark: str, guessing_csv=None, fixed_difficulties=None,
               save_posterior: bool = False, wall_time: float, calibrated: dict | None = None,
               progress=None) -> dict:
    """The ``diagnostics.json`` record of ``result`` (a :class:`~benchmeasure.irt.fit.FitResult`) fitted to
    ``matrix``: the one record of a fit that the fit folder holds and every report reads.

    Convergence (the paper's Tables 6/9/10 report ``max_r_hat``, ``min_ess_bulk`` and ``divergences``), the
    settings (``result.settings``: :meth:`FitPlan.record` of the plan that ran, with the per-item guessing file
    and the anchors' file named by path and sha256), the input's sha256, constant items and models, timing,
    warnings, package versions, the command line, ``calibrated`` (the calibrated intervals, when computed) and
    the absent cells of a matrix with holes. ``progress`` (a :class:`~.progress.Progress`, optional) is shown
    the tail-ESS pass over the draws."""
    from benchmeasure.base.files import command_line, package_versions, sha256_file
    from benchmeasure.core.matrix import constant_models
    from benchmeasure.irt.fit_folder import OUTPUTS, POSTERIOR_NAME, json_safe, tail_ess_summary

    d = result.diagnostics
    nuts = result.method == "nuts"
    settings = dict(result.settings)
    fixed_items = settings.pop("fixed_items", None)
    if isinstance(settings["guessing"], list):   # per item: the file it came from
        guessing = np.asarray(settings["guessing"], dtype=float)
        settings["guessing"] = {"per_item_csv": os.path.abspath(guessing_csv), "sha256": sha256_file(guessing_csv),
                                "min": float(min(guessing)), "max": float(max(guessing))}
    settings["fixed_difficulties"] = None if fixed_difficulties is None else {
        "path": os.path.abspath(fixed_difficulties), "sha256": sha256_file(fixed_difficulties), "items": fixed_items,
        "note": "these items kept their given b (b_sd 0, no R-hat/ESS, fixed = true in difficulty.csv); "
                "max_r_hat and min_ess_bulk cover the models and the free items"}
    constant = matrix.constant_items()
    record = {
        "benchmark": benchmark,
        "max_r_hat": d.get("max_r_hat"),
        "min_ess_bulk": d.get("min_ess_bulk"),
        "divergences": d.get("divergences", 0),
        "method": result.method,
        "uncertainty": (None if nuts else
                        "none: --method map gives the posterior mode only; b_sd, theta_sd, r_hat and ess_bulk are "
                        "empty and max_r_hat / min_ess_bulk are null"),
        "converged": d.get("converged") if nuts else None,
        "worst_r_hat": d.get("worst_r_hat"),
        "worst_ess_bulk": d.get("worst_ess_bulk"),
        "leapfrog_steps_per_draw": d.get("leapfrog_steps_per_draw"),
        "max_tree_depth_hits": d.get("max_tree_depth_hits"),
        "settings": settings,
        "input": {
            "path": os.path.abspath(matrix_path),
            "sha256": sha256_file(matrix_path),
            "models": len(matrix.models),
            "items": len(matrix.items),
            "n_trials": matrix.n_trials,
        },
        "constant_items": {
            "all_correct": constant["all_correct"],
            "all_wrong": constant["all_wrong"],
            "note": "items every model solved in every trial, or none did; legal, the priors keep their b finite, "
                    "but their b is set mostly by the prior",
        },
        **({"observation": d["observation"]} if "observation" in d else {}),
        **{key: d[key] for key in ("model", "slopes", "loo") if key in d},   # the 2PL's (fit --model 2pl)
        **({"prior": d["prior"]} if "prior" in d else {}),   # a prior other than the paper's, with its hyperparameters
        **({"gibbs": d["gibbs"]} if "gibbs" in d else {}),   # the gibbs route's acceptance rates and start
        "quadrature": d.get("quadrature"),
        "ties": d.get("ties"),
        "dispersion": d.get("dispersion"),
        "timing": {key: d.get(key) for key in ("compile_time_s", "sampling_time_s", "difficulty_draw_time_s",
                                               "summary_time_s", "optimization_time_s", "min_ess_bulk_per_s")},
        "wall_time_s": wall_time,
        "warnings": list(result.warnings),
        "versions": package_versions(PACKAGES),
        "command": command_line(),
        "outputs": list(OUTPUTS) + ([POSTERIOR_NAME] if save_posterior else []),
        "constant_models": {
            **constant_models(matrix),
            "note": "models that solved every item in every trial, or none; legal, but their theta is set mostly "
                    "by the prior"},
        **tail_ess_summary(result, progress),
    }
    if calibrated is not None:
        record["calibrated_intervals"] = calibrated
    trials = getattr(matrix, "trials", None)
    if trials is not None:
        absent = trials == 0
        record["absent_cells"] = {
            "total": int(absent.sum()),
            "per_model": {m: int(c) for m, c in zip(matrix.models, absent.sum(axis=1)) if c},
            "per_item": {i: int(c) for i, c in zip(matrix.items, absent.sum(axis=0)) if c}}
    return json_safe(record)
