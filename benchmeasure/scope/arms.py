"""The pool of configurations a search has pulled (its arms): outcomes, bounds and certification.

Outcomes are errors (True when the model's answer was wrong). Each arm keeps its outcomes in pull order;
when its pull count reaches a checkpoint of the :class:`~benchmeasure.scope.bounds.Certifier`, its
bounds are tightened and it is certified once its lower bound reaches its threshold (the utility's
threshold for that configuration, :mod:`benchmeasure.scope.utility`) — and, for a band, once its upper
bound is also at most the band's upper end.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.scope.bounds import Certifier, kl_bounds


def band_of(threshold) -> tuple[float, float]:
    """``(low, high)`` from a threshold (``high`` = 1: a one-sided threshold) or a band pair."""
    if isinstance(threshold, tuple):
        return float(threshold[0]), float(threshold[1])
    return float(threshold), 1.0


class Pool:
    """Arms, indexed in the order they were added."""

    def __init__(self, space, certifier: Certifier, threshold_of):
        self.space = space
        self.certifier = certifier
        # config -> threshold on the error rate (above 1: never certified), or (low, high) for a band
        self.threshold_of = threshold_of
        self.configs: list[dict] = []
        self.index: dict[str, int] = {}
        self.outcomes: list[list[bool]] = []
        self.thresholds: list[float] = []
        self.highs: list[float] = []  # a band's upper end (1.0: none)
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.certified_at: list[int | None] = []  # total pulls of the search when certified
        self._n: list[int] = []
        self._k: list[int] = []
        self.total = 0

    def __len__(self) -> int:
        return len(self.configs)

    def add(self, config: dict) -> int:
        """The arm of ``config`` (added when new)."""
        key = self.space.key(config)
        if key not in self.index:
            self.index[key] = len(self.configs)
            self.configs.append(config)
            self.outcomes.append([])
            low, high = band_of(self.threshold_of(config))
            self.thresholds.append(low)
            self.highs.append(high)
            self.lower.append(0.0)
            self.upper.append(1.0)
            self.certified_at.append(None)
            self._n.append(0)
            self._k.append(0)
        return self.index[key]

    def record(self, arm: int, error: bool) -> None:
        self.total += 1
        outcomes = self.outcomes[arm]
        outcomes.append(bool(error))
        self._n[arm] += 1
        self._k[arm] += bool(error)
        n = self._n[arm]
        if n in self.certifier.point_set:
            lower, upper = self.certifier.bounds(self._k[arm], n)
            self.lower[arm] = max(self.lower[arm], lower)
            self.upper[arm] = min(self.upper[arm], upper)
            if (self.certified_at[arm] is None and self.lower[arm] >= self.thresholds[arm]
                    and self.upper[arm] <= self.highs[arm]):
                self.certified_at[arm] = self.total

    # vector views for the strategies
    def pulls(self) -> np.ndarray:
        return np.array(self._n, dtype=float)

    def errors(self) -> np.ndarray:
        return np.array(self._k, dtype=float)

    def certified(self) -> np.ndarray:
        return np.array([c is not None for c in self.certified_at], dtype=bool)

    def threshold_array(self) -> np.ndarray:
        return np.array(self.thresholds, dtype=float)

    def high_array(self) -> np.ndarray:
        return np.array(self.highs, dtype=float)

    def current_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Bounds on all pulls so far at the certifier's level (for steering; certification uses checkpoints)."""
        return kl_bounds(self.errors(), self.pulls(), self.certifier.delta_each)

    def rows(self) -> list[dict]:
        """One row per arm with pulls, in the order added: the configuration, pulls, mean, lower, upper, and
        ``certified`` (the search's pull count when certified, else None)."""
        return [{**self.configs[i], "pulls": n, "mean": self._k[i] / n, "lower": self.lower[i],
                 "upper": self.upper[i], "certified": self.certified_at[i]}
                for i, n in enumerate(self._n) if n > 0]

    def certified_rows(self) -> list[dict]:
        """One row per certified arm, in the order certified: the configuration, pulls, mean, lower, upper."""
        order = sorted((c, i) for i, c in enumerate(self.certified_at) if c is not None)
        rows = []
        for _, i in order:
            n = len(self.outcomes[i])
            rows.append({**self.configs[i], "pulls": n, "mean": sum(self.outcomes[i]) / n,
                         "lower": self.lower[i], "upper": self.upper[i]})
        return rows
