"""How one 1PL fit is run: a :class:`FitSettings` object, validated once, here.

    from benchmeasure.irt.settings import FitSettings
    settings = FitSettings(chains=4, draws=1000, seed=1, observation="beta-binomial")
    fit_1pl(matrix, settings=settings)

Every check of a setting lives in :meth:`FitSettings.__post_init__` and fails with a
:class:`SettingsError` whose message names the *field* (``route``, ``sampler``…). A command maps
fields to its flags with :meth:`SettingsError.render` (``commands/fit_irt.py``: ``route`` → ``--route``),
so the library and the command line say the same thing each in its own words.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from benchmeasure.base.errors import InputError

SAMPLERS = ("nutpie", "pymc", "numpyro")
METHODS = ("nuts", "map")
PARAMETRIZATIONS = ("rotated", "direct")
ADAPTATIONS = ("diag", "low_rank")
FIELDS = ("method", "sampler", "chains", "tune", "draws", "target_accept", "seed", "route", "parametrization",
          "adaptation", "cores", "observation")


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
    """The settings of one fit (:func:`benchmeasure.irt.fit.fit_1pl`), checked when made.

    ``method`` nuts (posterior by NUTS, the paper's) or map (marginal posterior mode); ``sampler``
    nutpie, pymc or numpyro; ``chains``, ``tune``, ``draws``, ``target_accept`` NUTS settings (the
    paper's defaults; on the gibbs route ``tune`` is the burn-in sweeps and ``target_accept`` is unused);
    ``seed`` an integer in [0, 2^32) or None (drawn, recorded); ``route`` auto,
    collapsed, joint or gibbs (blocked Gibbs, :mod:`benchmeasure.irt.gibbs`); ``parametrization`` and
    ``adaptation`` the joint route's coordinates and
    nutpie's mass matrix; ``cores`` chains in parallel (None: as many as CPUs allow); ``observation``
    a name in :data:`benchmeasure.irt.observation.OBSERVATIONS` (default the paper's binomial).
    """

    method: str = "nuts"
    sampler: str = "nutpie"
    chains: int = 4
    tune: int = 1000
    draws: int = 1000
    target_accept: float = 0.95
    seed: int | None = None
    route: str = "auto"
    parametrization: str = "rotated"
    adaptation: str = "diag"
    cores: int | None = None
    observation: str = "binomial"

    def __post_init__(self):
        if self.method not in METHODS:
            raise SettingsError("{method} must be one of {choices}, got {value!r}", choices=", ".join(METHODS),
                                value=self.method)
        if self.sampler not in SAMPLERS:
            raise SettingsError("{sampler} must be one of {choices}, got {value!r}", choices=", ".join(SAMPLERS),
                                value=self.sampler)
        for name, low in (("chains", 1), ("tune", 0), ("draws", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise SettingsError("{" + name + "} must be an integer ≥ {low}, got {value!r}", low=low, value=value)
        accept = self.target_accept
        if isinstance(accept, bool) or not (isinstance(accept, (int, float)) and 0.0 < float(accept) < 1.0):
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
        from benchmeasure.irt.observation import OBSERVATIONS

        if self.observation not in OBSERVATIONS:
            raise SettingsError("{observation} must be one of {choices}, got {value!r}",
                                choices=", ".join(OBSERVATIONS), value=self.observation)
        if self.method == "nuts" and self.sampler == "nutpie" and self.tune < 1:
            raise SettingsError("{tune} must be at least 1 with the nutpie sampler (its warm-up schedule needs "
                                "one step)")
        if self.method == "nuts" and self.sampler == "numpyro":
            check_numpyro_available()
        routes = OBSERVATIONS[self.observation].routes
        if self.method == "map" and "map" not in routes:
            raise SettingsError("{observation} {value} needs {method} nuts (the posterior mode integrates the "
                                "binomial only)", value=self.observation)
        from benchmeasure.irt.routes import ROUTES  # which routes exist, and what each supports: irt/routes.py

        if self.route != "auto" and self.route not in ROUTES:
            raise SettingsError("{route} must be one of auto, {choices}, got {value!r}",
                                choices=", ".join(n for n in ROUTES if ROUTES[n].method == "nuts"), value=self.route)

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
