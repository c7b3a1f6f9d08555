"""The gibbs route's Metropolis-within-Gibbs kernel: a proposal at each conditional's mode, one block update, the
shift move and a run of sweeps."""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.kernel_cache import numba
from benchmeasure.irt.routes.gibbs.sparse import BINARY, FLOOR_BOUND, GUESSED, WIDE_SCALE, block_kind
from benchmeasure.irt.routes.gibbs.sums import (
    FLOOR_MIN,
    _floor_sum_and_logf_binary,
    _logf,
    _plain_ok,
    _score_info,
    _softplus_dense,
    _sum_and_softplus_plain,
    _sums_all,
)


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
