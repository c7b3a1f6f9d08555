"""The uniform random numbers of the compiled exact draws: xoshiro256** with its state in the caller's array.

The exact draws of b (:mod:`benchmeasure.irt.routes.collapsed`, :mod:`benchmeasure.irt.routes.collapsed.holes`,
:func:`benchmeasure.irt.routes.collapsed.quadrature.sample`) need two or three uniforms per draw and little else,
so the generator's cost is a large part of theirs: Numba's ``np.random.random()`` (a Mersenne Twister behind a
thread-local lookup) took 18 ns a number on the 2-core development machine, more than the rest of a draw. This is the
generator xoshiro256** of Blackman & Vigna ("Scrambled linear pseudorandom number generators", ACM TOMS 47(4),
2021), written here from its published definition: 256 bits of state, period 2^256 − 1, a double from the top 53
bits of each output. It runs inline in the kernel, on a 4-word ``uint64`` state the kernel advances in place, so a
block of draws depends on its own seed only (never on the thread that draws it, nor on other blocks).

States come from NumPy's :class:`~numpy.random.SeedSequence` (:func:`states`): distinct seeds give independent,
well-mixed starting states, and an all-zero state (the one fixed point) is replaced.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.base.kernel_cache import numba

_53 = 1.0 / 9007199254740992.0   # 2^-53


def states(seed, count: int) -> np.ndarray:
    """``count`` generator states (count, 4) uint64 from ``seed`` (an int or a sequence of ints)."""
    words = np.random.SeedSequence(seed).generate_state(4 * int(count), dtype=np.uint64).reshape(int(count), 4)
    zero = ~words.any(axis=1)
    words[zero, 0] = 1   # probability 2^-256 per state: never in practice, but never the fixed point
    return words


def private_state(state: np.ndarray) -> np.ndarray:
    """A copy of one generator state (4,) that shares no cache line with any other array.

    The rows of :func:`states` are 32 bytes apart, two to a 64-byte cache line: two threads advancing neighbouring
    rows in place wrote to one line on every draw, so the second thread added CPU time and no speed (12 × 41,871:
    the b draws took as long on two threads as on one, at twice the CPU). The copy sits in the middle of a
    192-byte buffer of its own."""
    buffer = np.zeros(24, dtype=np.uint64)
    buffer[8:12] = state
    return buffer[8:12]


@numba.njit(cache=True, nogil=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(cache=True, nogil=True, inline="always")
def next_u64(state):
    """The next 64-bit output of xoshiro256**; advances ``state`` (4,) uint64 in place."""
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return result


@numba.njit(cache=True, nogil=True, inline="always")
def uniform(state):
    """A double uniform on [0, 1) (a multiple of 2^-53) from ``state``."""
    return np.int64(next_u64(state) >> np.uint64(11)) * _53   # < 2^53: exact, and a cheap conversion


@numba.njit(cache=True, nogil=True)
def fill_uniform(state, out):
    """out[k] = uniform(state) for every k (for tests and callers that want a whole array)."""
    for k in range(out.shape[0]):
        out[k] = uniform(state)
