"""The ground truth behind the simulation server: hidden item difficulties and simulated models.

Every simulated item carries its hidden parameters in its text, as a tag
``[[sim b=<true difficulty> a=<true answer>]]`` (``[[sim b=… a=… reversed]]`` for an item whose panel answers run
against ability); the loop never reads it (it treats the text like any question), only the simulated models do.
What the models do:

* a **panel model** with ability θ answers an item correctly with the 1PL probability
  σ(θ − b) (paper, Appendix C.3), writing ``\\boxed{a}``, and otherwise boxes a wrong number; on a *reversed*
  item with probability 1 − σ(θ − b), so strong models fail it and weak ones solve it (what a wrong key or a
  grader that fails the right answer does to an item: BenchFill's item-fit check must not keep it);
* the **rewriter**, asked to rewrite (its prompt has a ``Target difficulty:`` line), reads the
  parent (the last tagged item of the prompt) and the reference pairs (lines
  ``[difficulty z] … [[sim b=…]]``) and writes a child with true difficulty
  ``b_child = b_parent + step · (b_aim − b_parent) + N(0, noise²)``, where ``b_aim`` maps the
  target z* to the hidden scale by a least-squares line through the references; with fewer
  than two references it can only guess the scale (``naive_low``..``naive_high``). With
  probability ``wrong_answer`` the child's stated answer is wrong (its validity must fail), and with probability
  ``against_ability`` the child is reversed (its stated answer is right, so it passes the validity check);
* the rewriter asked anything else solves the item cold with ability ``solver_theta`` — the
  independent solve of the validity policy.

These rules are a modeling choice: they make the reference list useful, as the paper argues it
is, so the simulation tests that the loop exploits such a signal, not that real rewriters give
it. All randomness is seeded per request (seed, request body, the loop's request key when sent,
repetition count; see :mod:`benchmeasure.serving.sim.server`).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from dataclasses import asdict, dataclass, field

TAG = re.compile(r"\[\[sim b=(-?[0-9.]+) a=(-?[0-9]+)( reversed)?\]\]")
REFERENCE = re.compile(r"\[difficulty (-?[0-9.]+)\][^\n]*?\[\[sim b=(-?[0-9.]+) a=(-?[0-9]+)(?: reversed)?\]\]")
TARGET = re.compile(r"Target difficulty:\s*(-?[0-9.]+)")


@dataclass
class World:
    """Settings of the simulated models (saved as ``world.json`` beside the synthetic benchmark)."""

    abilities: dict
    rewriter: str = "sim-rewriter"
    seed: int = 0
    solver_theta: float = 6.0
    step: float = 0.85
    noise: float = 0.2
    naive_low: float = -4.0
    naive_high: float = 4.0
    wrong_answer: float = 0.08
    extra: dict = field(default_factory=dict)
    against_ability: float = 0.0

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(asdict(self), handle, indent=2, sort_keys=True)

    @classmethod
    def load(cls, path) -> World:
        with open(path, encoding="utf-8") as handle:
            return cls(**json.load(handle))


def tag(b: float, answer: int, reversed_: bool = False) -> str:
    return f"[[sim b={b:.4f} a={answer}{' reversed' if reversed_ else ''}]]"


def item_text(b: float, answer: int, salt: str, reversed_: bool = False) -> str:
    """A synthetic question whose hidden difficulty is ``b`` (``reversed_``: its panel answers run against ability)."""
    code = hashlib.sha256(f"{salt}/{b:.4f}/{answer}".encode()).hexdigest()[:8]
    return f"Simulated problem {code}: find the integer this problem defines. {tag(b, answer, reversed_)}"


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _boxed(rng: random.Random, answer: int, correct: bool) -> str:
    value = answer if correct else answer + rng.choice([-3, -2, -1, 1, 2, 3, 7, 11])
    return f"Working through the problem step by step. The answer is \\boxed{{{value}}}."


def solve(rng: random.Random, prompt: str, theta: float, n: int, panel: bool = False) -> list:
    """``n`` answers of a model with ability ``theta`` to the (last) tagged item in ``prompt``; a ``panel`` model
    answers a reversed item against its ability."""
    tags = TAG.findall(prompt)
    if not tags:
        return ["I cannot find a problem to solve."] * n
    b, answer = float(tags[-1][0]), int(tags[-1][1])
    p = 1.0 - _sigmoid(theta - b) if panel and tags[-1][2] else _sigmoid(theta - b)
    return [_boxed(rng, answer, rng.random() < p) for _ in range(n)]


def rewrite(rng: random.Random, prompt: str, world: World) -> str:
    """One rewriter reply (a JSON object) for a rewrite prompt."""
    z_star = float(TARGET.search(prompt).group(1))
    tags = TAG.findall(prompt)
    if not tags:
        return "There is no item to rewrite."
    b_parent = float(tags[-1][0])
    refs = [(float(z), float(b)) for z, b, _ in REFERENCE.findall(prompt)]
    # (a reversed parent is rewritten like any other; whether the child is reversed is drawn below)
    if len(refs) >= 2 and len({z for z, _ in refs}) >= 2:
        mz = sum(z for z, _ in refs) / len(refs)
        mb = sum(b for _, b in refs) / len(refs)
        slope = sum((z - mz) * (b - mb) for z, b in refs) / sum((z - mz) ** 2 for z, _ in refs)
        b_aim = mb + slope * (z_star - mz)
    else:
        b_aim = world.naive_low + z_star * (world.naive_high - world.naive_low)
    b_child = b_parent + world.step * (b_aim - b_parent) + rng.gauss(0.0, world.noise)
    answer = rng.randrange(1000)
    stated = answer + 1 if rng.random() < world.wrong_answer else answer
    reversed_ = world.against_ability > 0 and rng.random() < world.against_ability   # no draw when off: same replies
    question = item_text(b_child, answer, salt=str(rng.random()), reversed_=reversed_)
    return json.dumps({"question": question, "answer": str(stated)})


def respond(world: World, model: str, prompt: str, n: int, rng: random.Random) -> list:
    """The ``n`` reply texts of ``model`` to ``prompt``; KeyError for an unknown model."""
    if model == world.rewriter:
        if TARGET.search(prompt):
            return [rewrite(rng, prompt, world) for _ in range(n)]
        return solve(rng, prompt, world.solver_theta, n)
    return solve(rng, prompt, float(world.abilities[model]), n, panel=True)
