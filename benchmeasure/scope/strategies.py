"""Search strategies: where the next batch of pulls goes. A registry keyed by name (:data:`STRATEGIES`).

Each strategy is a :class:`Strategy` subclass registered where it is defined with
:meth:`STRATEGIES.add <benchmeasure.base.registry.Registry.add>`, naming the settings it reads (``options``: each
with the argparse type that checks it; ``scope --option KEY=VALUE`` sets them)::

    @STRATEGIES.add("uniform", options={"pulls_each": integer(10, 1_000_000)})
    class Uniform(Strategy): ...

Another package registers its own the same way, in a module named by an entry point of group
``benchmeasure.scope_strategies`` (imported when the registry is first read, after this one).

Every strategy proposes arms of a :class:`~benchmeasure.scope.arms.Pool` (adding new configurations
to it); certification is the pool's, the same for all (:mod:`benchmeasure.scope.bounds`), so a
strategy decides only where pulls go and cannot make a certificate invalid.

* ``uniform`` — a fixed set of configurations (all of a small finite space, else a seeded sample of
  budget / pulls_each of them), pulled round-robin: at least ``pulls_each`` (≥ 10) pulls each.
* ``quickscope`` — our implementation of the allocation published by Lundy, Raman & Leyton-Brown (2026,
  "QuickScope: Certifying Hard Questions in Dynamic LLM Benchmarks", arXiv 2604.17842), which adapts COUP
  (Graham & Leyton-Brown, arXiv 2405.18246); written from the paper's description and facts checked against
  the published code (none of whose code is used here; ``bench/bench_scope.py --only agree`` compares the two
  batch by batch). Per batch of B pulls:

  - *steering bounds*: each configuration's error rate gets KL bounds after every pull at level
    δ_i = δ/(26.71·n²·m²) (n configurations in the pool, m pulls of this one), with the KL divergence in
    bits against ln(1/δ_i), as the published code computes it (= our nats bound at δ_i^ln2);
  - *hinged utility* h(x) = min(x, τ) (a band's upper end also caps it: τ·min(x/τ, 1, (1−x)/(1−hi)));
  - *incumbent*: the uncertified configuration with the highest hinged **mean** (ties to the lowest
    index) gets ⌊B/2⌋ pulls;
  - *challengers*: the other ⌈B/2⌉ pulls go one at a time to the uncertified non-incumbent with the
    highest *simulated* hinged upper bound (ties to the fewest simulated pulls, then at random); every
    pull allocated in the batch is counted as returning the configuration's current lower bound (its
    simulated mean moves towards its lower bound and its upper bound is recomputed at the new count);
  - *pool growth*: before each challenger pull, a new random configuration joins when every
    configuration has a (real or simulated) pull and ε′² < e·γ, with γ = ln(π²n²/(3δ))/n, e = 2 and
    ε′ = the mean over 10 random halves of the pool (the ``pool_start`` first configurations always in)
    of the highest hinged upper bound at the current means minus the highest hinged lower bound;
  - the pool starts with ``pool_start`` = 5 random configurations; certified configurations leave the
    search. The surrogate model of the published code is off (its default); it is not implemented here.

  What certifies is the pool's certificate (the same for every strategy, :mod:`.bounds`), not the
  steering bounds. Settings: ``pool_start`` (5), ``exploration`` (e = 2), ``bootstrap`` (10), ``steering_delta``
  (the δ of the steering bounds and of γ; default the search's δ).
* ``lucb`` — the allocator this project called "quickscope" before issue 33 (it is *not* the published
  allocation): half of each batch to the uncertified arm with the highest hinged lower bound, the other
  half cycled through the challengers with the highest hinged upper bounds, one new random
  configuration when the best challenger's upper bound comes within ``gap`` (0.05) of the incumbent's
  lower bound; steering bounds at the certificate's level; pool start 20 (``pool_start``).
* ``shared`` — this project's: strength is shared across configurations by a model of the error's logit
  as a function of the configuration's parameters plus a per-configuration effect
  (:mod:`benchmeasure.scope.model`); a posterior draw (Thompson sampling) of every configuration's
  error rate decides the batch: the configurations whose drawn rate passes the threshold and that need
  the fewest further pulls to be certified at that rate get the pulls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from benchmeasure.base.options import OPEN_PROBABILITY, integer, number
from benchmeasure.base.registry import GROUPS, Registry
from benchmeasure.scope.arms import band_of
from benchmeasure.scope.bounds import kl_bernoulli, kl_bounds
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



def new_arm(space, pool, rng) -> int | None:
    """Add one configuration not yet in ``pool``, drawn from ``space`` (None after 1,000 draws already there)."""
    for _ in range(1000):
        config = space.sample(rng)
        if space.key(config) not in pool.index:
            return pool.add(config)
    return None

@dataclass(frozen=True)
class ScopeStrategy:
    """A registered strategy: ``make(pool, rng, budget, batch, settings) -> Strategy`` (the class), the settings it
    takes (``options``: name -> argparse type, or a tuple of names) and a one-line ``summary``."""

    name: str
    make: object
    options: object = ()
    summary: str = ""

    DECORATES: ClassVar[str] = "make"   # STRATEGIES.add(...) decorates the Strategy subclass


STRATEGIES = Registry("scope strategy", GROUPS["scope strategy"], entry=ScopeStrategy,
                      builtins=("benchmeasure.scope.strategies",))   # the built-ins are below


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


@STRATEGIES.add("uniform", options={"pulls_each": integer(10, 1_000_000)},
                summary="a fixed set of configurations, pulled round-robin")
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


PUBLISHED_FACTOR = 26.71  # δ_i = δ/(26.71·n²·m²): the published per-bound level
LN2 = math.log(2.0)


def _kl(p: float, q: float) -> float:
    q = min(max(q, 1e-300), 1 - 1e-16)
    return ((p * math.log(p / q) if p > 0 else 0.0)
            + ((1 - p) * math.log((1 - p) / (1 - q)) if p < 1 else 0.0))


def scalar_kl_bounds(mean: float, n: float, level: float, iterations: int = 60) -> tuple[float, float]:
    """:func:`~benchmeasure.scope.bounds.kl_bounds` for one arm in plain floats (the same bisection; faster for
    the per-pull simulation of :class:`QuickScope`): {q : n·kl(mean, q) ≤ level}."""
    if n <= 0:
        return 0.0, 1.0
    lo, hi = 0.0, mean
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if n * _kl(mean, mid) <= level else (mid, hi)
    lower = hi
    lo, hi = mean, 1.0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if n * _kl(mean, mid) <= level else (lo, mid)
    return lower, lo


def capped(p, tau, high):
    """The published hinge min(p, τ); for a band also τ·(1−p)/(1−high) above its upper end ``high`` (< 1)."""
    above = np.where(high < 1.0, tau * (1.0 - p) / np.maximum(1.0 - high, 1e-12), np.inf)
    return np.minimum(np.minimum(p, tau), above)


@STRATEGIES.add("quickscope", options={"pool_start": integer(1, 1_000_000), "exploration": number(0.0, open_low=True),
                                        "bootstrap": integer(1, 10_000), "steering_delta": OPEN_PROBABILITY},
                summary="our implementation of the allocation published by Lundy, Raman & Leyton-Brown (2026)")
class QuickScope(Strategy):
    """Our implementation of the QuickScope allocation of Lundy, Raman & Leyton-Brown (2026); see the module
    docstring for the rules (written from the paper and checked facts; no code of theirs is used)."""

    name = "quickscope"

    def __init__(self, *args):
        super().__init__(*args)
        surrogate = str(self.settings.get("surrogate", "none"))
        if surrogate != "none":
            raise ValueError(f"quickscope: surrogate {surrogate!r} is not implemented (only 'none', the published "
                             "default)")
        self.exploration = float(self.settings.get("exploration", 2.0))
        self.bootstrap = max(1, int(self.settings.get("bootstrap", 10)))
        # δ of the steering bounds and of γ: the search's δ unless set (the published code's CoupBO wrapper does not
        # hand its δ to COUP, which then steers and certifies at its default 0.01; the bench's agreement check sets it)
        self.delta = float(self.settings.get("steering_delta", self.pool.certifier.delta))
        for config in distinct_configs(self.space, self.rng, int(self.settings.get("pool_start", 5))):
            self.pool.add(config)
        self.n0 = len(self.pool)  # the starting configurations: always in ε′'s random halves
        self.exhausted = False  # no unseen configuration left to add

    def break_tie(self, tied: np.ndarray, position: int) -> int:
        """The challenger among ``tied`` (equal simulated upper bound and pulls) for the batch's ``position``-th
        pull: one at random (the bench replaces this to follow another implementation's choices)."""
        return int(tied[self.rng.integers(len(tied))])

    def steering_bounds(self, means, pulls, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) on error rates with mean ``means`` after ``pulls`` pulls in a pool of ``n``: the KL
        bound in bits at ln(1/δ_i), δ_i = δ/(26.71·n²·m²), i.e. our nats bound at level ln 2 · ln(1/δ_i)."""
        means = np.atleast_1d(np.asarray(means, dtype=float))
        pulls = np.atleast_1d(np.asarray(pulls, dtype=float))
        level = LN2 * np.log(PUBLISHED_FACTOR * n ** 2 * np.maximum(pulls, 1.0) ** 2 / self.delta)
        return kl_bounds(np.maximum(means, 0.0) * pulls, pulls, np.exp(-level))

    def gamma(self, n: int) -> float:
        """γ = ln(π²n²/(3δ))/n."""
        return math.log(math.pi ** 2 * n ** 2 / (3.0 * self.delta)) / n

    def _new_arm(self) -> int | None:
        return new_arm(self.space, self.pool, self.rng)

    def epsilon_prime(self, avg_upper: np.ndarray, h_lower: np.ndarray, open_: np.ndarray) -> float:
        """Mean over random halves (the first ``n0`` always in) of max hinged upper − max hinged lower."""
        if not open_.any():
            return 0.0
        best_lower = float(h_lower[open_].max())
        n = len(avg_upper)
        first = min(self.n0, n)
        rest = np.arange(first, n)
        values = []
        for _ in range(self.bootstrap):
            half = self.rng.choice(rest, size=(n - first) // 2, replace=False) if len(rest) else rest
            chosen = np.concatenate([np.arange(first), half]).astype(int)
            chosen = chosen[open_[chosen]]
            values.append(float(avg_upper[chosen].max()) - best_lower if len(chosen) else 0.0)
        return float(np.mean(values))

    def next_batch(self, size: int) -> list[int]:
        pool = self.pool
        tau, high = pool.threshold_array(), pool.high_array()
        if not (~pool.certified() & (tau <= high)).any():  # as published: add until one is uncertified
            if self._new_arm() is None:
                return []
            tau, high = pool.threshold_array(), pool.high_array()
        n = len(pool)
        pulls, errors = pool.pulls(), pool.errors()
        mean = np.where(pulls > 0, errors / np.maximum(pulls, 1.0), 0.0)  # an unpulled arm's mean counts as 0
        open_ = ~pool.certified() & (tau <= high)
        lower, upper = self.steering_bounds(mean, pulls, n)

        def optimistic(lo, up, t, hi):  # the highest hinged utility over [lo, up]
            return np.where(up < t, capped(up, t, hi), np.where(lo > hi, capped(lo, t, hi), t))

        h_lower = np.minimum(capped(lower, tau, high), capped(upper, tau, high))
        sim_upper = optimistic(lower, upper, tau, high)  # at the simulated means and counts
        avg_upper = sim_upper.copy()  # at the current means and the simulated counts (for ε′)
        sim_m, sim_mean = pulls.copy(), mean.copy()
        score = np.where(open_, capped(mean, tau, high), -np.inf)
        incumbent = int(np.flatnonzero(score == score.max())[0])  # highest hinged mean, lowest index

        def simulate(i: int) -> None:  # one allocated pull, counted as returning the arm's current lower bound
            sim_mean[i] = (sim_m[i] * sim_mean[i] + lower[i]) / (sim_m[i] + 1)
            sim_m[i] += 1
            level = LN2 * math.log(PUBLISHED_FACTOR * len(sim_m) ** 2 * sim_m[i] ** 2 / self.delta)
            sim_upper[i] = optimistic(*scalar_kl_bounds(max(sim_mean[i], 0.0), sim_m[i], level), tau[i], high[i])
            avg_upper[i] = optimistic(*scalar_kl_bounds(max(mean[i], 0.0), sim_m[i], level), tau[i], high[i])

        picked = []
        for _ in range(size // 2):
            picked.append(incumbent)
            simulate(incumbent)
        for _ in range(size - size // 2):
            if sim_m[tau <= high].min() > 0 and not self.exhausted:  # every configuration has a pull
                eps = self.epsilon_prime(avg_upper, h_lower, open_)
                if eps ** 2 < self.exploration * self.gamma(len(sim_m)):
                    arm = self._new_arm()
                    if arm is None:
                        self.exhausted = True
                    else:
                        t, hi = pool.thresholds[arm], pool.highs[arm]
                        tau, high = np.append(tau, t), np.append(high, hi)
                        open_ = np.append(open_, t <= hi)
                        mean, lower = np.append(mean, 0.0), np.append(lower, 0.0)
                        h_lower = np.append(h_lower, 0.0)
                        sim_m, sim_mean = np.append(sim_m, 0.0), np.append(sim_mean, 0.0)
                        sim_upper = np.append(sim_upper, float(optimistic(0.0, 1.0, t, hi)))
                        avg_upper = np.append(avg_upper, float(optimistic(0.0, 1.0, t, hi)))
            candidates = open_.copy()
            candidates[incumbent] = False
            if not candidates.any():
                break
            best = np.where(candidates, sim_upper, -np.inf)
            tied = np.flatnonzero(best == best.max())
            tied = tied[sim_m[tied] == sim_m[tied].min()]  # ties to the fewest (simulated) pulls, then at random
            arm = int(tied[0] if len(tied) == 1 else self.break_tie(tied, len(picked)))
            picked.append(arm)
            simulate(arm)
        return picked


@STRATEGIES.add("lucb", options={"pool_start": integer(1, 1_000_000), "gap": number(0.0, 1.0)},
                summary="this project's former allocator (hinged lower and upper bounds)")
class Lucb(Strategy):
    name = "lucb"

    def __init__(self, *args):
        super().__init__(*args)
        self.gap = float(self.settings.get("gap", 0.05))
        initial = int(self.settings.get("pool_start", self.settings.get("initial", 20)))
        for config in distinct_configs(self.space, self.rng, initial):
            self.pool.add(config)

    def _new_arm(self) -> int | None:
        return new_arm(self.space, self.pool, self.rng)

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


@STRATEGIES.add("shared", options={"prior_sd": number(0.0, open_low=True), "effect_sd": number(0.0, open_low=True),
                                    "chunk": integer(1, 1_000_000)},
                summary="this project's: strength shared across configurations by a logit model, Thompson sampling")
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


def make_strategy(name: str, pool, seed: int, budget: int, batch: int, settings: dict | None = None) -> Strategy:
    """The strategy ``name`` over ``pool`` (InputError naming the choices for an unknown name)."""
    rng = np.random.default_rng([seed, 7_771])
    return STRATEGIES.get(name).make(pool, rng, budget, batch, dict(settings or {}))
