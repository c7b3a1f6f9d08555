"""Utilities: what makes a configuration worth certifying, as a threshold on its error rate.

* ``error`` — the error rate itself: certified when its lower bound is ≥ τ.
* ``complexity`` — error relative to a complexity expression c(config) of the parameters
  (``--complexity "terms*digits"``): utility = error / c, certified when its lower bound is ≥ τ, i.e. when
  the error's lower bound is ≥ τ·c (c is known, so the error bound carries over exactly). A
  configuration whose τ·c exceeds 1 can never qualify and gets no pulls.

The expression may use the parameter names, numbers, + − * / ** and ( ), and log, sqrt, exp, min, max,
abs; it must give a positive finite number for every configuration.
"""

from __future__ import annotations

import ast
import math
import operator

from benchmeasure.errors import fail

UTILITIES = ("error", "complexity")
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


def threshold_function(utility: str, threshold: float, space, complexity: str | None):
    """config -> threshold on the error rate, for ``utility``."""
    if utility == "error":
        return lambda config: threshold
    if utility == "complexity":
        if not complexity:
            fail("--utility complexity needs --complexity EXPR (e.g. 'terms*digits')")
        measure = Complexity(complexity, space)
        return lambda config: threshold * measure(config)
    fail(f"unknown utility {utility!r} (choose from {', '.join(UTILITIES)})")
