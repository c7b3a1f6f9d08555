"""Search strategies: where the next batch of pulls goes. A registry keyed by name (:data:`STRATEGIES`).

Every strategy proposes arms of a :class:`~benchmeasure.scope.arms.Pool` (adding new configurations
to it); certification is the pool's, the same for all (:mod:`benchmeasure.scope.bounds`), so a
strategy decides only where pulls go and cannot make a certificate invalid.

* ``uniform`` — a fixed set of configurations (all of a small finite space, else a seeded sample of
  budget / pulls_each of them), pulled round-robin: at least ``pulls_each`` (≥ 10) pulls each.
* ``quickscope`` — the published QuickScope / COUP allocation (Sun et al., 2025; facts only): KL
  bounds, each batch gives half its pulls to the incumbent (the uncertified arm with the highest hinged
  lower bound) and half to the challengers with the highest hinged upper bounds, and a new random
  configuration joins the pool when the best challenger's upper bound is within ``gap`` of the
  incumbent's lower bound. The utility is hinged at the threshold: a certified arm gains nothing more.
* ``shared`` — this project's: strength is shared across configurations by a model of the error's logit
  as a function of the configuration's parameters plus a per-configuration effect
  (:mod:`benchmeasure.scope.model`); a posterior draw (Thompson sampling) of every configuration's
  error rate decides the batch: the configurations whose drawn rate passes the threshold and that need
  the fewest further pulls to be certified at that rate get the pulls.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.scope.arms import band_of
from benchmeasure.scope.bounds import kl_bernoulli
from benchmeasure.scope.model import LogitModel

ENUMERATE_LIMIT = 50_000  # finite spaces up to this size are scored whole by the shared strategy
FRESH_CANDIDATES = 2_000  # otherwise this many fresh random configurations per batch


def distinct_configs(space, rng: np.random.Generator, count: int) -> list[dict]:
    """``count`` distinct random configurations (all of them, shuffled, when the space is that small)."""
    if space.size is not None and space.size <= max(count, 0):
        order = rng.permutation(space.size)
        return [space.configuration(int(i)) for i in order]
    if space.size is not None and space.size <= 10 * ENUMERATE_LIMIT:
        return [space.configuration(int(i)) for i in rng.choice(space.size, size=count, replace=False)]
    seen, configs = set(), []
    for _ in range(50 * count):
        config = space.sample(rng)
        key = space.key(config)
        if key not in seen:
            seen.add(key)
            configs.append(config)
            if len(configs) == count:
                break
    return configs


def hinge(p, tau, high):
    """The hinged utility of error rate ``p``: min(p/τ, 1, (1−p)/(1−high)) (high = 1: min(p/τ, 1))."""
    above = np.where(high < 1.0, (1.0 - p) / np.maximum(1.0 - high, 1e-12), np.inf)
    return np.minimum(np.minimum(p / tau, 1.0), above)


class Strategy:
    """Base: ``next_batch(size)`` returns arm indices of the pool (repeats allowed), at most ``size`` of them."""

    name = ""

    def __init__(self, pool, rng: np.random.Generator, budget: int, batch: int, settings: dict):
        self.pool = pool
        self.space = pool.space
        self.rng = rng
        self.budget = budget
        self.batch = batch
        self.settings = settings

    def next_batch(self, size: int) -> list[int]:
        raise NotImplementedError


class Uniform(Strategy):
    name = "uniform"

    def __init__(self, *args):
        super().__init__(*args)
        each = max(10, int(self.settings.get("pulls_each", 10)))
        count = max(1, self.budget // each)
        self.arms = [self.pool.add(c) for c in distinct_configs(self.space, self.rng, count)]
        self.position = 0

    def next_batch(self, size: int) -> list[int]:
        picked = [self.arms[(self.position + i) % len(self.arms)] for i in range(size)]
        self.position += size
        return picked


class QuickScope(Strategy):
    name = "quickscope"

    def __init__(self, *args):
        super().__init__(*args)
        self.gap = float(self.settings.get("gap", 0.05))
        initial = int(self.settings.get("initial", 20))
        for config in distinct_configs(self.space, self.rng, initial):
            self.pool.add(config)

    def _new_arm(self) -> int | None:
        for _ in range(1000):
            config = self.space.sample(self.rng)
            if self.space.key(config) not in self.pool.index:
                return self.pool.add(config)
        return None

    def next_batch(self, size: int) -> list[int]:
        lower, upper = self.pool.current_bounds()
        tau, high = self.pool.threshold_array(), self.pool.high_array()
        open_ = ~self.pool.certified() & (tau <= high)
        if not open_.any():
            arm = self._new_arm()
            return [arm] * size if arm is not None else []
        # hinged utility h(p) = min(p/τ, 1, (1−p)/(1−high)): 1 inside [τ, high]; unimodal, so over [lower, upper]
        # its pessimistic value is at an end and its optimistic value at the point nearest the band
        hinged_lower = np.minimum(hinge(lower, tau, high), hinge(upper, tau, high))
        hinged_upper = np.where(upper < tau, hinge(upper, tau, high),
                                np.where(lower > high, hinge(lower, tau, high), 1.0))
        tie = self.rng.random(len(tau))
        incumbent = max(np.flatnonzero(open_), key=lambda i: (hinged_lower[i], tie[i]))
        rivals = [i for i in np.flatnonzero(open_) if i != incumbent]
        rivals.sort(key=lambda i: (-hinged_upper[i], -tie[i]))
        best_rival = hinged_upper[rivals[0]] if rivals else 0.0
        if best_rival - hinged_lower[incumbent] < self.gap or not rivals:
            arm = self._new_arm()
            if arm is not None:
                rivals.insert(0, arm)
        half = size // 2
        picked = [int(incumbent)] * (size - half if not rivals else half)
        wanted = size - len(picked)
        picked += [int(rivals[i % len(rivals)]) for i in range(wanted)] if rivals else []
        return picked


class Shared(Strategy):
    name = "shared"

    def __init__(self, *args):
        super().__init__(*args)
        self.model = LogitModel(prior_sd=float(self.settings.get("prior_sd", 2.0)),
                                effect_sd=float(self.settings.get("effect_sd", 1.0)))
        self.chunk = max(1, int(self.settings.get("chunk", self.batch)))
        self.level = np.log(1.0 / self.pool.certifier.delta_each)
        self.enumerated = self.space.size is not None and self.space.size <= ENUMERATE_LIMIT
        if self.enumerated:
            self.all_configs = [self.space.configuration(i) for i in range(self.space.size)]
            self.all_features = self.space.feature_matrix(self.all_configs)
            self.position = {self.space.key(c): i for i, c in enumerate(self.all_configs)}
            self.in_pool = np.zeros(self.space.size, dtype=bool)
        self.arm_features: list[list[float]] = []

    def _features_of_pool(self) -> np.ndarray:
        while len(self.arm_features) < len(self.pool):
            self.arm_features.append(self.space.features(self.pool.configs[len(self.arm_features)]))
        return np.array(self.arm_features, dtype=float).reshape(len(self.pool), self.space.n_features)

    def _fresh(self) -> tuple[list[dict], np.ndarray]:
        """Candidate configurations not yet in the pool, with their features."""
        if self.enumerated:
            for key in list(self.pool.index)[int(self.in_pool.sum()):]:
                self.in_pool[self.position[key]] = True
            keep = np.flatnonzero(~self.in_pool)
            return [self.all_configs[i] for i in keep], self.all_features[keep]
        configs = [c for c in (self.space.sample(self.rng) for _ in range(FRESH_CANDIDATES))
                   if self.space.key(c) not in self.pool.index]
        return configs, self.space.feature_matrix(configs)

    def next_batch(self, size: int) -> list[int]:
        pulls, errors = self.pool.pulls(), self.pool.errors()
        x_pool = self._features_of_pool()
        fresh, x_fresh = self._fresh()
        self.model.fit(x_pool, errors, pulls, self.space.n_features)
        self.model.new_draw(self.rng)
        draw_pool = self.model.draw_rates(x_pool, errors, pulls, self.rng)
        draw_fresh = self.model.draw_rates(x_fresh, np.zeros(len(fresh)), np.zeros(len(fresh)), self.rng)
        rates = np.concatenate([draw_pool, draw_fresh])
        fresh_bands = np.array([band_of(self.pool.threshold_of(c)) for c in fresh]).reshape(len(fresh), 2)
        tau = np.concatenate([self.pool.threshold_array(), fresh_bands[:, 0]])
        high = np.concatenate([self.pool.high_array(), fresh_bands[:, 1]])
        done = np.concatenate([self.pool.certified(), np.zeros(len(fresh), dtype=bool)])
        have = np.concatenate([pulls, np.zeros(len(fresh))])
        hard = (rates > tau) & (rates < high) & ~done & (tau <= high)
        if hard.any():
            gap = kl_bernoulli(rates, np.minimum(tau, 1.0))
            gap = np.where(high < 1.0, np.minimum(gap, kl_bernoulli(rates, high)), gap)
            need = self.level / np.maximum(gap, 1e-12)
            remaining = np.maximum(need - have, 1.0)
            order = np.flatnonzero(hard)[np.argsort(remaining[hard], kind="stable")]
            shares = [max(1, min(self.chunk, int(np.ceil(remaining[i])))) for i in order]
        else:
            open_ = np.flatnonzero(~done & (tau <= high))
            distance = np.maximum(tau - rates, rates - high)[open_]  # how far the draw is from qualifying
            order = open_[np.argsort(distance, kind="stable")]
            shares = [1] * len(order)
        picked: list[int] = []
        for candidate, share in zip(order, shares):
            arm = (int(candidate) if candidate < len(self.pool)
                   else self.pool.add(fresh[int(candidate) - len(pulls)]))
            picked += [arm] * min(share, size - len(picked))
            if len(picked) >= size:
                break
        return picked


STRATEGIES = {cls.name: cls for cls in (Uniform, QuickScope, Shared)}


def make_strategy(name: str, pool, seed: int, budget: int, batch: int, settings: dict | None = None) -> Strategy:
    """The strategy ``name`` over ``pool`` (KeyError for an unknown name; the command checks names first)."""
    rng = np.random.default_rng([seed, 7_771])
    return STRATEGIES[name](pool, rng, budget, batch, dict(settings or {}))
