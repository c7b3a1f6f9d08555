"""A BenchFill run's settings: read from a benchmark's TOML config, resolved into the run folder.

``propose/configs/<benchmark>.toml`` holds the per-benchmark settings (defaults are the
paper's, Section 5: three gaps, at most 8 rounds of 4 parents × 4 children, a reference list
of at most 16 pairs, early stop within 0.01). ``init`` writes the resolved settings to
``<run>/config.json``; ``run`` and ``status`` read only that file, so a run keeps the settings
it started with. ``abilities`` may name a ready ``ability.csv``; when empty (the default) the
panel's abilities are fit from the matrix on first use and cached (:mod:`.abilities`).
Endpoints, model names and keys are not here: they come from the panel
config (``benchmeasure.verifier.panel``) and the environment (``env.local``).

Paths may name environment variables, ``$VAR`` or ``${VAR}``, and ``${VAR:-default}`` for a
default used when ``VAR`` is unset or empty (the shipped configs take the panel from
``${PANEL_CONFIG:-verifier/panels/paper.toml}``, as ``env.example`` sets it). Relative paths are
resolved against the project folder: the checkout, or the working folder when the package is installed
(:mod:`benchmeasure.base.resources`); a config file itself may sit anywhere, and the shipped configs and panels
(the checkout's ``propose/configs/`` and ``verifier/panels/``, copied into the package) may be named by name
(``aime24``, ``paper``). Their data paths (``data/benchfill/…``) are the user's files, under the project folder.
The ability cache defaults to ``<results root>/cache/abilities`` (so a run writes nothing into the checkout when
``BENCHFILL_RESULTS`` points elsewhere); ``init`` records the resolved folder. ``[search] reannotate``
(default 0, the paper) sets the fresh rollouts per panel model of the independent re-annotation of
each gap's final item. ``[search] unresolved`` (default ``"skip"``) decides what a target gap whose two edge
items are not resolved gets (:mod:`.gap_choice`): no call (``"skip"``, with a line naming the extra trials that would
resolve it), the extra trials asked of the panel first and the gap filled only if it is then resolved
(``"resolve"``, at most ``resolve_max_trials`` per model and edge item, for up to ``resolve_rounds`` rounds;
:mod:`.resolve`), or the paper's treatment after the resolved gaps (``"fill"``); a run initialized before this setting
existed resumes with ``"fill"``, as it began. ``[search] keep`` (default ``"certified"``) is BenchFill's keep rule
(:mod:`.certify`): a child is kept only when the ``certify_level`` posterior interval of its difficulty lies inside
the target gap and within ``certify_tolerance`` of z*, racing extra rollout batches (at most ``race_batches`` per
gap) on the children that might be; ``"closest"`` is the paper's rule (the valid child closest to z*), with which a
run initialized before the setting existed resumes. ``[search] misfit_p`` (default 0.05; 0 = off) drops, under
every keep rule, a child whose check-fit item test against the panel's fixed abilities has a p-value below it or
that runs against ability (:func:`.calibration.item_fit`); a run initialized before it existed resumes with 0.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from benchmeasure.base.errors import fail, file_errors
from benchmeasure.base.resources import example_path, project_path
from benchmeasure.grading.registry import GRADERS

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    tomllib = None

BASELINE_BUDGETS = ("matched", "full")
KEEP_RULES = ("certified", "closest")   # [search] keep: "closest" is the paper's rule (certify.py)
UNRESOLVED = ("skip", "resolve", "fill")   # [search] unresolved: what a target gap that may be noise gets
_WITH_DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def check_name(name: str, what: str) -> str:
    """``name`` if it is one plain folder name (letters, digits, ``_ . + -``; no separator, not ``..``)."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name or len(name) > 200:
        fail(f"{what} {name!r} must be one plain folder name (letters, digits, '_', '.', '+', '-'; no '/', "
             f"no '..', not starting with '.'), so that the run folder stays inside the results folder")
    return name


def expand(value: str) -> str:
    """``value`` with ``${VAR:-default}``, ``${VAR}`` and ``$VAR`` replaced from the environment."""
    value = _WITH_DEFAULT.sub(lambda m: os.environ.get(m.group(1)) or m.group(2), value)
    return os.path.expandvars(value)


@dataclass(frozen=True)
class BenchmarkSettings:
    """Where the benchmark's data lives and how its items look."""

    name: str
    calibration: str
    pool: str
    matrix: str
    matrix_n_trials: int
    grader: str = "math"
    question_field: str = "question"
    answer_field: str = "answer"
    answer_format: str = "a single final answer"
    guessing: float = 0.0


