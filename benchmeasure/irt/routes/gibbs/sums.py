"""The sums a gibbs conditional needs over one coordinate's cells: Σ o_k, Σ o_k², Σ T_k softplus(η_k), scores
and log densities, each in one pass (plain, dense, binary and guessing-floor forms)."""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.kernel_cache import numba


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
    the product is taken only when it passes 1e250 (each factor is in (1, 2]), not once per cell (joint/kernel.py)."""
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


@numba.njit(cache=True, nogil=True, inline="always")
def _four_scores(u0, u1, u2, u3, tt, q, binary, s0, s1, s2, s3, i0, i1, i2, i3):
    """Four cells' T·σ(η) and T·σ(η)(1 − σ(η)) (u = e^η; T = ``tt[q]`` … ``tt[q + 3]`` unless ``binary``) added to the
    running sums: the step of :func:`_sums_plain` and :func:`_sums_dense` (the same operations in the same order)."""
    f0, f1, f2, f3 = 1.0 + u0, 1.0 + u1, 1.0 + u2, 1.0 + u3
    f01, f23 = f0 * f1, f2 * f3
    inv = 1.0 / (f01 * f23)          # one division for four cells (each f < e^FAST_BOUND: no overflow)
    inv01, inv23 = inv * f23, inv * f01
    r0, r1, r2, r3 = inv01 * f1, inv01 * f0, inv23 * f3, inv23 * f2
    g0, g1, g2, g3 = u0 * r0, u1 * r1, u2 * r2, u3 * r3
    if not binary:
        g0, g1, g2, g3 = tt[q] * g0, tt[q + 1] * g1, tt[q + 2] * g2, tt[q + 3] * g3
    s0 += g0
    s1 += g1
    s2 += g2
    s3 += g3
    i0 += g0 * r0
    i1 += g1 * r1
    i2 += g2 * r2
    i3 += g3 * r3
    return s0, s1, s2, s3, i0, i1, i2, i3


@numba.njit(cache=True, nogil=True, inline="always")
def _one_score(u0, tt, q, binary, s0, i0):
    """One left-over cell's terms into the first running sums (:func:`_four_scores`)."""
    r0 = 1.0 / (1.0 + u0)
    g0 = u0 * r0 * (1.0 if binary else tt[q])
    return s0 + g0, i0 + g0 * r0


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
        s0, s1, s2, s3, i0, i1, i2, i3 = _four_scores(u0, u1, u2, u3, tt, p, binary, s0, s1, s2, s3, i0, i1, i2, i3)
        p += 4
    while p < hi:
        s0, i0 = _one_score(w_other[idx[p]] * ex, tt, p, binary, s0, i0)
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
        s0, s1, s2, s3, i0, i1, i2, i3 = _four_scores(u0, u1, u2, u3, tt, lo + p, binary, s0, s1, s2, s3, i0, i1, i2,
                                                      i3)
        p += 4
    while p < n:
        s0, i0 = _one_score(w_other[p] * ex, tt, lo + p, binary, s0, i0)
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


@numba.njit(cache=True, nogil=True, inline="always")
def _four_factors(f0, f1, f2, f3, tt, q, binary, p0, p1, p2, p3, logs):
    """Four cells' factors (each raised to its T, ``tt[q]`` … ``tt[q + 3]``, unless ``binary``) multiplied into the
    four running products, which are logged into ``logs`` and reset together when one passes RESCALE: the step of
    every unrolled product loop here (the same operations in the same order wherever it is inlined)."""
    if not binary:
        f0, f1 = _ipow(f0, int(tt[q])), _ipow(f1, int(tt[q + 1]))
        f2, f3 = _ipow(f2, int(tt[q + 2])), _ipow(f3, int(tt[q + 3]))
    p0 *= f0
    p1 *= f1
    p2 *= f2
    p3 *= f3
    if p0 > RESCALE or p1 > RESCALE or p2 > RESCALE or p3 > RESCALE:
        logs += math.log(p0) + math.log(p1) + math.log(p2) + math.log(p3)
        p0 = p1 = p2 = p3 = 1.0
    return p0, p1, p2, p3, logs


