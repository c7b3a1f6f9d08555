"""The ``quickscope`` strategy (our implementation of the allocation published by Lundy, Raman &
Leyton-Brown, 2026) followed pull by pull against allocations computed by hand.

The steering bounds are recomputed here independently (scipy's root finder on the binary KL divergence in
bits, at ln(1/δ_i) with δ_i = δ/(26.71·n²·m²)); the expected batches are written out literally, with the
reasoning that gives them.
"""

from __future__ import annotations

import math

import pytest
from scipy.optimize import brentq

from benchmeasure.base.errors import InputError
from benchmeasure.scope.arms import Pool
from benchmeasure.scope.bounds import Certifier
from benchmeasure.scope.space import space_from_dict
from benchmeasure.scope.strategies import STRATEGIES, make_strategy

DELTA = 0.05


def kl_bits(p: float, q: float) -> float:
    a = p * math.log(p / q) if p > 0 else 0.0
    b = (1 - p) * math.log((1 - p) / (1 - q)) if p < 1 else 0.0
    return (a + b) / math.log(2)


def published_bounds(mean: float, m: int, n: int, delta: float = DELTA) -> tuple[float, float]:
    """The published steering bounds: {q : kl_bits(mean, q) ≤ ln(26.71·n²·m²/δ)/m}."""
    level = math.log(26.71 * n * n * m * m / delta) / m
    def f(q):
        return kl_bits(mean, q) - level
    upper = 1.0 if mean >= 1 or f(1 - 1e-12) <= 0 else brentq(f, mean, 1 - 1e-12, xtol=1e-12)
    lower = 0.0 if mean <= 0 or f(1e-12) <= 0 else brentq(f, 1e-12, mean, xtol=1e-12)
    return lower, upper


