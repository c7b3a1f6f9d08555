"""The gibbs route's settings and data: the present cells of a matrix by item and by model (CSR)."""

from __future__ import annotations

import numpy as np

from benchmeasure.base.kernel_cache import numba

NU = 5.0            # degrees of freedom of the t proposal
NEWTON_STEPS = 1    # Newton steps to the mode of each conditional from the start of _proposal (more: slower)
FLOOR_BOUND = 0.1   # a rate this close to the guessing floor, (p̂ − ḡ)/(1 − ḡ) below it, gets the wide mixture
WIDE_SCALE = 1.0    # the wide component's scale: the prior's sd
FLOOR_STEPS = 2     # MH steps per sweep of each coordinate of a fit with guessing floors (one proposal: one pass each
                    # after the first), whose acceptance is lower (about 0.79 against 0.93)
BLOCK = 25          # sweeps per kernel call (between progress updates and random-number refills)
STEP_CHOICES = (0, 1, 2)   # the Newton steps a coordinate may be given (each fixed before the kept sweeps)
ADAPT_MIN_TUNE = 200       # burn-in at least this long chooses each coordinate's steps (shorter: NEWTON_STEPS)
ADAPT_SWEEPS = 300         # burn-in sweeps spent trying the choices (each 100), after the first tenth of burn-in


GENERAL, BINARY, GUESSED = 0, 1, 2   # a block's cells: K per cell, all T = 1 (and g = 0), some guessing floor


@numba.njit(cache=True, nogil=True)
def block_kind(tt, gg):
    """GUESSED if any cell has a guessing floor, else BINARY if every cell has T = 1, else GENERAL (``gg`` may be
    empty: no floor anywhere)."""
    for p in range(gg.shape[0]):
        if gg[p] != 0.0:
            return GUESSED
    binary = True
    for p in range(tt.shape[0]):
        if tt[p] != 1.0:
            binary = False
    return BINARY if binary else GENERAL


class SparseData:
    """The present cells of a counts and a trials matrix, by item (CSR) and by model (CSR)."""

    def __init__(self, counts, trials, guessing=0.0):
        y = np.asarray(counts, dtype=np.int64)
        t = np.asarray(trials, dtype=np.int64)
        if y.shape != t.shape or np.any(y < 0) or np.any(y > t):
            raise ValueError("counts and trials must have one shape and 0 ≤ count ≤ trials in every cell")
        self.n_models, self.n_items = y.shape
        rows, cols = np.nonzero(t > 0)                              # row-major: sorted by model
        self.n_cells = int(rows.size)
        self.m_ptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=self.n_models))].astype(np.int64)
        # counts and trials as float32 (exact below 2^24), indices as int32: 16 bytes a cell in both layouts
        self.m_idx, self.m_y, self.m_t = (cols.astype(np.int32), y[rows, cols].astype(np.float32),
                                          t[rows, cols].astype(np.float32))
        order = np.lexsort((rows, cols))                           # sorted by item
        self.i_ptr = np.r_[0, np.cumsum(np.bincount(cols, minlength=self.n_items))].astype(np.int64)
        self.i_idx = rows[order].astype(np.int32)   # 4 bytes a cell: the passes stream less
        self.i_y, self.i_t = self.m_y[order].copy(), self.m_t[order].copy()
        self.m_ytot, self.m_ttot = y.sum(axis=1).astype(float), t.sum(axis=1).astype(float)
        self.i_ytot, self.i_ttot = y.sum(axis=0).astype(float), t.sum(axis=0).astype(float)
        g = np.broadcast_to(np.asarray(guessing, dtype=float), (self.n_items,))
        # each cell's item's guessing floor; none stored without one (the kernels read it only when some g > 0)
        self.m_g = g[self.m_idx].copy() if np.any(g != 0.0) else np.zeros(0)
        self.i_g = self.m_g[order].copy() if self.m_g.size else np.zeros(0)
        plain = (g == 0.0)[None, :]
        self.m_yplain = np.where(plain, y, 0).sum(axis=1).astype(float)   # Σ Y over the g = 0 cells
        self.i_yplain = np.where(plain, y, 0).sum(axis=0).astype(float)

    def blocks(self):
        """The item and the model CSR tuples the kernels take."""
        return ((self.i_ptr, self.i_idx, self.i_y, self.i_t, self.i_g, self.i_ytot, self.i_yplain, self.i_ttot),
                (self.m_ptr, self.m_idx, self.m_y, self.m_t, self.m_g, self.m_ytot, self.m_yplain, self.m_ttot))

    def start(self, rng: np.random.Generator, jitter: float = 1.0):
        """A data-based start (θ_j = logit p̂_j, b_i = −logit p̂_i, p̂ = (Y + ½)/(T + 1)) plus N(0, jitter²) per chain."""
        theta = np.log((self.m_ytot + 0.5) / (self.m_ttot - self.m_ytot + 0.5))
        b = -np.log((self.i_ytot + 0.5) / (self.i_ttot - self.i_ytot + 0.5))
        theta += jitter * rng.standard_normal(theta.size)
        b += jitter * rng.standard_normal(b.size)
        return theta, b
