"""Choose k anchor items from a calibrated benchmark, to evaluate future models cheaply.

A new model answers only the anchors; ``score_models.py`` then places it on the benchmark's
scale with the difficulties held fixed (:mod:`benchmeasure.irt.anchored`) and predicts its
accuracy on the whole benchmark. Three strategies, each seeded:

* ``random``: k items drawn uniformly without replacement.
* ``stratified``: the items sorted by difficulty are cut into k strata of (nearly) equal
  size and one item is drawn at random from each, so the anchors follow the benchmark's own
  difficulty distribution (stratified sampling; it removes the between-strata part of the
  sampling variance of the predicted accuracy).
* ``information``: greedy design for the ability posterior. Under the 1PL an item's Fisher
  information about θ is I_i(θ) = K·(p_i − g_i)²·(1 − p_i) / (p_i·(1 − g_i)²) (K·p(1 − p) for g = 0);
  the Normal(0, 1) prior adds 1 to the precision. Items are added one at a time to maximize
  E_θ[log(1 + Σ_anchors I_i(θ))], the expected log posterior precision, with θ drawn from the
  abilities the benchmark was calibrated on (``abilities``) or the N(0, 1) prior. The seed
  orders ties (items of equal difficulty).

Each strategy is an :class:`AnchorStrategy` entry of :data:`STRATEGIES` (``select-anchors --strategy NAME``),
registered beside its function with :meth:`STRATEGIES.add <benchmeasure.base.registry.Registry.add>`; the function
takes ``(b, k, rng, *, guessing, abilities, n_trials, **options)`` and returns k item indices. Another package adds
one through the entry-point group ``benchmeasure.anchor_strategies``; the options an entry declares are set with
``select-anchors --option KEY=VALUE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.base.registry import GROUPS, Registry


@dataclass(frozen=True)
class AnchorStrategy:
    """``choose(b, k, rng, *, guessing, abilities, n_trials, **options) -> indices`` of k distinct items; the
    options it takes (names, or name -> argparse type); a one-line summary."""

    name: str
    choose: object
    options: object = ()
    summary: str = ""

    DECORATES: ClassVar[str] = "choose"


STRATEGIES = Registry("anchor strategy", GROUPS["anchor strategy"], entry=AnchorStrategy,
                      builtins=("benchmeasure.analyses.anchors",))   # the built-ins are below, in --help's order


def item_information(theta: np.ndarray, b: np.ndarray, guessing=0.0, n_trials: int = 1) -> np.ndarray:
    """Fisher information about θ of each item at each θ: shape (len(theta), len(b))."""
    g = np.broadcast_to(np.asarray(guessing, dtype=float), b.shape)[None, :]
    s = 1.0 / (1.0 + np.exp(b[None, :] - np.asarray(theta, dtype=float)[:, None]))
    p = g + (1 - g) * s
    return n_trials * (1 - g) ** 2 * s**2 * (1 - s) / np.maximum(p, 1e-300)


def select_anchors(difficulties, k: int, strategy: str, seed: int, *, guessing=0.0, abilities=None,
                   n_trials: int = 1, options: dict | None = None) -> np.ndarray:
    """Indices (into ``difficulties``) of k anchor items, in increasing difficulty.

    Parameters
    ----------
    difficulties : array_like of float, shape (N,)
    k : int
        1 ≤ k ≤ N.
    strategy : str
        A name in :data:`STRATEGIES` (``"stratified"``, ``"information"``, ``"random"``).
    seed : int
        Same seed, same inputs → same anchors.
    guessing : float or array_like of shape (N,)
        Lower asymptotes (``information`` only).
    abilities : array_like of float, optional
        Abilities to design for (``information`` only); default: 401 quantiles of N(0, 1).
    options : dict, optional
        Options the strategy declares (a plugin's; the built-ins take none).
    """
    b = np.asarray(difficulties, dtype=float)
    n = b.size
    if strategy not in STRATEGIES:
        fail(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if not 1 <= k <= n:
        fail(f"--k must be between 1 and the number of items ({n}), got {k}")
    entry = STRATEGIES[strategy]
    unknown = sorted(set(options or {}) - set(entry.options))
    if unknown:
        fail(f"{unknown[0]!r} is not an option of the {strategy} anchor strategy "
             f"(accepted: {', '.join(entry.options) or 'none'})")
    rng = np.random.default_rng(seed)
    chosen = np.asarray(entry.choose(b, k, rng, guessing=guessing, abilities=abilities,
                                                    n_trials=n_trials, **(options or {})))
    return np.asarray(sorted(chosen.tolist(), key=lambda i: (b[i], i)), dtype=np.int64)


@STRATEGIES.add("stratified", summary="one item drawn from each of k difficulty strata of equal size")
def stratified(b, k, rng, **unused) -> np.ndarray:
    order = np.argsort(b, kind="stable")
    edges = np.linspace(0, b.size, k + 1).round().astype(int)
    return np.array([order[rng.integers(lo, hi)] for lo, hi in zip(edges[:-1], edges[1:])])


@STRATEGIES.add("information", summary="greedy: the most expected log posterior precision of theta")
def information(b, k, rng, *, guessing=0.0, abilities=None, n_trials=1, **unused) -> np.ndarray:
    return _greedy_information(b, k, rng, guessing, abilities, n_trials)


@STRATEGIES.add("random", summary="k items drawn uniformly without replacement")
def uniform_random(b, k, rng, **unused) -> np.ndarray:
    return rng.choice(b.size, size=k, replace=False)


def _normal_quantiles(count: int) -> np.ndarray:
    """``count`` equally spaced quantiles of N(0, 1) (NumPy only: inverse by bisection on erf)."""
    from math import erf, sqrt

    targets = (np.arange(count) + 0.5) / count
    lo, hi = np.full(count, -10.0), np.full(count, 10.0)
    cdf = np.vectorize(lambda x: 0.5 * (1 + erf(x / sqrt(2))))
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        below = cdf(mid) < targets
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def _greedy_information(b, k, rng, guessing, abilities, n_trials) -> np.ndarray:
    theta = _normal_quantiles(401) if abilities is None else np.asarray(abilities, dtype=float)
    info = item_information(theta, b, guessing, n_trials)  # (T, N)
    tiebreak = rng.permutation(b.size)                       # seeded order among equal gains
    precision = np.ones(theta.size)                          # the N(0, 1) prior
    available = np.ones(b.size, dtype=bool)
    chosen = []
    for _ in range(k):
        gain = np.log1p(info / precision[:, None]).mean(axis=0)  # E_θ[log(prec + I_i) − log prec]
        gain[~available] = -np.inf
        best = gain.max()
        candidates = tiebreak[available[tiebreak] & (gain[tiebreak] >= best - 1e-12 * abs(best))]
        pick = int(candidates[0])
        chosen.append(pick)
        available[pick] = False
        precision += info[:, pick]
    return np.asarray(chosen)
