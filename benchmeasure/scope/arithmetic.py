"""The built-in dynamic benchmark: arithmetic questions with a known difficulty law.

``arithmetic(config, seed) -> (question, answer, grader)`` writes ``terms`` operands of exactly ``digits`` digits
joined by the ``ops`` kind (``add``, ``sub``, ``mul``, ``mixed``), after ``distractors`` irrelevant
sentences. :data:`SPACE` is its space (10 × 10 × 4 × 25 = 10,000 configurations).

:func:`error_probability` is the simulated model's law: logit P(error) = −8.0 + 0.42·terms +
0.55·digits + op effect + 0.04·distractors + u_c, with u_c ~ N(0, 0.8²) fixed per configuration by a
hash of its key and the world's seed (so configurations differ beyond what the parameters explain).
:func:`config_of_question` recovers a configuration from its question text and :func:`solve` its
answer, so the simulated server (:mod:`benchmeasure.serving.sim.scope_world`) knows P(correct) of any question.
"""

from __future__ import annotations

import hashlib
import math
import random
import re

SPACE = {
    "terms": {"type": "int", "low": 2, "high": 11},
    "digits": {"type": "int", "low": 1, "high": 10},
    "ops": {"type": "categorical", "choices": ["add", "sub", "mul", "mixed"]},
    "distractors": {"type": "int", "low": 0, "high": 24},
}
SPACE_YAML = """\
# the built-in arithmetic template (benchmeasure.scope.arithmetic:arithmetic)
terms: {type: int, low: 2, high: 11}
digits: {type: int, low: 1, high: 10}
ops: {type: categorical, choices: [add, sub, mul, mixed]}
distractors: {type: int, low: 0, high: 24}
"""
VERBS = {"add": "Add up", "sub": "Subtract from left to right", "mul": "Multiply", "mixed": "Evaluate"}
SYMBOLS = {"add": "+", "sub": "-", "mul": "*"}
OP_EFFECT = {"add": 0.0, "sub": 0.4, "mul": 1.6, "mixed": 1.1}
INTERCEPT, TERMS, DIGITS, DISTRACTORS, EFFECT_SD = -8.0, 0.42, 0.55, 0.04, 0.8
DISTRACTOR = "Note (it does not matter here): a crate holds {} apples."


def _key(config: dict) -> str:
    return f"{config['terms']}/{config['digits']}/{config['ops']}/{config['distractors']}"


def exact_integer(reference: str):
    """A grader: the last integer of the reply (commas allowed) equals ``reference`` exactly. (A relative
    tolerance, as the general math grader allows, would pass a near miss on a 100-digit product.)"""

    def grader(response: str) -> bool:
        found = re.findall(r"-?\d[\d,]*", response)
        return bool(found) and found[-1].replace(",", "") == reference

    return grader


def arithmetic(config: dict, seed: int) -> tuple:
    rng = random.Random(f"arithmetic/{_key(config)}/{seed}")
    terms, digits, ops = int(config["terms"]), int(config["digits"]), config["ops"]
    numbers = [rng.randint(10 ** (digits - 1) if digits > 1 else 1, 10 ** digits - 1) for _ in range(terms)]
    symbols = [SYMBOLS[ops] if ops in SYMBOLS else rng.choice("+-*") for _ in range(terms - 1)]
    expression = str(numbers[0]) + "".join(f" {s} {n}" for s, n in zip(symbols, numbers[1:]))
    notes = " ".join(DISTRACTOR.format(rng.randint(2, 99)) for _ in range(int(config["distractors"])))
    question = (notes + "\n" if notes else "") + f"{VERBS[ops]}: {expression}. Give only the final number."
    answer = str(_evaluate(expression))
    return question, answer, exact_integer(answer)


def _evaluate(expression: str) -> int:
    """Value of ``a op b op …`` with +, -, * (the usual precedence)."""
    tokens = expression.split()
    total, product, sign = 0, int(tokens[0]), 1
    for op, number in zip(tokens[1::2], tokens[2::2]):
        if op == "*":
            product *= int(number)
        else:
            total += sign * product
            sign, product = (1 if op == "+" else -1), int(number)
    return total + sign * product


_QUESTION = re.compile(r"(Add up|Subtract from left to right|Multiply|Evaluate): ([0-9+\-* ]+)\. Give only")


def config_of_question(text: str) -> dict | None:
    """The configuration that wrote ``text`` (None when it is not an arithmetic question)."""
    match = _QUESTION.search(text)
    if not match:
        return None
    ops = {v: k for k, v in VERBS.items()}[match.group(1)]
    numbers = match.group(2).split()[::2]
    return {"terms": len(numbers), "digits": len(numbers[0]), "ops": ops,
            "distractors": text.count("it does not matter here")}


def solve(text: str) -> str | None:
    match = _QUESTION.search(text)
    return str(_evaluate(match.group(2))) if match else None


def effect(config: dict, world_seed: int) -> float:
    """The configuration's own logit effect u_c ~ N(0, EFFECT_SD²), fixed by a hash."""
    digest = hashlib.sha256(f"{world_seed}/{_key(config)}".encode()).digest()
    u1 = (int.from_bytes(digest[:8], "big") + 0.5) / 2 ** 64
    u2 = (int.from_bytes(digest[8:16], "big") + 0.5) / 2 ** 64
    return EFFECT_SD * math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


def error_logit(config: dict, world_seed: int = 0) -> float:
    """logit P(error) of the reference solver (ability 0): the configuration's 1PL difficulty b."""
    return (INTERCEPT + TERMS * config["terms"] + DIGITS * config["digits"] + OP_EFFECT[config["ops"]]
             + DISTRACTORS * config["distractors"] + effect(config, world_seed))


def error_probability(config: dict, world_seed: int = 0, ability: float = 0.0) -> float:
    """P(error) of a solver of ``ability`` θ: σ(b − θ) (the 1PL)."""
    return 1.0 / (1.0 + math.exp(-(error_logit(config, world_seed) - ability)))
