"""The parameter space of a dynamic benchmark, read from a YAML (or JSON) file.

The file maps each parameter name to one of::

    name: {type: int, low: 1, high: 10}          # integers low..high inclusive
    name: {type: float, low: 0.0, high: 1.0}     # reals in [low, high]
    name: {type: categorical, choices: [a, b]}   # one of the listed values (strings, numbers, booleans)

A configuration is a dict ``{name: value}``; its key (``name=value;…`` in file order) names it in the
journal and the outputs. A space without float parameters is finite (:attr:`Space.size`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmeasure.base.errors import fail

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_CHOICES = 10_000
MAX_INT_RANGE = 10**12


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` is ``int``, ``float`` or ``categorical``."""

    name: str
    kind: str
    low: float = 0.0
    high: float = 0.0
    choices: tuple = ()

    @property
    def count(self) -> int | None:
        """How many values it takes (None for a float)."""
        if self.kind == "int":
            return int(self.high - self.low + 1)
        if self.kind == "categorical":
            return len(self.choices)
        return None

    def sample(self, rng: np.random.Generator):
        if self.kind == "int":
            return int(rng.integers(int(self.low), int(self.high) + 1))
        if self.kind == "float":
            return float(rng.uniform(self.low, self.high))
        return self.choices[int(rng.integers(len(self.choices)))]

    def value_at(self, index: int):
        """The ``index``-th value of a finite parameter."""
        return int(self.low) + index if self.kind == "int" else self.choices[index]

    def features(self, value) -> list[float]:
        """The value as model features: a numeric value scaled to [0, 1] and its square; a category one-hot."""
        if self.kind == "categorical":
            return [1.0 if value == c else 0.0 for c in self.choices]
        span = self.high - self.low
        u = (float(value) - self.low) / span if span > 0 else 0.0
        return [u, u * u]

    def check(self, value, where: str):
        """``value`` as this parameter's type; InputError when it is not one of its values."""
        if self.kind == "categorical":
            if value not in self.choices:
                fail(f"{where}: {self.name}={value!r} is not one of {list(self.choices)}")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            fail(f"{where}: {self.name}={value!r} is not a number")
        if self.kind == "int" and int(value) != value:
            fail(f"{where}: {self.name}={value!r} is not a whole number")
        if not self.low <= value <= self.high:
            fail(f"{where}: {self.name}={value!r} is outside [{self.low:g}, {self.high:g}]")
        return int(value) if self.kind == "int" else float(value)


class Space:
    """An ordered set of parameters."""

    def __init__(self, params: list[Param]):
        if not params:
            raise ValueError("a space needs at least one parameter")
        self.params = list(params)
        self.names = [p.name for p in params]
        counts = [p.count for p in params]
        self.size = None if None in counts else math.prod(counts)
        self.n_features = 1 + sum(len(p.choices) if p.kind == "categorical" else 2 for p in params)

    def sample(self, rng: np.random.Generator) -> dict:
        return {p.name: p.sample(rng) for p in self.params}

    def configuration(self, index: int) -> dict:
        """The ``index``-th configuration of a finite space (mixed radix, last parameter fastest)."""
        config = {}
        for p in reversed(self.params):
            index, digit = divmod(index, p.count)
            config[p.name] = p.value_at(digit)
        return {name: config[name] for name in self.names}

    def key(self, config: dict) -> str:
        return ";".join(f"{p.name}={config[p.name]!r}" for p in self.params)

    def features(self, config: dict) -> list[float]:
        row = [1.0]
        for p in self.params:
            row += p.features(config[p.name])
        return row

    def feature_matrix(self, configs: list[dict]) -> np.ndarray:
        return np.array([self.features(c) for c in configs], dtype=float).reshape(len(configs), self.n_features)

    def describe(self) -> dict:
        return {p.name: ({"type": p.kind, "choices": list(p.choices)} if p.kind == "categorical"
                         else {"type": p.kind, "low": p.low, "high": p.high}) for p in self.params}


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        fail(f"{where} must be a finite number, not {value!r}")
    return value