def strategy_with(outcomes: list[tuple[int, int]], tau: float, **settings):
    """A quickscope strategy whose pool holds exactly ``len(outcomes)`` arms with (pulls, errors) each."""
    space = space_from_dict({"x": {"type": "int", "low": 0, "high": 99}}, "t")
    pool = Pool(space, Certifier(DELTA, 1_000, space.size), lambda c: tau)
    strategy = make_strategy("quickscope", pool, 0, 1_000, 8, {"pool_start": len(outcomes), **settings})
    for arm, (pulls, errors) in enumerate(outcomes):
        for i in range(pulls):  # errors spread evenly: after j pulls, ⌊j·errors/pulls⌋ of them
            pool.record(arm, (i + 1) * errors // pulls > i * errors // pulls)
    assert len(pool) == len(outcomes) and not pool.certified().any()
    return strategy, pool


def test_registry_names_the_published_allocation_and_keeps_the_old_one_apart():
    assert {"quickscope", "lucb", "shared", "uniform"} <= set(STRATEGIES)
    space = space_from_dict({"x": {"type": "int", "low": 0, "high": 99}}, "t")
    pool = Pool(space, Certifier(DELTA, 1_000, space.size), lambda c: 0.9)
    make_strategy("quickscope", pool, 0, 1_000, 16)
    assert len(pool) == 5  # the published pool start
    with pytest.raises(ValueError, match="surrogate"):
        make_strategy("quickscope", Pool(space, Certifier(DELTA, 1_000, 100), lambda c: 0.9), 0, 1_000, 16,
                      {"surrogate": "rf"})


def test_steering_bounds_are_the_published_ones():
    strategy, _ = strategy_with([(100, 90), (100, 85), (10, 6)], 0.95)
    for mean, m in [(0.9, 100), (0.85, 100), (0.6, 10), (0.0, 3), (1.0, 7)]:
        lower, upper = strategy.steering_bounds([mean], [m], 3)
        expected = published_bounds(mean, m, 3)
        assert lower[0] == pytest.approx(expected[0], abs=1e-9) and upper[0] == pytest.approx(expected[1], abs=1e-9)
    assert strategy.gamma(3) == pytest.approx(math.log(math.pi ** 2 * 9 / (3 * DELTA)) / 3)
    # steering_delta: the δ of the steering bounds and of γ (the published wrapper runs COUP at δ = 0.01)
    strategy, _ = strategy_with([(10, 5)], 0.9, steering_delta=0.01)
    assert strategy.steering_bounds([0.5], [10], 1)[0][0] == pytest.approx(published_bounds(0.5, 10, 1, 0.01)[0],
                                                                           abs=1e-9)
    assert strategy.gamma(3) == pytest.approx(math.log(math.pi ** 2 * 9 / (3 * 0.01)) / 3)


def test_incumbent_is_the_highest_hinged_mean_with_ties_to_the_lowest_index():
    # τ = 0.95: arm 0 (4 of 4 errors) and arm 1 (38 of 40) both have hinged mean min(mean, τ) = 0.95; arm 1's
    # lower bound is far higher, yet the published rule takes the lowest index: arm 0
    strategy, _ = strategy_with([(4, 4), (40, 38)], 0.95, exploration=0.0)
    lower0, lower1 = published_bounds(1.0, 4, 2)[0], published_bounds(0.95, 40, 2)[0]
    assert lower1 > lower0 + 0.3
    batch = strategy.next_batch(4)
    assert batch[:2] == [0, 0] and batch[2:] == [1, 1]
    # arm 1 (hinged mean 0.95) beats arm 0 (hinged mean 0.9) when arm 0 has the lower mean
    strategy, _ = strategy_with([(10, 9), (40, 38)], 0.95, exploration=0.0)
    assert strategy.next_batch(4)[:2] == [1, 1]


def test_challengers_follow_the_simulated_upper_bound_pull_by_pull():
    # τ = 0.95, batch 8, pool growth off (e = 0). Arms: 0 = 90/100 (hinged mean 0.90: the incumbent, 4 pulls),
    # 1 = 85/100 (0.85), 2 = 6/10 (0.60). Upper bounds (n = 3): arm 1 0.9684, arm 2 0.9802, both hinged to 0.95.
    strategy, _ = strategy_with([(100, 90), (100, 85), (10, 6)], 0.95, exploration=0.0)
    assert published_bounds(0.85, 100, 3)[1] == pytest.approx(0.96836, abs=1e-4)
    lower2 = published_bounds(0.6, 10, 3)[0]
    assert lower2 == pytest.approx(0.07573, abs=1e-4)
    # challenger pull 1: tie at 0.95, fewest pulls → arm 2; counted as returning 0.0757: mean (6 + 0.0757)/11
    mean_1 = (6 + lower2) / 11
    assert published_bounds(mean_1, 11, 3)[1] == pytest.approx(0.96530, abs=1e-4)  # still hinged to 0.95
    # challenger pull 2: tie again, arm 2 has 11 < 100 pulls → arm 2; its mean (11·mean_1 + 0.0757)/12
    mean_2 = (11 * mean_1 + lower2) / 12
    assert published_bounds(mean_2, 12, 3)[1] == pytest.approx(0.94815, abs=1e-4)  # now below τ
    # challenger pulls 3 and 4: arm 1 (0.95) beats arm 2 (0.948); arm 1's own simulated bound stays above τ
    assert published_bounds((85 + published_bounds(0.85, 100, 3)[0]) / 101, 101, 3)[1] > 0.95
    assert strategy.next_batch(8) == [0, 0, 0, 0, 2, 2, 1, 1]


def test_pool_grows_only_when_every_configuration_has_a_pull():
    # pool start 3, nothing pulled: every hinged mean is 0 → incumbent arm 0 (3 pulls of 6). Challenger pull 1:
    # arms 1 and 2 have no pull → no growth; both hinged upper bounds are τ, fewest pulls → one of them at
    # random; pull 2: the other (0 pulls). Pull 3: every arm has a simulated pull; ε′ = τ − 0 = 0.9 and
    # ε′² = 0.81 < 2γ = 2·ln(π²·9/(3δ))/3 = 4.26 → a fourth configuration joins and takes the pull (0 pulls).
    space = space_from_dict({"x": {"type": "int", "low": 0, "high": 9}}, "t")
    pool = Pool(space, Certifier(DELTA, 1_000, space.size), lambda c: 0.9)
    strategy = make_strategy("quickscope", pool, 0, 1_000, 6, {"pool_start": 3})
    assert 0.81 < 2 * strategy.gamma(3)
    batch = strategy.next_batch(6)
    assert batch[:3] == [0, 0, 0] and sorted(batch[3:5]) == [1, 2] and batch[5] == 3 and len(pool) == 4
    # with growth off (e = 0) the same batch cycles the three arms it has
    pool = Pool(space, Certifier(DELTA, 1_000, space.size), lambda c: 0.9)
    strategy = make_strategy("quickscope", pool, 0, 1_000, 6, {"pool_start": 3, "exploration": 0.0})
    batch = strategy.next_batch(6)
    assert batch[:3] == [0, 0, 0] and sorted(batch[3:5]) == [1, 2] and batch[5] in (1, 2) and len(pool) == 3


def test_growth_waits_while_the_bounds_are_wide_and_starts_when_the_best_is_nearly_resolved():
    # 40 starting arms (so ε′'s random halves are the whole pool: no randomness), τ = 0.9, δ = 0.05:
    # 2γ = 2·ln(π²·40²/(3δ))/40 = 0.5782, so the pool grows when ε′ < 0.760
    assert 2 * make_strategy("quickscope", Pool(space_from_dict({"x": {"type": "int", "low": 0, "high": 99}}, "t"),
                                                 Certifier(DELTA, 1_000, 100), lambda c: 0.9), 0, 1_000, 2,
                             {"pool_start": 1}).gamma(40) == pytest.approx(0.5782, abs=1e-4)
    # every arm 5 of 10: bounds (n = 40, m = 10) [0.0203, 0.9797] → ε′ = 0.9 − 0.0203 = 0.880 ≥ 0.760: no growth
    lower, upper = published_bounds(0.5, 10, 40)
    assert lower == pytest.approx(0.0203, abs=1e-3) and upper > 0.9
    strategy, pool = strategy_with([(10, 5)] * 40, 0.9)
    batch = strategy.next_batch(2)  # incumbent arm 0 (lowest index); challenger: a tie among 1..39, at random
    assert batch[0] == 0 and 1 <= batch[1] <= 39 and len(pool) == 40
    # arm 0 at 180 of 200 (bounds [0.7359, 0.9799]), the rest at 100 of 200 ([0.3033, 0.6967]):
    # ε′ = 0.9 − 0.7359 = 0.164 < 0.760 → a 41st configuration joins and takes the challenger pull
    assert published_bounds(0.9, 200, 40)[0] == pytest.approx(0.7359, abs=1e-3)
    strategy, pool = strategy_with([(200, 180)] + [(200, 100)] * 39, 0.9)
    assert strategy.next_batch(2) == [0, 40] and len(pool) == 41


def test_command_line_names_the_strategies_and_checks_the_pool_start(capsys):
    from benchmeasure.commands.scope import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert stop.value.code == 0 and "Lundy, Raman & Leyton-Brown, 2026" in text and "--pool-start" in text
    assert "Sun et al" not in text
    with pytest.raises(InputError, match="--pool-start: 0 is outside"):  # the command prints it as one error: line
        parse_args(["--space", "s.yaml", "--generator", "x:y", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                    "--budget", "10", "--output-dir", "o", "--strategy", "quickscope", "--pool-start", "0"])
    args = parse_args(["--space", "s.yaml", "--generator", "x:y", "--endpoint", "http://127.0.0.1:9/v1", "--model",
                       "m", "--budget", "10", "--output-dir", "o", "--strategy", "quickscope", "--pool-start", "7"])
    assert args.pool_start == 7
