"""Binary-KL confidence bounds on an error rate, and the certifier that makes them hold for a whole search.

For n independent Bernoulli(p) outcomes with mean p̂, Chernoff's bound P(p̂ ≥ x) ≤ exp(−n·kl(x, p))
(x ≥ p, and symmetrically below) gives the bounds

    lower = min{q ≤ p̂ : n·kl(p̂, q) ≤ L},   upper = max{q ≥ p̂ : n·kl(p̂, q) ≤ L},   L = log(1/δ'),

each failing with probability at most δ' (the KL-UCB bounds of Garivier & Cappé, 2011; QuickScope —
Lundy, Raman & Leyton-Brown, 2026 — uses them with its own union-bound δ, see :mod:`.strategies`).

**Certification valid for the whole search.** A configuration is certified when its lower bound passes
its threshold. Bounds are checked only at the checkpoints n ∈ {n₀, ⌈n₀·r⌉, ⌈n₀·r²⌉, …} ≤ budget (J of
them) and for at most K = min(|space|, budget) configurations — the k-th configuration to get its first
pull is chosen before any of its own outcomes is seen, so its outcomes are an i.i.d. stream whichever
strategy chose it. With δ' = δ/(K·J) a union bound gives: with probability ≥ 1 − δ every bound checked in
the search holds, so the chance that *any* certified configuration is truly below its threshold is ≤ δ,
for every strategy (the strategy only decides where pulls go). A configuration keeps the tightest
lower and upper bound over its checkpoints (all hold together).
"""

from __future__ import annotations

import math

import numpy as np

CHECKPOINT_START = 10
CHECKPOINT_RATIO = 1.15


def kl_bernoulli(p, q) -> np.ndarray:
    """kl(p, q) = p·log(p/q) + (1−p)·log((1−p)/(1−q)), elementwise, with 0·log 0 = 0."""
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    q = np.clip(np.asarray(q, dtype=float), 1e-300, 1 - 1e-16)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1.0) / (1 - q)), 0.0)
    return a + b


def _invert(mean: np.ndarray, n: np.ndarray, level: np.ndarray, upper: bool, iterations: int = 60) -> np.ndarray:
    """The q on the ``upper`` (or lower) side of ``mean`` where n·kl(mean, q) = level, by bisection."""
    lo = mean.copy() if upper else np.zeros_like(mean)
    hi = np.ones_like(mean) if upper else mean.copy()
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        inside = n * kl_bernoulli(mean, mid) <= level
        if upper:
            lo, hi = np.where(inside, mid, lo), np.where(inside, hi, mid)
        else:
            lo, hi = np.where(inside, lo, mid), np.where(inside, mid, hi)
    return lo if upper else hi  # the conservative end of the final bracket


def kl_bounds(errors, pulls, delta) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds on each error rate at level ``delta`` (per bound); [0, 1] where pulls = 0."""
    k = np.atleast_1d(np.asarray(errors, dtype=float))
    n = np.atleast_1d(np.asarray(pulls, dtype=float))
    level = np.broadcast_to(np.log(1.0 / np.asarray(delta, dtype=float)), k.shape)
    mean = np.where(n > 0, k / np.maximum(n, 1), 0.5)
    lower = np.where(n > 0, _invert(mean, n, level, upper=False), 0.0)
    upper = np.where(n > 0, _invert(mean, n, level, upper=True), 1.0)
    return lower, upper


def checkpoints(budget: int, start: int = CHECKPOINT_START, ratio: float = CHECKPOINT_RATIO) -> list[int]:
    """The pull counts at which bounds are checked: ⌈start·ratio^j⌉ (distinct) up to ``budget``."""
    points, value = [], float(start)
    while math.ceil(value) <= max(budget, start):
        if not points or math.ceil(value) > points[-1]:
            points.append(math.ceil(value))
        value *= ratio
    return points


class Certifier:
    """Bounds at the checkpoints with δ' = δ/(K·J); see the module docstring.

    Parameters
    ----------
    delta : float
        Family-wise error: the chance that any certified configuration is truly below its threshold.
    budget : int
        Total pulls of the search.
    space_size : int or None
        Configurations in the space (None when infinite).
    unit : int
        Pulls per round (a panel of M models answers each instance: M); checkpoints are whole rounds,
        where the mean is the average of the panel's M rates (the KL bound holds for an average of
        independent Bernoulli outcomes with unequal rates, Hoeffding 1963).
    """

    def __init__(self, delta: float, budget: int, space_size: int | None, unit: int = 1):
        self.delta = delta
        self.points = [unit * n for n in checkpoints(max(1, budget // unit))]  # whole rounds of a panel
        self.point_set = set(self.points)
        rounds = max(1, budget // unit)
        self.arms = min(space_size, rounds) if space_size is not None else rounds
        self.delta_each = delta / (self.arms * len(self.points))

        self._cache: dict = {}

    def bounds(self, errors: int, pulls: int) -> tuple[float, float]:
        key = (int(errors), int(pulls))
        if key not in self._cache:
            lower, upper = kl_bounds(errors, pulls, self.delta_each)
            self._cache[key] = (float(lower[0]), float(upper[0]))
        return self._cache[key]

    def describe(self) -> dict:
        return {"delta": self.delta, "configurations_in_union": self.arms, "checkpoints": len(self.points),
                "first_checkpoints": self.points[:6], "delta_per_bound": self.delta_each}