@dataclass(frozen=True)
class SearchSettings:
    """The loop's budget and rules (paper, Section 5)."""

    gaps: int = 3
    rounds: int = 8
    parents: int = 4
    children: int = 4
    references: int = 16
    tolerance: float = 0.01
    seed: int = 0
    baseline_budget: str = "matched"
    prompts: str = "propose/prompts"
    # Fresh rollouts per panel model for an independent re-annotation of each gap's final item
    # (loop.Loop.reannotate); 0 = off, as in the paper.
    reannotate: int = 0
    # A target gap whose edge items are not resolved (core.resolution: they may be in the wrong order, the gap
    # estimation noise): "skip" spends no call on it and says so; "resolve" first asks the panel for the extra
    # trials on its two edge items that would resolve it (at most resolve_max_trials per model and item; resolve.py)
    # and fills it only if it then is; "fill" aims at it after the resolved ones.
    unresolved: str = "skip"
    resolve_max_trials: int = 256
    resolve_rounds: int = 3
    # BenchFill's keep rule (certify.py): "certified" keeps a child only when its posterior interval (mass
    # certify_level, from screening and race rollouts pooled) lies in the gap and within certify_tolerance of z*,
    # racing at most race_batches extra batches (one call per panel model each) per gap; "closest" is the paper's.
    keep: str = "certified"
    certify_tolerance: float = 0.03
    certify_level: float = 0.9
    race_batches: int = 48
    # The item-fit keep criterion (calibration.item_fit): a child whose check-fit item p-value against the panel's
    # fixed abilities (Bonferroni over the curve and slope tests) is below misfit_p, or that runs against ability,
    # is not kept, by any keep rule or strategy (mass fill too); 0 turns the check off.
    misfit_p: float = 0.05