def space_from_dict(data, where: str) -> Space:
    """A :class:`Space` from the parsed file; InputError naming ``where`` and the parameter on any problem."""
    if not isinstance(data, dict) or not data:
        fail(f"{where}: expected a mapping of parameter names to {{type: …}} entries")
    params = []
    for name, spec in data.items():
        if not isinstance(name, str) or not NAME.fullmatch(name):
            fail(f"{where}: parameter name {name!r} must be letters, digits and _ (not starting with a digit)")
        here = f"{where}: parameter {name!r}"
        if not isinstance(spec, dict):
            fail(f"{here}: expected {{type: int|float|categorical, …}}, got {type(spec).__name__}")
        kind = spec.get("type")
        kind = kind if isinstance(kind, str) else repr(kind)
        allowed = {"int": {"type", "low", "high"}, "float": {"type", "low", "high"},
                   "categorical": {"type", "choices"}}
        if kind not in allowed:
            fail(f"{here}: type must be int, float or categorical, not {kind!r}")
        extra = sorted(map(str, set(spec) - allowed[kind]))
        if extra:
            fail(f"{here}: unknown field(s) {', '.join(extra)} for type {kind}")
        if kind == "categorical":
            choices = spec.get("choices")
            if not isinstance(choices, list) or not choices or len(choices) > MAX_CHOICES:
                fail(f"{here}: choices must be a non-empty list (at most {MAX_CHOICES})")
            for c in choices:
                if not isinstance(c, (str, int, float, bool)) or (isinstance(c, float) and not math.isfinite(c)):
                    fail(f"{here}: choice {c!r} is not a string, number or boolean")
            if len({repr(c) for c in choices}) != len(choices):
                fail(f"{here}: choices repeat a value")
            params.append(Param(name, kind, choices=tuple(choices)))
            continue
        if "low" not in spec or "high" not in spec:
            fail(f"{here}: needs low and high")
        low, high = _number(spec["low"], f"{here} low"), _number(spec["high"], f"{here} high")
        if kind == "int" and (int(low) != low or int(high) != high):
            fail(f"{here}: low and high of an int parameter must be whole numbers")
        if low > high:
            fail(f"{here}: low {low} is above high {high}")
        if kind == "int" and high - low >= MAX_INT_RANGE:
            fail(f"{here}: range too wide (at most {MAX_INT_RANGE} values)")
        params.append(Param(name, kind, float(low), float(high)))
    return Space(params)


def read_space(path) -> Space:
    """Read a space file (YAML, of which JSON is a subset)."""
    try:
        import yaml
    except ImportError:
        from benchmeasure.base.extras import missing_package

        fail(missing_package("reading a space file", "yaml", "scope"))

    from benchmeasure.base.compressed import open_input, read_errors

    path = Path(path)
    if not path.exists():
        fail(f"{path}: space file not found")
    if path.is_dir():
        fail(f"{path}: is a folder, not a space file")
    try:  # the one input reader: .gz/.bz2/.xz as named (a compressed space was "not UTF-8 text"), a BOM dropped
        with read_errors(path), open_input(path) as handle:
            text = handle.read()
    except OSError as exc:
        fail(f"{path}: cannot be read ({exc.strerror})")
    try:
        data = yaml.safe_load(text)
    except yaml.reader.ReaderError as exc:  # a control character YAML does not allow (was "syntax error")
        line = text.count("\n", 0, exc.position) + 1
        fail(f"{path}: not valid YAML at line {line} (character U+{exc.character:04X} is not allowed in YAML; "
             "remove it)" if isinstance(exc.character, int) else f"{path}: not valid YAML at line {line} ({exc})")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        fail(f"{path}: not valid YAML{line} ({getattr(exc, 'problem', None) or 'syntax error'})")
    except RecursionError:
        fail(f"{path}: nested too deeply")
    return space_from_dict(data, str(path))
