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
