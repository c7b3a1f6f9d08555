"""The Gibbs route: the paper's 1PL posterior on a sparse matrix by blocked Gibbs with exact conditional updates.

The model (Appendix C.3) with the trials matrix T (T_ij = 0 for an absent cell): θ_j, b_i ~ N(0, 1),
Y_ij ~ Binomial(T_ij, σ(θ_j − b_i)). The likelihood depends on θ and b only through the differences θ_j − b_i,
so given θ the b_i are independent, and given b the θ_j are; with g = 0 each one-dimensional conditional is
log-concave,

    log p(x | rest) = −x²/2 + s·x·Y_tot − Σ_k T_k·softplus(s·x + o_k) + const,                             (1)

with, for b_i: s = −1, o_k = θ_k over the models k that answered item i; for θ_j: s = +1, o_k = −b_k over the
items k model j answered. One sweep (each chain):

1. every b_i given θ, 2. every θ_j given b, each by one independence Metropolis–Hastings step whose proposal is a
   Student-t (ν = 5) centred at the mode of (1) with the scale of its curvature there. The mode is found by a fixed
   number of damped Newton steps started at a point computed from the data and the conditioning block only
   (s·(logit p̂ − mean o_k), p̂ = (Y_tot + ½)/(T_tot + 1)), so the proposal does not depend on the coordinate's
   current value and each step leaves (1) invariant: the posterior is exact, the approximation only affects the
   acceptance rate (reported as ``gibbs.acceptance_b`` / ``acceptance_theta``). How many Newton steps (0, 1 or
   2) each coordinate gets is chosen in burn-in (:func:`adaptation_window`): the choices are tried in turn, and
   each coordinate keeps the one with the most effective draws per pass over its cells (:func:`choose_steps`;
   a Newton step is one pass, the MH step two). A coordinate whose start is already near its mode takes none,
   one far out in a tail or against a guessing floor takes more. The choice is fixed before the kept sweeps, so
   they are one fixed Markov kernel with the exact posterior as its invariant law, as NUTS's step size adapted in
   warm-up; ``gibbs.newton_steps`` reports the shares chosen;
3. a shift move: θ_j + c and b_i + c for one c leaves every difference, so only the priors change, and
   c | rest ~ N(−(Σθ + Σb)/(M + N), 1/(M + N)) exactly (a group move on the translations, unit Jacobian; Liu &
   Sabatti 2000). Without it the common level of θ and b moves by a random walk of many sweeps.

Cost of a sweep: a few passes over the present cells (O(cells), independent of how many distinct trials columns
the holes make, which is what limits the collapsed route on sparse suites). σ and softplus come from
e^(s·x)·e^(o_k) (one exponential per coordinate and Newton step, not per cell) where no |x| + |o_k| nears 600.
Every random number is drawn in NumPy from one seeded Generator per chain, so the draws do not depend on how many
threads run the chains.

With a guessing floor (p = g_i + (1 − g_i)σ(η), per item) a cell adds Y log p − (T − Y) softplus(η) instead of its
term in (1); the conditional need not be log-concave then, so the Newton steps use the Fisher information
T(1 − g)σ²(1 − σ)/p (always positive) as the curvature (Fisher scoring). The MH step keeps the exact conditional
either way; only the acceptance rate depends on the approximation.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

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


@numba.njit(cache=True, nogil=True)
def _pass(x, sign, yplain, lo, hi, idx, yy, tt, gg, w_other, other, safe, guessed):
    """(Σ_k dℓ_k/dη, Σ_k Fisher information of η_k) over one coordinate's cells at x, η_k = s·x + o_k, where
    ℓ_k = Y log p + (T − Y) log(1 − p), p = g + (1 − g)σ(η): for g = 0, Y − Tσ and Tσ(1 − σ)."""
    ex = math.exp(sign * x) if safe else 0.0
    score = yplain            # Σ Y over the g = 0 cells
    info = 0.0
    for p in range(lo, hi):
        k = idx[p]
        u = w_other[k] * ex if safe else math.exp(min(sign * x + other[k], 700.0))   # e^η
        sig = u / (1.0 + u)
        t = tt[p]
        g = gg[p] if guessed else 0.0
        if g == 0.0:
            score -= t * sig
            info += t * sig * (1.0 - sig)
        else:
            prob = g + (1.0 - g) * sig
            score += yy[p] * (1.0 - g) * sig * (1.0 - sig) / prob - (t - yy[p]) * sig
            info += t * (1.0 - g) * sig * sig * (1.0 - sig) / prob
    return score, info


@numba.njit(cache=True, nogil=True)
def _softplus_sum(x, sign, lo, hi, idx, yy, tt, gg, w_other, other, safe, guessed):
    """Σ over the g = 0 cells of −T_k softplus(η_k), plus Σ over the others of Y log p − (T − Y) softplus(η_k)
    (ℓ_k up to terms constant in x). Σ T softplus = Σ T max(η, 0) + log Π (1 + min(e^η, e^−η))^T: the logarithm of
    the product is taken only when it passes 1e250 (each factor is in (1, 2]), not once per cell (irt/kernel.py)."""
    ex = math.exp(sign * x) if safe else 0.0
    linear = 0.0
    logs = 0.0
    prod = 1.0
    p_prod = 1.0      # Π p^Y over the cells with a guessing floor, its logarithm taken as rarely
    for p in range(lo, hi):
        k = idx[p]
        t = tt[p]
        eta = sign * x + other[k]
        if safe:
            u = w_other[k] * ex
            small = u if eta < 0.0 else 1.0 / u
        else:
            small = math.exp(-abs(eta))
        g = gg[p] if guessed else 0.0
        if g != 0.0:   # the guessing floor: Y log(g + (1 − g)σ), then −(T − Y) softplus(η) below
            y = yy[p]
            prob = g + (1.0 - g) * (1.0 / (1.0 + small) if eta >= 0.0 else small / (1.0 + small))
            if y == 1.0 and prob > 1e-3:
                p_prod *= prob
                if p_prod < 1e-250:
                    logs -= math.log(p_prod)
                    p_prod = 1.0
            elif y > 0.0:
                logs -= y * math.log(prob)
            t -= y
            if t == 0.0:
                continue
        if eta > 0.0:
            linear += t * eta
        if t == 1.0:
            prod *= 1.0 + small
        elif t <= 64.0:
            prod *= (1.0 + small) ** t
        else:
            logs += t * math.log1p(small)
        if prod > 1e250:
            logs += math.log(prod)
            prod = 1.0
    return math.log(p_prod) - (linear + logs + math.log(prod))


FAST_BOUND = 100.0   # |x| + max|o_k| below this: the Newton sums' e^η lie within e^±200
PLAIN_BOUND = 230.0  # T_max·(|x| + max|o_k|) below this: each product factor (1 + e^η)^T is below e^230 ≈ 1e100
RESCALE = 1e200      # a running product of such factors is logged and reset above this (so it stays below 1e300)
FLOOR_MIN = 1e-6     # a guessing floor this small or smaller (but not 0) keeps the general kernels


@numba.njit(cache=True, nogil=True)
def _sums_plain(ex, lo, hi, idx, tt, w_other, binary):
    """(Σ_k T_k σ(η_k), Σ_k T_k σ(η_k)(1 − σ(η_k))) over cells with g = 0, e^η_k = w_other[k]·ex, with
    σ(1 − σ) = u/(1 + u)² (no cancellation where σ nears 1). Four independent partial sums in a fixed order: the
    additions of different cells overlap in the processor (no chain of dependent additions), and the result does
    not depend on the machine or the thread."""
    s0 = s1 = s2 = s3 = 0.0
    i0 = i1 = i2 = i3 = 0.0
    p = lo
    while p + 4 <= hi:
        u0 = w_other[idx[p]] * ex
        u1 = w_other[idx[p + 1]] * ex
        u2 = w_other[idx[p + 2]] * ex
        u3 = w_other[idx[p + 3]] * ex
        f0, f1, f2, f3 = 1.0 + u0, 1.0 + u1, 1.0 + u2, 1.0 + u3
        f01, f23 = f0 * f1, f2 * f3
        inv = 1.0 / (f01 * f23)          # one division for four cells (each f < e^FAST_BOUND: no overflow)
        inv01, inv23 = inv * f23, inv * f01
        r0, r1, r2, r3 = inv01 * f1, inv01 * f0, inv23 * f3, inv23 * f2
        g0, g1, g2, g3 = u0 * r0, u1 * r1, u2 * r2, u3 * r3
        if not binary:
            g0, g1, g2, g3 = tt[p] * g0, tt[p + 1] * g1, tt[p + 2] * g2, tt[p + 3] * g3
        s0 += g0
        s1 += g1
        s2 += g2
        s3 += g3
        i0 += g0 * r0
        i1 += g1 * r1
        i2 += g2 * r2
        i3 += g3 * r3
        p += 4
    while p < hi:
        u0 = w_other[idx[p]] * ex
        r0 = 1.0 / (1.0 + u0)
        g0 = u0 * r0 * (1.0 if binary else tt[p])
        s0 += g0
        i0 += g0 * r0
        p += 1
    return (s0 + s1) + (s2 + s3), (i0 + i1) + (i2 + i3)


@numba.njit(cache=True, nogil=True)
def _sums_dense(ex, w_other, tt, lo, binary):
    """:func:`_sums_plain` over a complete coordinate (cells 0, 1, …, read in order; see :func:`_softplus_dense`):
    the same sums in the same order, bit for bit."""
    n = w_other.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    i0 = i1 = i2 = i3 = 0.0
    p = 0
    while p + 4 <= n:
        u0 = w_other[p] * ex
        u1 = w_other[p + 1] * ex
        u2 = w_other[p + 2] * ex
        u3 = w_other[p + 3] * ex
        f0, f1, f2, f3 = 1.0 + u0, 1.0 + u1, 1.0 + u2, 1.0 + u3
        f01, f23 = f0 * f1, f2 * f3
        inv = 1.0 / (f01 * f23)
        inv01, inv23 = inv * f23, inv * f01
        r0, r1, r2, r3 = inv01 * f1, inv01 * f0, inv23 * f3, inv23 * f2
        g0, g1, g2, g3 = u0 * r0, u1 * r1, u2 * r2, u3 * r3
        if not binary:
            g0, g1 = tt[lo + p] * g0, tt[lo + p + 1] * g1
            g2, g3 = tt[lo + p + 2] * g2, tt[lo + p + 3] * g3
        s0 += g0
        s1 += g1
        s2 += g2
        s3 += g3
        i0 += g0 * r0
        i1 += g1 * r1
        i2 += g2 * r2
        i3 += g3 * r3
        p += 4
    while p < n:
        u0 = w_other[p] * ex
        r0 = 1.0 / (1.0 + u0)
        g0 = u0 * r0 * (1.0 if binary else tt[lo + p])
        s0 += g0
        i0 += g0 * r0
        p += 1
    return (s0 + s1) + (s2 + s3), (i0 + i1) + (i2 + i3)


@numba.njit(cache=True, nogil=True, inline="always")
def _ipow(v, n):
    """v**n for a whole n ≥ 0 by repeated squaring (a few multiplications where ``pow`` costs a log and an exp)."""
    r = 1.0
    while n > 0:
        if n & 1:
            r *= v
        n >>= 1
        if n:
            v *= v
    return r


@numba.njit(cache=True, nogil=True)
def _softplus_plain(ex, lo, hi, idx, tt, w_other, binary):
    """Σ_k T_k softplus(η_k) = log Π_k (1 + e^η_k)^T_k over cells with g = 0 (``binary``: every T = 1, not read):
    four running products, each logged only when it passes RESCALE (one logarithm per few hundred cells instead of
    one per cell). The caller keeps T_max·|η| < PLAIN_BOUND, so no factor or product overflows."""
    p0 = p1 = p2 = p3 = 1.0
    logs = 0.0
    p = lo
    while p + 4 <= hi:
        f0 = 1.0 + w_other[idx[p]] * ex
        f1 = 1.0 + w_other[idx[p + 1]] * ex
        f2 = 1.0 + w_other[idx[p + 2]] * ex
        f3 = 1.0 + w_other[idx[p + 3]] * ex
        if not binary:
            f0, f1 = _ipow(f0, int(tt[p])), _ipow(f1, int(tt[p + 1]))
            f2, f3 = _ipow(f2, int(tt[p + 2])), _ipow(f3, int(tt[p + 3]))
        p0 *= f0
        p1 *= f1
        p2 *= f2
        p3 *= f3
        if p0 > RESCALE or p1 > RESCALE or p2 > RESCALE or p3 > RESCALE:
            logs += math.log(p0) + math.log(p1) + math.log(p2) + math.log(p3)
            p0 = p1 = p2 = p3 = 1.0
        p += 4
    while p < hi:
        f0 = 1.0 + w_other[idx[p]] * ex
        p0 *= f0 if binary else _ipow(f0, int(tt[p]))
        if p0 > RESCALE:
            logs += math.log(p0)
            p0 = 1.0
        p += 1
    return logs + (math.log(p0) + math.log(p1)) + (math.log(p2) + math.log(p3))


@numba.njit(cache=True, nogil=True)
def _softplus_dense(ex, w_other, tt, lo, binary):
    """:func:`_softplus_plain` over a coordinate that has a cell with every other coordinate (a complete row or
    column: its cells' indices are 0, 1, …, so ``w_other`` is read in order, with no index array streamed and no
    gather, and the loop vectorizes). The same products in the same order: bit for bit the same value.
    ``tt[lo + k]``: the coordinate's k-th cell's T (not read when ``binary``)."""
    n = w_other.shape[0]
    p0 = p1 = p2 = p3 = 1.0
    logs = 0.0
    p = 0
    while p + 4 <= n:
        f0 = 1.0 + w_other[p] * ex
        f1 = 1.0 + w_other[p + 1] * ex
        f2 = 1.0 + w_other[p + 2] * ex
        f3 = 1.0 + w_other[p + 3] * ex
        if not binary:
            f0, f1 = _ipow(f0, int(tt[lo + p])), _ipow(f1, int(tt[lo + p + 1]))
            f2, f3 = _ipow(f2, int(tt[lo + p + 2])), _ipow(f3, int(tt[lo + p + 3]))
        p0 *= f0
        p1 *= f1
        p2 *= f2
        p3 *= f3
        if p0 > RESCALE or p1 > RESCALE or p2 > RESCALE or p3 > RESCALE:
            logs += math.log(p0) + math.log(p1) + math.log(p2) + math.log(p3)
            p0 = p1 = p2 = p3 = 1.0
        p += 4
    while p < n:
        f0 = 1.0 + w_other[p] * ex
        p0 *= f0 if binary else _ipow(f0, int(tt[lo + p]))
        if p0 > RESCALE:
            logs += math.log(p0)
            p0 = 1.0
        p += 1
    return logs + (math.log(p0) + math.log(p1)) + (math.log(p2) + math.log(p3))


@numba.njit(cache=True, nogil=True)
def _sums_all(other):
    """(Σ_k o_k, Σ_k o_k²) over every k, added in :func:`_sum_and_softplus_plain`'s order: a complete coordinate's
    proposal start, the same for every complete coordinate of a block, so found once per block update."""
    o0 = o1 = 0.0
    q0 = q1 = 0.0
    n = other.shape[0]
    p = 0
    while p + 4 <= n:
        a0, a1, a2, a3 = other[p], other[p + 1], other[p + 2], other[p + 3]
        o0 += a0 + a2
        o1 += a1 + a3
        q0 += a0 * a0 + a2 * a2
        q1 += a1 * a1 + a3 * a3
        p += 4
    while p < n:
        a0 = other[p]
        o0 += a0
        q0 += a0 * a0
        p += 1
    return o0 + o1, q0 + q1


@numba.njit(cache=True, nogil=True)
def _sum_and_softplus_plain(ex, lo, hi, idx, tt, other, w_other, binary):
    """(Σ_k o_k, Σ_k o_k², Σ_k T_k softplus(η_k)) over cells with g = 0 in one pass (as :func:`_softplus_plain`):
    the proposal's start and the current value's log density read the same cells."""
    o0 = o1 = 0.0
    q0 = q1 = 0.0
    p0 = p1 = p2 = p3 = 1.0
    logs = 0.0
    p = lo
    while p + 4 <= hi:
        k0, k1, k2, k3 = idx[p], idx[p + 1], idx[p + 2], idx[p + 3]
        a0, a1, a2, a3 = other[k0], other[k1], other[k2], other[k3]
        o0 += a0 + a2
        o1 += a1 + a3
        q0 += a0 * a0 + a2 * a2
        q1 += a1 * a1 + a3 * a3
        f0 = 1.0 + w_other[k0] * ex
        f1 = 1.0 + w_other[k1] * ex
        f2 = 1.0 + w_other[k2] * ex
        f3 = 1.0 + w_other[k3] * ex
        if not binary:
            f0, f1 = _ipow(f0, int(tt[p])), _ipow(f1, int(tt[p + 1]))
            f2, f3 = _ipow(f2, int(tt[p + 2])), _ipow(f3, int(tt[p + 3]))
        p0 *= f0
        p1 *= f1
        p2 *= f2
        p3 *= f3
        if p0 > RESCALE or p1 > RESCALE or p2 > RESCALE or p3 > RESCALE:
            logs += math.log(p0) + math.log(p1) + math.log(p2) + math.log(p3)
            p0 = p1 = p2 = p3 = 1.0
        p += 4
    while p < hi:
        a0 = other[idx[p]]
        o0 += a0
        q0 += a0 * a0
        f0 = 1.0 + w_other[idx[p]] * ex
        p0 *= f0 if binary else _ipow(f0, int(tt[p]))
        if p0 > RESCALE:
            logs += math.log(p0)
            p0 = 1.0
        p += 1
    return o0 + o1, q0 + q1, logs + (math.log(p0) + math.log(p1)) + (math.log(p2) + math.log(p3))


@numba.njit(cache=True, nogil=True)
def _floor_sums_binary(ex, lo, hi, idx, yy, gg, w_other):
    """``_pass``'s (score − Σ Y over g = 0 cells, Fisher information) over binary cells with guessing floors g_k
    (some may be 0), from u = e^η alone: σ = u/(1 + u), p = (g + u)/(1 + u), so a floored cell's score
    Y(1 − g)σ(1 − σ)/p − (1 − Y)σ and information (1 − g)σ²(1 − σ)/p need 1/(1 + u) and 1/(g + u): both from one
    division by (1 + u)(g + u), and one division serves two cells (the proposal only: any rounding is exact)."""
    s0 = s1 = 0.0
    i0 = i1 = 0.0
    p = lo
    while p < hi:
        u0 = w_other[idx[p]] * ex
        g0, y0 = gg[p], yy[p]
        last = p + 1 >= hi
        u1 = 0.0 if last else w_other[idx[p + 1]] * ex
        g1 = 0.0 if last else gg[p + 1]
        y1 = 0.0 if last else yy[p + 1]
        a0, c0 = 1.0 + u0, (g0 if g0 != 0.0 else 1.0) + u0   # g = 0: 1/(g + u) unused, kept away from 1/0
        a1, c1 = 1.0 + u1, (g1 if g1 != 0.0 else 1.0) + u1
        d0, d1 = a0 * c0, a1 * c1
        inv = 1.0 / (d0 * d1)
        inv0, inv1 = inv * d1, inv * d0            # 1/((1 + u)(g + u)) of each cell
        r0, r1 = c0 * inv0, c1 * inv1              # 1/(1 + u)
        sig0, sig1 = u0 * r0, u1 * r1
        if g0 == 0.0:
            s0 += -sig0
            i0 += sig0 * r0
        else:
            q0 = (1.0 - g0) * u0 * inv0      # (1 − g)σ(1 − σ)/p = (1 − g)u/((1 + u)(g + u))
            s0 += y0 * q0 - (1.0 - y0) * sig0
            i0 += q0 * sig0
        if not last:
            if g1 == 0.0:
                s1 += -sig1
                i1 += sig1 * r1
            else:
                q1 = (1.0 - g1) * u1 * inv1
                s1 += y1 * q1 - (1.0 - y1) * sig1
                i1 += q1 * sig1
        p += 2
    return s0 + s1, i0 + i1


@numba.njit(cache=True, nogil=True)
def _floor_logf_binary(ex, lo, hi, idx, yy, gg, w_other):
    """``_softplus_sum`` over binary cells with guessing floors (g ≥ FLOOR_MIN where not 0): Σ over the floored
    cells with Y = 1 of log(g + u) − Σ over every cell of log(1 + u), as two running products logged only when
    they leave [1e−200, 1e200] (each factor lies in [FLOOR_MIN, e^230])."""
    up = 1.0      # Π (1 + u)
    hit = 1.0     # Π (g + u) over floored cells answered correctly
    logs = 0.0
    for p in range(lo, hi):
        u = w_other[idx[p]] * ex
        up *= 1.0 + u
        g = gg[p]
        # the factor g + u where g > 0 and Y = 1, else 1, as h·(g + u) + (1 − h) with h ∈ {0, 1}: exact (one term
        # is 0), and no branch on Y (the data's coin flip)
        h = yy[p] * (g != 0.0)
        hit *= h * (g + u) + (1.0 - h)
        if up > RESCALE or hit > RESCALE or hit < 1.0 / RESCALE:
            logs += math.log(hit) - math.log(up)
            up = 1.0
            hit = 1.0
    return logs + math.log(hit) - math.log(up)


@numba.njit(cache=True, nogil=True)
def _floor_sum_and_logf_binary(ex, lo, hi, idx, yy, gg, other, w_other):
    """(Σ o_k, Σ o_k², Σ g_k, :func:`_floor_logf_binary`) in one pass: the proposal's start and the current value's
    log density over binary cells with guessing floors read the same cells (as :func:`_sum_and_softplus_plain`)."""
    sum_o = sum_o2 = sum_g = 0.0
    up = 1.0
    hit = 1.0
    logs = 0.0
    for p in range(lo, hi):
        k = idx[p]
        a = other[k]
        sum_o += a
        sum_o2 += a * a
        u = w_other[k] * ex
        up *= 1.0 + u
        g = gg[p]
        sum_g += g
        h = yy[p] * (g != 0.0)
        hit *= h * (g + u) + (1.0 - h)
        if up > RESCALE or hit > RESCALE or hit < 1.0 / RESCALE:
            logs += math.log(hit) - math.log(up)
            up = 1.0
            hit = 1.0
    return sum_o, sum_o2, sum_g, logs + math.log(hit) - math.log(up)


@numba.njit(cache=True, nogil=True, inline="always")
def _plain_ok(x, max_other, t_max):
    """Whether the product kernels may run at x: every factor (1 + e^η)^T stays below e^PLAIN_BOUND."""
    return t_max * (abs(x) + max_other) < PLAIN_BOUND


@numba.njit(cache=True, nogil=True)
def _score_info(x, sign, yplain, lo, hi, idx, yy, tt, gg, w_other, other, max_other, guessed, binary,
                complete=False):
    """``_pass`` at x, by the plain kernel when no cell has a guessing floor and no e^η can overflow (in order
    over a ``complete`` coordinate's cells)."""
    if not guessed and abs(x) + max_other < FAST_BOUND:
        ex = math.exp(sign * x)
        s, info = (_sums_dense(ex, w_other, tt, lo, binary) if complete else
                   _sums_plain(ex, lo, hi, idx, tt, w_other, binary))
        return yplain - s, info
    if guessed and binary and abs(x) + max_other < FAST_BOUND:   # binary cells with floors
        s, info = _floor_sums_binary(math.exp(sign * x), lo, hi, idx, yy, gg, w_other)
        return yplain + s, info
    return _pass(x, sign, yplain, lo, hi, idx, yy, tt, gg, w_other, other, abs(x) + max_other < 600.0, guessed)


@numba.njit(cache=True, nogil=True)
def _logf(x, sign, yplain, lo, hi, idx, yy, tt, gg, w_other, other, max_other, guessed, binary=False,
          t_max=np.inf, complete=False):
    """log p(x | rest) of (1) (with the guessing floor where g > 0) without its constant; without a floor, by the
    product kernel where :func:`_plain_ok` (``binary``: every cell has T = 1; ``t_max``: the largest T;
    ``complete``: the coordinate has a cell with every other one, read in order by :func:`_softplus_dense`)."""
    if not guessed and _plain_ok(x, max_other, t_max):
        ex = math.exp(sign * x)
        soft = (_softplus_dense(ex, w_other, tt, lo, binary) if complete else
                _softplus_plain(ex, lo, hi, idx, tt, w_other, binary))
        return -0.5 * x * x + sign * x * yplain - soft
    if guessed and binary and _plain_ok(x, max_other, 1.0):   # binary cells with floors
        return -0.5 * x * x + sign * x * yplain + _floor_logf_binary(math.exp(sign * x), lo, hi, idx, yy, gg,
                                                                     w_other)
    safe = abs(x) + max_other < 600.0
    return -0.5 * x * x + sign * x * yplain + _softplus_sum(x, sign, lo, hi, idx, yy, tt, gg, w_other, other, safe,
                                                          guessed)


@numba.njit(cache=True, nogil=True)
def _proposal(sign, ytot, yplain, ttot, lo, hi, idx, yy, tt, gg, other, w_other, max_other, n_newton, guessed,
              binary=False, sum_o=np.nan, sum_o2=np.nan, sum_g=np.nan, complete=False):
    """(centre, scale) of the t proposal: Newton (Fisher scoring) steps on the conditional from a start that
    depends only on the data and ``other``; the scale from the curvature (information) at the last step.
    ``sum_o``, ``sum_o2``, ``sum_g``: Σ o_k, Σ o_k² and Σ g_k T_k over the coordinate's cells when the caller has
    them (NaN: summed here); ``complete``: the coordinate has a cell with every other one.

    The start solves the conditional's mode equation x + Σ_k T_k σ(s·x + o_k) = Y_tot with the sum replaced by
    T_tot σ((s·x + ō)/κ), κ = √(1 + π v/8), v the variance of the o_k (the logistic-normal approximation):
    x_L = s(κ logit p̂ − ō) without the prior, then one Newton step of the approximate equation towards the prior,
    x₀ = x_L·I/(1 + I) with I = T_tot p̂(1 − p̂)/κ."""
    mean_g = 0.0
    if guessed and not math.isnan(sum_o) and not math.isnan(sum_g):
        mean_g = sum_g
    elif guessed or math.isnan(sum_o):
        sum_o = 0.0
        sum_o2 = 0.0
        for p in range(lo, hi):
            o = other[idx[p]]
            sum_o += o
            sum_o2 += o * o
            if guessed:
                mean_g += gg[p] * tt[p]
    count = hi - lo
    mean_o = sum_o / count if count > 0 else 0.0
    var_o = max(sum_o2 / count - mean_o * mean_o, 0.0) if count > 0 else 0.0
    rate = (ytot + 0.5) / (ttot + 1.0)
    floor_bound = False
    if mean_g > 0.0:   # above the floor: (p̂ − ḡ)/(1 − ḡ), kept inside (0.05, 0.95)
        floor = mean_g / ttot
        above = (rate - floor) / (1.0 - floor)
        floor_bound = above < FLOOR_BOUND
        rate = min(max(above, 0.05), 0.95)
    kappa = math.sqrt(1.0 + math.pi * var_o / 8.0)
    x = sign * (kappa * math.log(rate / (1.0 - rate)) - mean_o)
    approx_info = ttot * rate * (1.0 - rate) / kappa
    x *= approx_info / (1.0 + approx_info)
    curv = 1.0 + approx_info
    for _ in range(n_newton):
        score, info = _score_info(x, sign, yplain, lo, hi, idx, yy, tt, gg, w_other, other, max_other, guessed,
                                  binary, complete)
        grad = -x + sign * score
        curv = 1.0 + info
        step = grad / curv
        x += max(-1.0, min(1.0, step))
    return x, 1.0 / math.sqrt(curv), floor_bound


@numba.njit(cache=True, nogil=True)
def _log_t(z, nu):
    return -0.5 * (nu + 1.0) * math.log1p(z * z / nu)


@numba.njit(cache=True, nogil=True)
def update_block(values, sign, block, other, tdraw, udraw, cdraw, nu, n_newton, kind=-1, steps=None, per=None,
                 dense=True, extra=None):
    """One independence-MH step for every coordinate of ``values`` given ``other``; returns how many accepted.
    ``block``: (ptr, idx, Y, T, g per cell, Y total, Y total over g = 0 cells, T total) per coordinate.
    A coordinate whose success rate lies near or below its guessing floor (a conditional with a long flat side
    the curvature at the mode does not see) proposes from a half-and-half mixture of that t and a t of scale 1
    (the prior's), chosen by ``cdraw``; its density is the mixture's, so the step stays exact. ``kind``: the
    block's :func:`block_kind` when the caller knows it (−1: found here, one pass over the cells). ``steps``: the
    Newton steps of each coordinate (None: ``n_newton`` for all); ``per``: each coordinate's acceptances are added
    there (None: not kept). ``dense``: a coordinate with a cell for every other coordinate (a complete row or
    column) reads ``other`` in order instead of through its cells' indices (:func:`_softplus_dense`): the same
    values bit for bit, so False only serves to check that. ``extra``: (3·R, coordinates) draws (t, u, mixture
    choice) of R more steps of every coordinate from the same proposal (None: one step each; the acceptances
    counted are the first step's)."""
    ptr, idx, yy, tt, gg, ytot, yplain, ttot = block
    if kind < 0:
        kind = block_kind(tt, gg)
    guessed, binary = kind == GUESSED, kind == BINARY
    t_max = 1.0 if binary else (float(tt.max()) if tt.size else 1.0)
    if guessed and t_max == 1.0:   # binary cells with floors: their kernels, when no floor is nearly 0
        binary = not np.any((gg != 0.0) & (gg < FLOOR_MIN))
    w_other = np.exp(np.minimum(other, 700.0))
    max_other = np.max(np.abs(other)) if other.size else 0.0
    n_other = other.shape[0]
    all_o = all_o2 = np.nan
    if dense and not guessed:
        all_o, all_o2 = _sums_all(other)
    accepted = 0
    for c in range(values.shape[0]):
        lo, hi = ptr[c], ptr[c + 1]
        cur = values[c]
        complete = dense and not guessed and hi - lo == n_other   # the cells' indices are then 0, 1, …, n − 1
        sum_o = sum_o2 = sum_g = np.nan
        f_cur = np.nan
        if complete and _plain_ok(cur, max_other, t_max):   # Σ o_k and Σ o_k² are the block's, found above
            sum_o, sum_o2 = all_o, all_o2
            soft = _softplus_dense(math.exp(sign * cur), w_other, tt, lo, binary)
            f_cur = -0.5 * cur * cur + sign * cur * yplain[c] - soft
        elif not guessed and _plain_ok(cur, max_other, t_max):   # the start's Σ o_k, Σ o_k² and f(cur) in one pass
            sum_o, sum_o2, soft = _sum_and_softplus_plain(math.exp(sign * cur), lo, hi, idx, tt, other, w_other, binary)
            f_cur = -0.5 * cur * cur + sign * cur * yplain[c] - soft
        elif guessed and binary and _plain_ok(cur, max_other, 1.0):   # the same with the floors' kernel
            sum_o, sum_o2, sum_g, part = _floor_sum_and_logf_binary(math.exp(sign * cur), lo, hi, idx, yy, gg, other,
                                                                    w_other)
            f_cur = -0.5 * cur * cur + sign * cur * yplain[c] + part
        n_steps = n_newton if steps is None else steps[c]
        centre, scale, wide = _proposal(sign, ytot[c], yplain[c], ttot[c], lo, hi, idx, yy, tt, gg, other, w_other,
                                        max_other, n_steps, guessed, binary, sum_o, sum_o2, sum_g, complete)
        new = _propose(centre, scale, wide, tdraw[c], cdraw[c])
        log_q_new = _log_q(new, centre, scale, wide, nu)
        log_q_cur = _log_q(cur, centre, scale, wide, nu)
        f_new = _logf(new, sign, yplain[c], lo, hi, idx, yy, tt, gg, w_other, other, max_other, guessed, binary,
                      t_max, complete)
        if math.isnan(f_cur):
            f_cur = _logf(cur, sign, yplain[c], lo, hi, idx, yy, tt, gg, w_other, other, max_other, guessed,
                          binary, t_max, complete)
        if math.log(udraw[c]) < (f_new - log_q_new) - (f_cur - log_q_cur):
            values[c] = new
            f_cur, log_q_cur = f_new, log_q_new
            accepted += 1
            if per is not None:
                per[c] += 1
        if extra is not None:   # more steps from the same proposal: one pass over the cells each
            for r in range(extra.shape[0] // 3):
                t_r, u_r, c_r = extra[3 * r, c], extra[3 * r + 1, c], extra[3 * r + 2, c]
                new = _propose(centre, scale, wide, t_r, c_r)
                log_q_new = _log_q(new, centre, scale, wide, nu)
                f_new = _logf(new, sign, yplain[c], lo, hi, idx, yy, tt, gg, w_other, other, max_other, guessed,
                              binary, t_max, complete)
                if math.log(u_r) < (f_new - log_q_new) - (f_cur - log_q_cur):
                    values[c] = new
                    f_cur, log_q_cur = f_new, log_q_new
    return accepted


@numba.njit(cache=True, nogil=True, inline="always")
def _propose(centre, scale, wide, t, choice):
    """A draw of the proposal from a standard t draw: the t at (centre, scale), or for a ``wide`` coordinate the
    mixture's component that ``choice`` (uniform) picks."""
    return centre + ((WIDE_SCALE if choice < 0.5 else scale) if wide else scale) * t


@numba.njit(cache=True, nogil=True)
def _log_q(x, centre, scale, wide, nu):
    """log density of the proposal at x, without its constant: the t at (centre, scale), or for a ``wide``
    coordinate the half-and-half mixture of it and the t of scale :data:`WIDE_SCALE` at the same centre."""
    if wide:
        return np.logaddexp(_log_t((x - centre) / scale, nu) - math.log(scale),
                            _log_t((x - centre) / WIDE_SCALE, nu) - math.log(WIDE_SCALE))
    return _log_t((x - centre) / scale, nu)


@numba.njit(cache=True, nogil=True)
def shift(theta, b, z):
    """The shift move: θ + c, b + c with c ~ N(−(Σθ + Σb)/(M + N), 1/(M + N)), z a standard normal draw."""
    n = theta.size + b.size
    c = -(theta.sum() + b.sum()) / n + z / math.sqrt(n)
    theta += c
    b += c


@numba.njit(cache=True, nogil=True)
def sweeps(theta, b, d_i, d_m, draws_b, draws_th, z, nu, steps_b, steps_t, per_b, per_t, out_theta, out_b, record,
           dense=True):
    """len(z) sweeps (b | θ, θ | b, shift) from (θ, b) in place; row s of out_* ← the state after sweep s when
    ``record``. ``d_i``/``d_m``: the item and model CSR tuples; ``steps_*``: each coordinate's Newton steps;
    ``per_*``: each coordinate's acceptances are added there; ``dense``: as in :func:`update_block`. Returns
    (b accepted, θ accepted)."""
    acc_b = 0
    acc_t = 0
    kind = block_kind(d_i[3], d_i[4])   # the same cells in both blocks
    for s in range(z.shape[0]):
        acc_b += update_block(b, -1.0, d_i, theta, draws_b[0, s], draws_b[1, s], draws_b[2, s], nu, 0, kind,
                              steps_b, per_b, dense, draws_b[3:, s])
        acc_t += update_block(theta, 1.0, d_m, -b, draws_th[0, s], draws_th[1, s], draws_th[2, s], nu, 0, kind,
                              steps_t, per_t, dense, draws_th[3:, s])
        shift(theta, b, z[s])
        if record:
            out_theta[s] = theta
            out_b[s] = b
    return acc_b, acc_t


def adaptation_window(tune: int):
    """(first, end) burn-in sweeps in which the Newton-step choices are tried, or None (too short a burn-in): from
    the first block after a tenth of burn-in, :data:`ADAPT_SWEEPS` sweeps (fewer in a burn-in under 750), ending at
    least a fifth of burn-in before the kept sweeps so the chosen kernel runs in."""
    if tune < ADAPT_MIN_TUNE:
        return None
    first = -(-(tune // 10) // BLOCK) * BLOCK
    length = min(ADAPT_SWEEPS, (tune * 4 // 5 - first) // (BLOCK * len(STEP_CHOICES)) * BLOCK * len(STEP_CHOICES))
    return (first, first + length) if length > 0 else None


def choose_steps(accepted, sweeps_per_choice) -> np.ndarray:
    """Per coordinate, the Newton steps (an index of :data:`STEP_CHOICES`) with the most effective draws per pass
    over its cells, from its acceptances under each choice (``accepted``: (choices, coordinates)). An independence
    MH step with acceptance a has lag-1 autocorrelation about 1 − a, so about a/(2 − a) effective draws per draw;
    a step costs 2 + k passes over the coordinate's cells with k Newton steps. Ties go to fewer steps."""
    a = (np.asarray(accepted, dtype=float) + 1.0) / (np.asarray(sweeps_per_choice, dtype=float)[:, None] + 2.0)
    cost = 2.0 + np.asarray(STEP_CHOICES, dtype=float)[:, None]
    return np.asarray(STEP_CHOICES, dtype=np.int64)[np.argmax(a / (2.0 - a) / cost, axis=0)]


def _step_draws(rng, size: int, n: int, guessed: bool) -> np.ndarray:
    """The random numbers of ``size`` sweeps' MH steps over n coordinates: (t, u, mixture choice) for the first
    step of each, and without a floor that is all (the choice is then u again, never read); with one, as many
    again for each of the :data:`FLOOR_STEPS` − 1 further steps."""
    if not guessed:
        t, u = rng.standard_t(NU, (size, n)), 1.0 - rng.random((size, n))
        return np.stack([t, u, u])
    rows = []
    for _ in range(FLOOR_STEPS):
        rows += [rng.standard_t(NU, (size, n)), 1.0 - rng.random((size, n)), rng.random((size, n))]
    return np.stack(rows)


def run_chains(data: SparseData, *, chains: int, tune: int, draws: int, seed: int, cores: int = 1,
               on_progress=None, n_newton: int = NEWTON_STEPS, dense: bool = True):
    """Blocked Gibbs chains from data-based starts; returns (θ draws (chains, draws, M) float64, b draws
    (chains, draws, N) float32, info dict with acceptance rates, the start and the sampling time). ``dense=False``
    reads complete rows and columns through their cells' indices too (the same draws, slower: for tests)."""
    m, n = data.n_models, data.n_items
    d_i, d_m = data.blocks()
    guessed = bool(np.any(data.i_g != 0.0))
    theta_out = np.empty((chains, draws, m))
    b_out = np.empty((chains, draws, n), dtype=np.float32)
    accepted = np.zeros((chains, 2))
    done = [0]
    lock = threading.Lock()
    total = chains * (tune + draws)
    seeds = np.random.SeedSequence(seed).spawn(chains)

    window = adaptation_window(tune)
    chosen = {"b": np.zeros((chains, len(STEP_CHOICES))), "theta": np.zeros((chains, len(STEP_CHOICES)))}

    def one(chain):
        rng = np.random.default_rng(seeds[chain])
        theta, b = data.start(rng)
        steps_b, steps_t = np.full(n, n_newton, dtype=np.int64), np.full(m, n_newton, dtype=np.int64)
        tried_b = np.zeros((len(STEP_CHOICES), n), dtype=np.int64)
        tried_t = np.zeros((len(STEP_CHOICES), m), dtype=np.int64)
        tried_sweeps = np.zeros(len(STEP_CHOICES))
        kept_b, kept_t = np.zeros(n, dtype=np.int64), np.zeros(m, dtype=np.int64)   # not read
        for phase, length in (("warm-up", tune), ("draws", draws)):
            for start in range(0, length, BLOCK):
                size = min(BLOCK, length - start)
                per_b, per_t, use_b, use_t = kept_b, kept_t, steps_b, steps_t
                if phase == "warm-up" and window is not None and window[0] <= start < window[1]:
                    k = (start - window[0]) // BLOCK % len(STEP_CHOICES)   # the choices in turn, a block each
                    use_b, use_t = np.full(n, STEP_CHOICES[k], dtype=np.int64), np.full(m, STEP_CHOICES[k],
                                                                                          dtype=np.int64)
                    per_b, per_t = tried_b[k], tried_t[k]
                    tried_sweeps[k] += size
                t_b, t_t = _step_draws(rng, size, n, guessed), _step_draws(rng, size, m, guessed)
                z = rng.standard_normal(size)
                record = phase == "draws"
                out_t = theta_out[chain, start:start + size] if record else np.empty((0, m))
                out_b = np.empty((size, n)) if record else np.empty((0, n))
                a_b, a_t = sweeps(theta, b, d_i, d_m, t_b, t_t, z, NU, use_b, use_t, per_b, per_t, out_t, out_b,
                                  record, dense)
                if window is not None and phase == "warm-up" and start < window[1] <= start + size:
                    steps_b = choose_steps(tried_b, tried_sweeps)   # fixed from here on: the draws' kernel
                    steps_t = choose_steps(tried_t, tried_sweeps)
                if record:
                    b_out[chain, start:start + size] = out_b
                    accepted[chain] += (a_b, a_t)
                with lock:
                    done[0] += size
                    if on_progress is not None:
                        on_progress("Gibbs sweeps of all chains (burn-in + kept)", done[0], total)
        for name, steps in (("b", steps_b), ("theta", steps_t)):
            chosen[name][chain] = [np.mean(steps == k) for k in STEP_CHOICES]

    start_time = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, min(cores, chains))) as pool:
        list(pool.map(one, range(chains)))
    elapsed = time.perf_counter() - start_time
    info = {
        "acceptance_b": float(accepted[:, 0].sum() / max(chains * draws * n, 1)),
        "acceptance_theta": float(accepted[:, 1].sum() / max(chains * draws * m, 1)),
        "proposal": f"independence Metropolis-Hastings, Student-t (nu = {NU:g}) at the mode after 0-"
                    f"{STEP_CHOICES[-1]} Newton steps (per coordinate) from a data-based point",
        "newton_steps": ({name: {str(k): float(v) for k, v in zip(STEP_CHOICES, share.mean(axis=0))}
                          for name, share in chosen.items()} if window is not None else
                         {name: {str(n_newton): 1.0} for name in chosen}),
        "newton_steps_chosen": (f"per chain and coordinate, in burn-in sweeps {window[0]}-{window[1]} "
                                f"(each choice {STEP_CHOICES} in turn, {BLOCK} sweeps at a time), the one with "
                                "the most effective draws per pass over the cells; fixed for the kept sweeps"
                                if window is not None else
                                f"{n_newton} for every coordinate (burn-in shorter than {ADAPT_MIN_TUNE} sweeps)"),
        "start": "theta_j = logit((Y_j + 1/2)/(T_j - Y_j + 1/2)), b_i = -logit(same for item i), plus N(0, 1) "
                 "jitter per chain and coordinate",
        "burn_in_sweeps": int(tune),
        "cells": int(data.n_cells),
        "sampling_time_s": elapsed,
    }
    return theta_out, b_out, info


def gibbs_posterior(counts, trials, *, models, items, chains: int, tune: int, draws: int, seed: int, cores: int,
                    guessing=0.0, progress=None):
    """The gibbs route's posterior of a fit: (:class:`~benchmeasure.irt.draws.Draws` of θ and b, per-item stats of
    b, per-model stats of θ, diagnostics), the figures computed as on the other routes
    (:mod:`benchmeasure.irt.diagnostics`)."""
    from benchmeasure.irt.diagnostics import summarize_diagnostics, summarize_draws
    from benchmeasure.irt.draws import Draws

    data = SparseData(counts, trials, guessing)

    def on_progress(phase, done, total):
        if progress is not None:
            progress.update(phase, done, total)

    on_progress("Gibbs sweeps of all chains (burn-in + kept)", 0, chains * (tune + draws))
    theta_draws, b_draws, info = run_chains(data, chains=chains, tune=tune, draws=draws, seed=seed, cores=cores,
                                            on_progress=on_progress)
    summary_start = time.perf_counter()

    def on_chunk(done, total):
        on_progress("summarizing (R-hat, ESS per item)", done, total)

    b_stats = summarize_draws(b_draws, on_chunk=on_chunk)
    theta_stats = summarize_draws(theta_draws)
    idata = Draws({"theta": (("model",), theta_draws), "b": (("item",), b_draws)},
                  {"model": list(models), "item": list(items)})
    diagnostics = summarize_diagnostics(idata, ["theta", "b"], sampling_time_s=info["sampling_time_s"],
                                        stats={"theta": theta_stats, "b": b_stats})
    diagnostics["compile_time_s"] = 0.0
    diagnostics["summary_time_s"] = time.perf_counter() - summary_start
    diagnostics["route"] = "gibbs"
    diagnostics["gibbs"] = {key: value for key, value in info.items() if key != "sampling_time_s"}
    return idata, b_stats, theta_stats, diagnostics


MIN_COLLAPSED_WORK = 20_000  # below this many integrand nodes per gradient the collapsed route is quick anyway


def prefers_gibbs(counts, trials, n_trials: int, guessing=0.0) -> tuple[bool, dict]:
    """Whether ``auto`` should run this route on a matrix with holes, and the figures it decided on.

    One gradient of the collapsed route evaluates every (trials column, column sum) group's integrand on its grid
    (integrals × nodes exponentials); one Gibbs sweep does a few simple passes over the present cells; NUTS takes
    several gradients per draw. Measured on this machine (docs/suites.md, "Choosing the route"), a Gibbs sweep cost
    about one gradient where integrals × nodes ≈ cells; below that the collapsed route stays the default (MMLU-Pro:
    58 integrals × 128 nodes against 347,376 cells), above it (random holes) Gibbs was 3–100 times faster."""
    from benchmeasure.irt.collapsed_holes import CollapsedHolesData

    collapsed = CollapsedHolesData(counts, trials, n_trials, guessing)
    work = collapsed.n_integrals * collapsed.grid.size
    cells = int(np.count_nonzero(np.asarray(trials)))
    return work > max(cells, MIN_COLLAPSED_WORK), {"collapsed_integrals": collapsed.n_integrals,
                                                   "grid_nodes": collapsed.grid.size, "cells": cells}


def distinct_columns(trials, stop: int) -> int:
    """How many distinct columns ``trials`` has, counting stops once more than ``stop`` are found (cheap)."""
    seen = set()
    for column in np.asarray(trials, dtype=np.int64).T:
        seen.add(column.tobytes())
        if len(seen) > stop:
            break
    return len(seen)
