"""The candidate worlds of the calibrated intervals (:mod:`benchmeasure.analyses.calibrated`, step 1): populations
of true difficulties placed at the fit's location and scale (docs/gap_noise.md, "Calibrated intervals")."""

from __future__ import annotations

import math

import numpy as np

#: the candidate worlds, in order (module docstring)
WORLDS = ("fit", "fit_unshrunk", "fit_tails", "fit_far_tails", "fit_skewed", "fit_more_skewed", "fit_sharp",
          "fit_closed", "fit_flat", "fit_clustered", "fit_sharpened", "fit_sharpened_more",
          "posterior_draw", "wide_prior3", "wide_prior10", "normal", "uniform",
          "skewed_right", "skewed_left", "clusters", "band10", "band20", "band30")


def _standard(z) -> np.ndarray:
    z = np.asarray(z, dtype=float)
    sd = z.std()
    return (z - z.mean()) / (sd if sd > 0 else 1.0)


def _sharpen(z, h: float, steps: int) -> np.ndarray:
    """``z`` moved ``steps`` mean-shift steps up the gradient of its own density (a Gaussian kernel of bandwidth
    ``h``, on a grid): items gather at the modes and the valleys between them empty, as a noise-free version of
    a clustered benchmark would look."""
    z = np.asarray(z, dtype=float)
    for _ in range(steps):
        grid = np.linspace(z.min() - 3 * h, z.max() + 3 * h, 1024)
        step = grid[1] - grid[0]
        counts = np.histogram(z, bins=grid.size, range=(grid[0] - step / 2, grid[-1] + step / 2))[0]
        kernel = np.exp(-0.5 * (np.arange(-int(4 * h / step) - 1, int(4 * h / step) + 2) * step / h) ** 2)
        density = np.convolve(counts, kernel, mode="same") + 1e-12
        slope = np.gradient(np.log(density), step)
        z = z + h * h * np.interp(z, grid, slope)
    return _standard(z)


def _move_gaps(z, widest: int, how: str) -> np.ndarray:
    """``z`` with its ``widest`` largest gaps (between sorted neighbours) doubled (``sharp``) or shrunk to the
    median gap (``closed``), every item keeping its rank."""
    order = np.argsort(z, kind="stable")
    gaps = np.diff(z[order])
    top = np.argsort(-gaps, kind="stable")[:widest]
    change = np.zeros_like(gaps)
    change[top] = gaps[top] if how == "sharp" else np.median(gaps) - gaps[top]
    moved = np.empty_like(z)
    moved[order] = z[order] + np.concatenate([[0.0], np.cumsum(change)])
    return _standard(moved)


class Worlds:
    """The candidate worlds at one fit (module docstring, step 1)."""

    def __init__(self, b_mean, b_sd, b_draws=None, raw=None):
        mean, sd = np.asarray(b_mean, dtype=float), np.asarray(b_sd, dtype=float)
        self.n = mean.size
        self.location = float(mean.mean())
        self.scale = float(math.sqrt(mean.var() + (sd ** 2).mean()))
        self.fit = _standard(mean)
        self.draws = None if b_draws is None else np.asarray(b_draws)
        self.raw = dict(raw or {})  # worlds given on the b scale itself
        self.names = [w for w in WORLDS if (w != "posterior_draw" or self.draws is not None)
                      and (not w.startswith("wide_prior") or w in self.raw)]
        order = np.argsort(self.fit, kind="stable")
        ranks = np.empty(self.n, dtype=int)
        ranks[order] = np.arange(self.n)
        uniform = _standard((ranks + 0.5) / self.n)
        half = ranks >= self.n / 2
        centre = np.where(half, self.fit[half].mean() if half.any() else 0.0,
                          self.fit[~half].mean() if (~half).any() else 0.0)
        # each mean moved away from the prior's by its own shrinkage (1 − sd²: a normal likelihood under the
        # N(0, 1) prior), so the items the prior pulled in most (the extremes) are put back furthest
        unshrunk = _standard(mean / np.clip(1.0 - sd ** 2, 0.1, 1.0))
        # the outer 5 % on each side twice and four times as far out: where the data say least (an item every
        # model fails is "hard", not how hard) and where min-max normalization looks most
        low, high = np.quantile(self.fit, [0.05, 0.95])

        def stretch(f):
            return _standard(np.where(self.fit > high, high + f * (self.fit - high),
                                      np.where(self.fit < low, low + f * (self.fit - low), self.fit)))
        # the side with the longer tail (the sign of the skewness) stretched away from the median: a skew the
        # prior's shrinkage has hidden
        median = float(np.median(self.fit))
        long_side = (self.fit - median) * (1 if ((self.fit - median) ** 3).mean() >= 0 else -1) > 0

        def skew(f):
            return _standard(np.where(long_side, median + f * (self.fit - median), self.fit))

        self.fixed = {"fit": self.fit, "fit_unshrunk": unshrunk, "fit_tails": stretch(2.0),
                      "fit_far_tails": stretch(4.0), "fit_skewed": skew(1.5), "fit_more_skewed": skew(2.5),
                      "fit_sharp": _move_gaps(self.fit, 3, "sharp"),
                      "fit_closed": _move_gaps(self.fit, 3, "closed"),
                      "fit_flat": _standard(0.5 * self.fit + 0.5 * uniform),
                      "fit_clustered": _standard(self.fit + 0.5 * (centre - self.fit))}
        noise = float(np.median(sd)) / self.scale if self.scale > 0 else 0.1  # a typical posterior sd, standardized
        h = min(max(noise, 0.05), 0.5)
        self.fixed["fit_sharpened"] = _sharpen(self.fit, h, 1)
        self.fixed["fit_sharpened_more"] = _sharpen(self.fit, h, 3)

    def truth(self, name: str, rng) -> np.ndarray:
        """One draw of the true difficulties of world ``name``, on the fit's b scale."""
        n = self.n
        if name == "posterior_draw":
            return np.asarray(self.draws[rng.integers(self.draws.shape[0])], dtype=float)
        if name in self.raw:
            return self.raw[name]
        if name in self.fixed:
            z = self.fixed[name]
        elif name == "normal":
            z = rng.normal(size=n)
        elif name == "uniform":
            z = rng.uniform(-1, 1, n)
        elif name in ("skewed_right", "skewed_left"):
            z = rng.lognormal(0.0, 0.75, n) * (1 if name == "skewed_right" else -1)
        elif name == "clusters":
            z = np.where(rng.random(n) < 0.5, rng.normal(-1.0, 0.35, n), rng.normal(1.2, 0.35, n))
        elif name.startswith("band"):
            width = int(name[4:]) / 100
            start = rng.uniform(0.05, 0.95 - width)
            u = rng.uniform(0.0, 1.0 - width, n)
            z = np.where(u >= start, u + width, u)
        else:
            raise ValueError(f"unknown world {name!r}")
        return self.location + self.scale * _standard(z)
