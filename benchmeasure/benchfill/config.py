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
resolved against the repository root.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from benchmeasure.errors import fail

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    tomllib = None

REPO = Path(__file__).resolve().parents[2]
GRADERS = ("math", "choice", "ifeval")
BASELINE_BUDGETS = ("matched", "full")
_WITH_DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")


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
    ability_cache: str = "propose/cache/abilities"
    abilities: str = ""
    validity: dict = field(default_factory=dict)

    def path(self, value: str) -> Path:
        """A config path resolved against the repository root."""
        path = Path(expand(value))
        return path if path.is_absolute() else REPO / path

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
    if bench.grader not in GRADERS:
        fail(f"{where} [benchmark]: grader must be one of {', '.join(GRADERS)}, got {bench.grader!r}")
    if bench.matrix_n_trials < 1:
        fail(f"{where} [benchmark]: matrix_n_trials must be >= 1")
    if not 0.0 <= bench.guessing < 1.0:
        fail(f"{where} [benchmark]: guessing must be in [0, 1), got {bench.guessing}")
    for name in ("gaps", "rounds", "parents", "children", "references"):
        if getattr(search, name) < 1:
            fail(f"{where} [search]: {name} must be >= 1, got {getattr(search, name)}")
    if not 0.0 <= search.tolerance < 1.0:
        fail(f"{where} [search]: tolerance must be in [0, 1), got {search.tolerance}")
    if search.baseline_budget not in BASELINE_BUDGETS:
        fail(f"{where} [search]: baseline_budget must be one of {', '.join(BASELINE_BUDGETS)}")
    if client.max_concurrency < 1 or client.max_retries < 0 or client.timeout <= 0:
        fail(f"{where} [client]: need max_concurrency >= 1, max_retries >= 0, timeout > 0")
    validity = data.get("validity", {})
    if not isinstance(validity, dict):
        fail(f"{where}: [validity] must be a table")
    for name in ("panel", "ability_cache", "abilities"):
        if name in data and not isinstance(data[name], str):
            fail(f"{where}: {name} must be a path string")
    return RunConfig(bench, search, client, data.get("panel", RunConfig.panel),
                     data.get("ability_cache", RunConfig.ability_cache), data.get("abilities", ""), dict(validity))


def load_config(path: str | os.PathLike) -> RunConfig:
    """Read a benchmark config (``.toml``) or a run's resolved ``config.json``."""
    path = Path(path)
    if not path.is_file():
        fail(f"{path}: config not found")
    try:
        if path.suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
        else:
            if tomllib is None:
                fail("reading TOML configs needs Python >= 3.11")
            data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, ValueError) as exc:
        fail(f"{path}: cannot parse ({' '.join(str(exc).split())})")
    return config_from_dict(data, str(path))
