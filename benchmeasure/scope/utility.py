"""Utilities: what makes a configuration worth certifying, as a threshold on its error rate.

* ``error`` — the error rate itself: certified when its lower bound is ≥ τ.
* ``complexity`` — error relative to a complexity expression c(config) of the parameters
  (``--complexity "terms*digits"``): utility = error / c, certified when its lower bound is ≥ τ, i.e. when
  the error's lower bound is ≥ τ·c (c is known, so the error bound carries over exactly). A
  configuration whose τ·c exceeds 1 can never qualify and gets no pulls.

* ``band`` — a difficulty band [lo, hi] on a benchmark's normalized scale z = (b − b_min)/(b_max − b_min)
  (b_min, b_max: the benchmark's difficulty file), for a panel of M models whose abilities θ_m are held
  fixed (the 1PL as BenchFill calibrates, :mod:`benchmeasure.benchfill.calibration`). Each instance is
  answered by every panel model; the panel's mean error e(b) = 1 − mean_m σ(θ_m − b) is increasing in
  b, so z ∈ [lo, hi] ⇔ e ∈ [e(b_lo), e(b_hi)]: certified when the bounds on the panel's mean error lie
  inside that interval (a two-sided certificate, same δ). The band may be named by a gap instead
  (:func:`gap_band`, ``scope --gap R``): the R-th gap of the benchmark in the one gap order every
  gap choice of this project uses (:func:`benchmeasure.core.resolution.resolved_first`: resolved
  gaps first, widest first among them), with a warning when that gap is not resolved.

Each utility is a :class:`Utility` entry of :data:`UTILITIES` (``scope --utility NAME``), registered beside its
threshold function with :meth:`UTILITIES.add <benchmeasure.base.registry.Registry.add>`; another package adds one
through the entry-point group ``benchmeasure.scope_utilities``.

The expression may use the parameter names, numbers, + − * / ** and ( ), and log, sqrt, exp, min, max,
abs; it must give a positive finite number for every configuration.
"""

from __future__ import annotations

import ast
import logging
import math
import operator
from dataclasses import dataclass
from typing import ClassVar

from benchmeasure.base.errors import fail
from benchmeasure.base.registry import GROUPS, Registry

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Utility:
    """A utility: ``threshold(threshold, space, complexity, interval) -> (config -> threshold on the error rate)``
    (a number: one-sided; a (low, high) pair: the error rate must lie inside); ``panel``: it needs the panel's
    error interval (``interval``, from ``--band``/``--gap``, ``--abilities`` and ``--difficulty``)."""

    name: str
    threshold: object
    panel: bool = False
    summary: str = ""

    DECORATES: ClassVar[str] = "threshold"


UTILITIES = Registry("utility", GROUPS["scope utility"], entry=Utility,
                     builtins=("benchmeasure.scope.utility",))   # the built-ins are below
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_FUNCTIONS = {"log": math.log, "sqrt": math.sqrt, "exp": math.exp, "min": min, "max": max, "abs": abs}


class Complexity:
    """A parsed complexity expression over a space's numeric parameters."""

    def __init__(self, text: str, space):
        self.text = text
        numeric = {p.name for p in space.params if p.kind != "categorical"}
        try:
            self.tree = ast.parse(text, mode="eval")
        except SyntaxError:
            fail(f"--complexity {text!r}: not a valid expression")
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id not in numeric and node.id not in _FUNCTIONS:
                fail(f"--complexity {text!r}: {node.id!r} is not a numeric parameter of the space "
                     f"({', '.join(sorted(numeric)) or 'none'})")
            if not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.UAdd, ast.Constant,
                                     ast.Name, ast.Load, ast.Call, *_BINARY)):
                fail(f"--complexity {text!r}: {type(node).__name__} is not allowed (numbers, parameters, "
                     "+ - * / **, log sqrt exp min max abs)")
            if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
                fail(f"--complexity {text!r}: only numbers may appear as constants")
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS):
                fail(f"--complexity {text!r}: only log, sqrt, exp, min, max, abs may be called")

    def _eval(self, node, config):
        if isinstance(node, ast.Expression):
            return self._eval(node.body, config)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return config[node.id]
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, config)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](self._eval(node.left, config), self._eval(node.right, config))
        return _FUNCTIONS[node.func.id](*(self._eval(a, config) for a in node.args))

    def __call__(self, config: dict) -> float:
        try:
            value = float(self._eval(self.tree, config))
        except (ArithmeticError, ValueError, TypeError, OverflowError) as exc:
            fail(f"--complexity {self.text!r}: cannot be computed for {config} ({exc})")
        if not math.isfinite(value) or value <= 0:
            fail(f"--complexity {self.text!r} is {value} for {config}; it must be positive and finite")
        return value