@numba.njit(cache=True, nogil=True, inline="always")
def _one_factor(f0, tt, q, binary, p0, logs):
    """One left-over cell's factor into the first running product (:func:`_four_factors`)."""
    p0 *= f0 if binary else _ipow(f0, int(tt[q]))
    if p0 > RESCALE:
        logs += math.log(p0)
        p0 = 1.0
    return p0, logs


@numba.njit(cache=True, nogil=True, inline="always")
def _log_products(p0, p1, p2, p3, logs):
    """Σ_k T_k log(1 + e^η_k) from the running products and what was logged before."""
    return logs + (math.log(p0) + math.log(p1)) + (math.log(p2) + math.log(p3))


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
        p0, p1, p2, p3, logs = _four_factors(f0, f1, f2, f3, tt, p, binary, p0, p1, p2, p3, logs)
        p += 4
    while p < hi:
        f0 = 1.0 + w_other[idx[p]] * ex
        p0, logs = _one_factor(f0, tt, p, binary, p0, logs)
        p += 1
    return _log_products(p0, p1, p2, p3, logs)


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
        p0, p1, p2, p3, logs = _four_factors(f0, f1, f2, f3, tt, lo + p, binary, p0, p1, p2, p3, logs)
        p += 4
    while p < n:
        f0 = 1.0 + w_other[p] * ex
        p0, logs = _one_factor(f0, tt, lo + p, binary, p0, logs)
        p += 1
    return _log_products(p0, p1, p2, p3, logs)


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
        p0, p1, p2, p3, logs = _four_factors(f0, f1, f2, f3, tt, p, binary, p0, p1, p2, p3, logs)
        p += 4
    while p < hi:
        a0 = other[idx[p]]
        o0 += a0
        q0 += a0 * a0
        f0 = 1.0 + w_other[idx[p]] * ex
        p0, logs = _one_factor(f0, tt, p, binary, p0, logs)
        p += 1
    return o0 + o1, q0 + q1, _log_products(p0, p1, p2, p3, logs)


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


@numba.njit(cache=True, nogil=True, inline="always")
def _floor_factors(u, g, y, up, hit, logs):
    """One binary cell (u = e^η, floor g, answer y) into the running products of :func:`_floor_logf_binary`: 1 + u
    into ``up``, and into ``hit`` the factor g + u where g > 0 and Y = 1, else 1, as h·(g + u) + (1 − h) with
    h ∈ {0, 1}: exact (one term is 0), and no branch on Y (the data's coin flip); both logged into ``logs`` and reset
    when one leaves [1e−200, 1e200]."""
    up *= 1.0 + u
    h = y * (g != 0.0)
    hit *= h * (g + u) + (1.0 - h)
    if up > RESCALE or hit > RESCALE or hit < 1.0 / RESCALE:
        logs += math.log(hit) - math.log(up)
        up = 1.0
        hit = 1.0
    return up, hit, logs


@numba.njit(cache=True, nogil=True)
def _floor_logf_binary(ex, lo, hi, idx, yy, gg, w_other):
    """``_softplus_sum`` over binary cells with guessing floors (g ≥ FLOOR_MIN where not 0): Σ over the floored
    cells with Y = 1 of log(g + u) − Σ over every cell of log(1 + u), as two running products logged only when
    they leave [1e−200, 1e200] (each factor lies in [FLOOR_MIN, e^230])."""
    up = 1.0      # Π (1 + u)
    hit = 1.0     # Π (g + u) over floored cells answered correctly
    logs = 0.0
    for p in range(lo, hi):
        up, hit, logs = _floor_factors(w_other[idx[p]] * ex, gg[p], yy[p], up, hit, logs)
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
        sum_g += gg[p]
        up, hit, logs = _floor_factors(w_other[k] * ex, gg[p], yy[p], up, hit, logs)
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
