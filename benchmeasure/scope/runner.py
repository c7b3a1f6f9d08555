"""One search: a strategy proposes batches of pulls, an evaluator turns them into error outcomes, the pool
records them (in proposal order, whatever order they finish in) and certifies.

:func:`search` runs with any async evaluator: :class:`ModelEvaluator` (a generator, the project's
OpenAI-compatible client, a grader, the journal) for real searches, :func:`simulated_evaluator` (known
error rates, no server) for benches.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging

import numpy as np

from benchmeasure.scope.arms import Pool
from benchmeasure.scope.bounds import Certifier
from benchmeasure.scope.strategies import make_strategy

log = logging.getLogger(__name__)


def instance_seed(seed: int, key: str, pull: int) -> int:
    """The generator seed of an arm's ``pull``-th instance (fixed by the search seed and the configuration)."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{key}/{pull}".encode()).digest()[:4], "big")


async def search(space, strategy: str, evaluate, budget: int, seed: int, delta: float, threshold_of,
                 batch: int = 16, settings: dict | None = None, progress_every: int = 0, panel: int = 1) -> Pool:
    """Spend ``budget`` pulls; returns the pool (arms, outcomes, certifications).

    ``evaluate(pulls)`` gets ``[(config, key, pull index of that arm, total pull index), …]`` and returns
    one bool per pull: True when the model erred. With a panel of ``panel`` models, each proposed pull
    becomes one round of ``panel`` pulls, the arm's i-th pull going to model ``i mod panel``.
    """
    budget -= budget % panel
    pool = Pool(space, Certifier(delta, budget, space.size, unit=panel), threshold_of)
    chooser = make_strategy(strategy, pool, seed, budget // panel, batch, settings)
    shown = 0
    while pool.total < budget:
        arms = chooser.next_batch(min(batch, (budget - pool.total) // panel))
        if not arms:
            log.info("the strategy has nothing left to pull after %d pulls", pool.total)
            break
        arms = [arm for arm in arms for _ in range(panel)]
        pulls, counts = [], {}
        for i, arm in enumerate(arms):
            done = len(pool.outcomes[arm]) + counts.get(arm, 0)
            counts[arm] = counts.get(arm, 0) + 1
            pulls.append((pool.configs[arm], space.key(pool.configs[arm]), done, pool.total + i))
        errors = await evaluate(pulls)
        for arm, error in zip(arms, errors):
            pool.record(arm, error)
        if progress_every and pool.total - shown >= progress_every:
            shown = pool.total
            log.info("pulls %d/%d · configurations %d · certified %d", pool.total, budget, len(pool),
                     int(pool.certified().sum()))
    return pool


def simulated_evaluator(rate_of, seed: int, panel: int = 1):
    """An evaluator drawing each outcome from a known error rate ``rate_of(config)`` (seeded); with a panel,
    ``rate_of(config)`` returns the M models' rates and pull i of an arm uses model i mod M."""
    rng = np.random.default_rng([seed, 99])
    cache: dict = {}

    async def evaluate(pulls):
        rates = []
        for config, key, index, _ in pulls:
            if key not in cache:
                cache[key] = rate_of(config)
            rates.append(cache[key][index % panel] if panel > 1 else cache[key])
        return list(rng.random(len(pulls)) < np.array(rates))

    return evaluate


def run_simulated(space, strategy: str, rate_of, budget: int, seed: int, delta: float, threshold_of,
                  batch: int = 16, settings: dict | None = None, panel: int = 1) -> Pool:
    return asyncio.run(search(space, strategy, simulated_evaluator(rate_of, seed, panel), budget, seed, delta,
                              threshold_of, batch, settings, panel=panel))


def summarize(pool: Pool, budget: int) -> dict:
    """Counts of a finished search (JSON-ready): pulls, configurations, certifications, pulls to the first 10."""
    times = sorted(c for c in pool.certified_at if c is not None)
    pulls = pool.pulls()
    return {"pulls": pool.total, "budget": budget, "configurations": len(pool),
            "certified": len(times), "pulls_to_first_10_certified": times[9] if len(times) >= 10 else None,
            "max_pulls_one_configuration": int(pulls.max()) if len(pulls) else 0,
            "bound": pool.certifier.describe()}