def threshold_function(utility: str, threshold: float, space, complexity: str | None, interval=None):
    """config -> threshold on the error rate, for ``utility`` (InputError naming the choices for an unknown one)."""
    return UTILITIES.get(utility).threshold(threshold, space, complexity, interval)


@UTILITIES.add("error", summary="the error rate itself")
def error_threshold(threshold: float, space, complexity, interval):
    return lambda config: threshold


@UTILITIES.add("complexity", summary="error relative to a complexity expression (--complexity)")
def complexity_threshold(threshold: float, space, complexity, interval):
    if not complexity:
        fail("--utility complexity needs --complexity EXPR (e.g. 'terms*digits')")
    measure = Complexity(complexity, space)
    return lambda config: threshold * measure(config)


@UTILITIES.add("band", panel=True, summary="a difficulty band of a benchmark, for a panel of models")
def band_threshold(threshold: float, space, complexity, interval):
    if interval is None:
        fail("--utility band needs the panel's error interval (--band or --gap, --abilities, --difficulty)")
    return lambda config: interval


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def panel_error(abilities, b: float) -> float:
    """The panel's mean error rate at difficulty ``b`` under the 1PL: 1 − mean σ(θ − b)."""
    return 1.0 - sum(_sigmoid(theta - b) for theta in abilities) / len(abilities)


def band_thresholds(abilities, low: float, high: float, b_min: float, b_max: float) -> tuple[float, float]:
    """The error-rate interval of the panel equivalent to z ∈ [low, high] (see the module docstring)."""
    if not 0.0 <= low < high <= 1.0:
        fail(f"--band {low} {high}: needs 0 ≤ LO < HI ≤ 1 on the normalized scale")
    if not b_max > b_min:
        fail("--difficulty: the benchmark's difficulties span no range (max b = min b)")
    span = b_max - b_min
    return panel_error(abilities, b_min + low * span), panel_error(abilities, b_min + high * span)


def z_of_error(abilities, error: float, b_min: float, b_max: float) -> float:
    """The normalized difficulty whose panel error is ``error`` (bisection; ±inf outside (0, 1))."""
    lo, hi = b_min - 50.0, b_max + 50.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if panel_error(abilities, mid) < error else (lo, mid)
    return (0.5 * (lo + hi) - b_min) / (b_max - b_min)


def gap_band(b, sd, rank: int, n_trials: int | None = None) -> dict:
    """The ``rank``-th gap of difficulties ``b`` (posterior sds ``sd``, units of b) in the shared gap order.

    Returns ``{"rank", "low", "high"}`` (the band on the normalized scale) with ``separation`` (width over
    the sd of its edges' difference; None without sds), ``resolved`` and, given K, ``extra_trials_per_model``.
    Logs a warning when the chosen gap is not resolved: it may be estimation noise, not a gap.
    """
    from benchmeasure.core.metrics import largest_gaps
    from benchmeasure.core.resolution import SEPARATION, resolved_first, trials_to_resolve

    low_b, high_b = min(b), max(b)
    if not high_b > low_b:
        fail("--difficulty: the benchmark's difficulties span no range (max b = min b)")
    span = high_b - low_b
    z = [(v - low_b) / span for v in b]
    ordered = [(g, s) for g, s in resolved_first(largest_gaps(z), z, [v / span for v in sd]) if g.width > 0]
    if not 1 <= rank <= len(ordered):
        fail(f"--gap {rank}: the benchmark has {len(ordered)} gap(s) between items")
    gap, sep = ordered[rank - 1]
    resolved = sep is None or sep >= SEPARATION
    row = {"rank": rank, "paper_rank": gap.rank, "low": gap.left, "high": gap.right, "separation": sep,
           "resolved": resolved}
    if not resolved:
        lower = max(range(len(z)), key=lambda i: (z[i] <= gap.left, z[i]))
        upper = min(range(len(z)), key=lambda i: (z[i] < gap.right, z[i]))
        row["extra_trials_per_model"] = (trials_to_resolve(gap.width * span, sd[lower], sd[upper], n_trials)
                                         if n_trials else None)
        log.warning("--gap %d: the band [%.4f, %.4f] is not resolved (its edge items are %.1f posterior sds apart; "
                    "resolved: >= %g); it may be estimation noise, not a gap", rank, gap.left, gap.right, sep,
                    SEPARATION)
    return row