@dataclass(frozen=True)
class ClientSettings:
    max_concurrency: int = 16
    timeout: float = 600.0
    max_retries: int = 6
    backoff: float = 1.0


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs besides endpoints and keys."""

    benchmark: BenchmarkSettings
    search: SearchSettings = field(default_factory=SearchSettings)
    client: ClientSettings = field(default_factory=ClientSettings)
    panel: str = "verifier/panels/paper.toml"
    # Empty: <results root>/cache/abilities, resolved by 'init' (runner.init_run) and recorded in config.json.
    ability_cache: str = ""
    abilities: str = ""
    validity: dict = field(default_factory=dict)

    def path(self, value: str) -> Path:
        """A config path resolved against the project folder (the checkout; :mod:`benchmeasure.base.resources`)."""
        return project_path(expand(value))

    def panel_path(self, where: str = "") -> Path:
        """The panel file: ``panel`` against the project folder, else the shipped panel it names (by name, or
        ``verifier/panels/paper.toml`` outside a checkout; :func:`benchmeasure.base.resources.example_path`)."""
        resolved = self.path(self.panel)
        return resolved if resolved.is_file() else example_path(expand(self.panel), "panel", where)

    def as_dict(self) -> dict:
        return asdict(self)


def _section(cls, data, where: str):
    if not isinstance(data, dict):
        fail(f"{where}: must be a table")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        fail(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(known)})")
    values = {}
    for name, spec in known.items():
        if name not in data:
            continue
        value = data[name]
        kind = spec.type if isinstance(spec.type, str) else spec.type.__name__
        if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            fail(f"{where}: {name} must be an integer, got {value!r}")
        if kind == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))):
            fail(f"{where}: {name} must be a number, got {value!r}")
        if kind == "str" and not isinstance(value, str):
            fail(f"{where}: {name} must be a string, got {value!r}")
        values[name] = float(value) if kind == "float" else value
    try:
        return cls(**values)
    except TypeError as exc:
        fail(f"{where}: {exc}")


def config_from_dict(data: dict, where: str) -> RunConfig:
    """Build and check a :class:`RunConfig` from parsed TOML or JSON."""
    allowed = {"benchmark", "search", "client", "panel", "ability_cache", "abilities", "validity"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        fail(f"{where}: unknown section {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
    if "benchmark" not in data:
        fail(f"{where}: missing [benchmark] section")
    bench = _section(BenchmarkSettings, data["benchmark"], f"{where} [benchmark]")
    search = _section(SearchSettings, data.get("search", {}), f"{where} [search]")
    client = _section(ClientSettings, data.get("client", {}), f"{where} [client]")
    check_name(bench.name, f"{where} [benchmark]: name")
    if bench.grader not in GRADERS:  # the grader registry (benchmeasure.grading.registry)
        fail(f"{where} [benchmark]: grader must be one of {', '.join(GRADERS)}, got {bench.grader!r}")
    if bench.matrix_n_trials < 1:
        fail(f"{where} [benchmark]: matrix_n_trials must be >= 1")
    if bench.matrix_n_trials > 1_000_000:
        fail(f"{where} [benchmark]: matrix_n_trials {bench.matrix_n_trials} is not a plausible trial count")
    if not 0.0 <= bench.guessing < 1.0:
        fail(f"{where} [benchmark]: guessing must be in [0, 1), got {bench.guessing}")
    for name in ("gaps", "rounds", "parents", "children", "references"):
        if getattr(search, name) < 1:
            fail(f"{where} [search]: {name} must be >= 1, got {getattr(search, name)}")
    if not 0 <= search.reannotate <= 100_000:
        fail(f"{where} [search]: reannotate must be 0 (off) or a number of rollouts per model, got {search.reannotate}")
    if not 0 <= search.seed < 2**32:
        fail(f"{where} [search]: seed must be in [0, 2^32), got {search.seed}")
    if not 0.0 <= search.tolerance < 1.0:
        fail(f"{where} [search]: tolerance must be in [0, 1), got {search.tolerance}")
    if search.unresolved not in UNRESOLVED:
        fail(f"{where} [search]: unresolved must be one of {', '.join(UNRESOLVED)}, got {search.unresolved!r}")
    if not 1 <= search.resolve_rounds <= 100:
        fail(f"{where} [search]: resolve_rounds must be from 1 to 100, got {search.resolve_rounds}")
    if not 1 <= search.resolve_max_trials <= 100_000:
        fail(f"{where} [search]: resolve_max_trials must be from 1 to 100000, got {search.resolve_max_trials}")
    if search.keep not in KEEP_RULES:
        fail(f"{where} [search]: keep must be one of {', '.join(KEEP_RULES)}, got {search.keep!r}")
    if not 0.0 < search.certify_tolerance < 1.0:
        fail(f"{where} [search]: certify_tolerance must be in (0, 1), got {search.certify_tolerance}")
    if not 0.5 <= search.certify_level < 1.0:
        fail(f"{where} [search]: certify_level must be in [0.5, 1), got {search.certify_level}")
    if not 0.0 <= search.misfit_p < 1.0:
        fail(f"{where} [search]: misfit_p must be in [0, 1) (0: no item-fit check), got {search.misfit_p}")
    if not 0 <= search.race_batches <= 100_000:
        fail(f"{where} [search]: race_batches must be from 0 to 100000, got {search.race_batches}")
    if search.baseline_budget not in BASELINE_BUDGETS:
        fail(f"{where} [search]: baseline_budget must be one of {', '.join(BASELINE_BUDGETS)}")
    if (client.max_concurrency < 1 or client.max_retries < 0 or not 0 < client.timeout < float("inf")
            or not 0 <= client.backoff < float("inf")):
        fail(f"{where} [client]: need max_concurrency >= 1, max_retries >= 0, a finite timeout > 0 and backoff >= 0")
    validity = data.get("validity", {})
    if not isinstance(validity, dict):
        fail(f"{where}: [validity] must be a table")
    unknown = sorted(set(validity) - {"solve_n", "grade_options"})
    if unknown:
        fail(f"{where} [validity]: unknown key {unknown[0]!r} (allowed: solve_n, grade_options)")
    solve_n = validity.get("solve_n", 1)
    if isinstance(solve_n, bool) or not isinstance(solve_n, int) or not 1 <= solve_n <= 1000:
        fail(f"{where} [validity]: solve_n must be an integer from 1 to 1000, got {solve_n!r}")
    options = validity.get("grade_options", {})
    if not isinstance(options, dict):
        fail(f"{where} [validity]: grade_options must be a table")
    # the options the grader takes (its registry entry): a typo is an error at init
    unknown = sorted(set(options) - set(GRADERS[bench.grader].options))
    if unknown:
        fail(f"{where} [validity]: grade_options {unknown[0]!r} is not an option of the {bench.grader} grader "
             f"(options: {', '.join(GRADERS[bench.grader].options)})")
    for name in ("panel", "ability_cache", "abilities"):
        if name in data and not isinstance(data[name], str):
            fail(f"{where}: {name} must be a path string")
    return RunConfig(bench, search, client, data.get("panel", RunConfig.panel),
                     data.get("ability_cache", RunConfig.ability_cache), data.get("abilities", ""), dict(validity))


def load_config(path: str | os.PathLike) -> RunConfig:
    """Read a benchmark config (``.toml``, anywhere, or a shipped one by name: ``aime24``) or a run's resolved
    ``config.json``."""
    path = Path(path) if Path(path).is_file() else example_path(path, "config")
    with file_errors(path):
        text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".json":
            data = json.loads(text)
            if isinstance(data, dict) and isinstance(data.get("search"), dict):
                # a run initialized before [search] unresolved existed aimed at every target: it resumes so
                data["search"].setdefault("unresolved", "fill")
                # ... and kept the valid child closest to z* (the certified keep rule came later)
                data["search"].setdefault("keep", "closest")
                # ... and kept children without the item-fit check
                data["search"].setdefault("misfit_p", 0.0)
        else:
            if tomllib is None:
                fail("reading TOML configs needs Python >= 3.11")
            data = tomllib.loads(text)
    except (json.JSONDecodeError, ValueError) as exc:
        fail(f"{path}: cannot parse ({' '.join(str(exc).split())})")
    if not isinstance(data, dict):
        fail(f"{path}: expected a table of settings")
    return config_from_dict(data, str(path))


def results_root() -> Path:
    """Where run folders go: ``$BENCHFILL_RESULTS``, else ``propose/results`` in the project folder."""
    chosen = os.environ.get("BENCHFILL_RESULTS")
    return Path(chosen) if chosen is not None else project_path("propose/results")
