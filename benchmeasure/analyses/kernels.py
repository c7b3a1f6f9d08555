"""Compiled kernels of the analyses: the metrics of many sorted rows, and simulated column sums.

Loaded only where they run (Numba's import costs a few tenths of a second that the commands reading a difficulty
file need not pay); compiled once per package version into the kernel cache (``base/kernel_cache.py``).
"""

from __future__ import annotations

import numpy as np

from benchmeasure.base.kernel_cache import numba


@numba.njit(cache=True, nogil=True)
def sorted_metrics(z, top_k, ddm, max_gap, top_sum):
    """Per row of ``z`` (D, N), sorted and in [0, 1]: DDM (mean |z_(i) − (i − 0.5)/N|), the widest gap and the sum
    of the ``top_k`` widest (the gaps before the first item and after the last included), in one pass per row.

    The widest gaps are kept in a small array in descending order (a new gap is inserted when it beats the
    narrowest kept one), and summed widest first."""
    n_rows, n = z.shape
    k = min(top_k, n + 1)
    widest = np.empty(k)
    for r in range(n_rows):
        row = z[r]
        total = 0.0
        for i in range(n):
            total += abs(row[i] - (i + 0.5) / n)
        ddm[r] = total / n
        kept = 0
        previous = 0.0
        for i in range(n + 1):
            gap = (row[i] if i < n else 1.0) - previous
            if i < n:
                previous = row[i]
            if kept < k or gap > widest[kept - 1]:
                slot = kept if kept < k else k - 1
                while slot > 0 and widest[slot - 1] < gap:
                    widest[slot] = widest[slot - 1]
                    slot -= 1
                widest[slot] = gap
                if kept < k:
                    kept += 1
        max_gap[r] = widest[0]
        s = 0.0
        for q in range(kept):
            s += widest[q]
        top_sum[r] = s


@numba.njit(cache=True, nogil=True)
def sums_by_inverse_cdf(p, trials, u, out):
    """out[r, i] = the column sum of item i, Σ_m Binomial(trials[m, i], p[m, i]) (a Poisson-binomial law), drawn by
    inverting its CDF at u[r, i]; the PMF is built one trial at a time (each step a convex combination: stable).
    Items go in blocks of 256, their CDFs tabled first, so the data sets are read and written row by row."""
    m, n = p.shape
    sizes = np.zeros(n, dtype=np.int64)
    for j in range(m):
        for i in range(n):
            sizes[i] += trials[j, i]
    width = sizes.max() + 1
    block = 256
    cdf = np.empty((block, width))
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        for i in range(lo, hi):
            c = cdf[i - lo]
            size = 0
            c[0] = 1.0
            for j in range(m):
                q = p[j, i]
                for _ in range(trials[j, i]):
                    c[size + 1] = c[size] * q
                    for s in range(size, 0, -1):
                        c[s] = c[s] * (1.0 - q) + c[s - 1] * q
                    c[0] *= 1.0 - q
                    size += 1
            for s in range(1, size + 1):
                c[s] += c[s - 1]
        for r in range(u.shape[0]):
            for i in range(lo, hi):
                size = sizes[i]
                x = u[r, i] * cdf[i - lo, size]
                s = 0
                for t in range(size):   # the CDF is nondecreasing: the entries ≤ x are the first s (no branch)
                    s += cdf[i - lo, t] <= x
                out[r, i] = s


@numba.njit(cache=True, nogil=True)
def pair_orders(key, value):
    """(concordant, inverted) row pairs of ``key`` and ``value`` (1-D, one length): pairs ordered the same way by
    both, and the opposite way; a pair tied in either (or with a NaN) is neither. All R(R − 1)/2 pairs, compared
    (not multiplied: a product of two tiny differences can underflow to a tie)."""
    concordant = inverted = 0
    n = key.shape[0]
    for a in range(n):
        ka, va = key[a], value[a]
        for b in range(a + 1, n):
            dk, dv = ka - key[b], va - value[b]
            if (dk > 0 and dv > 0) or (dk < 0 and dv < 0):
                concordant += 1
            elif (dk > 0 and dv < 0) or (dk < 0 and dv > 0):
                inverted += 1
    return concordant, inverted


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True, inline="always")
def _splitmix64(state):
    """(next state, 64 random bits): Steele, Lea & Flood's SplitMix64 (OOPSLA 2014), a Weyl sequence through a
    bijective mix; passes BigCrush."""
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return state, z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def binomial_sums(threshold, ptr, seed, out):
    """out[r, i] = the successes among item i's trials (``ptr[i]:ptr[i + 1]``, a cell with K trials listed K
    times), trial t a success when a 32-bit uniform is below ``threshold[t]`` = round(p_t·2³²), so with
    probability exactly threshold/2³² (within 2⁻³³ of p_t). The uniforms are the two halves of SplitMix64 words
    from ``seed``, two trials to a word: the draws depend on the seed alone, and none are stored."""
    state = np.uint64(seed)
    for r in range(out.shape[0]):
        for i in range(out.shape[1]):
            total = 0
            t = ptr[i]
            hi = ptr[i + 1]
            while t + 1 < hi:
                state, word = _splitmix64(state)
                total += (word & _LOW32) < threshold[t]
                total += (word >> np.uint64(32)) < threshold[t + 1]
                t += 2
            if t < hi:
                state, word = _splitmix64(state)
                total += (word & _LOW32) < threshold[t]
            out[r, i] = total


@numba.njit(cache=True, nogil=True)
def quadrature_means(base, nodes, pattern, sums, out):
    """out[e] = Σ_g w_g·nodes[g] / Σ_g w_g with log w_g = base[pattern[e], g] − sums[e]·nodes[g] (a posterior mean by
    quadrature), each entry alone (its value does not depend on the entries beside it). Nodes more than 60 below the
    largest log weight are skipped: their weights are below e⁻⁶⁰ of the largest, under the sums' rounding."""
    g_count = nodes.shape[0]
    for e in range(out.shape[0]):
        row = base[pattern[e]]
        s = sums[e]
        top = -np.inf
        for g in range(g_count):
            v = row[g] - s * nodes[g]
            if v > top:
                top = v
        num = 0.0
        den = 0.0
        for g in range(g_count):
            v = row[g] - s * nodes[g] - top
            if v > -60.0:
                w = np.exp(v)
                num += w * nodes[g]
                den += w
        out[e] = num / den
