"""Log densities compiled once per package version and handed to nutpie: a fit costs its sampling.

nutpie samples a model through two C functions, the log density with its gradient and the map from the
sampler's coordinates to the stored draws (``expand``). ``nutpie.compile_pymc_model`` builds both from a
PyTensor graph in every process (10–25 s, more than the sampling of most fits here). This module instead
writes them once as Numba ``cfunc`` s with ``cache=True``: the machine code is compiled the first time a
package version runs and loaded from the kernel cache (:mod:`benchmeasure.base.kernel_cache`) after that.
The data of one fit reach the compiled code through one float64 buffer (:func:`pack`), whose address is the
``user_data`` pointer nutpie passes to every call, so nothing about a matrix is baked into the code.

The densities are exactly the PyMC models of :mod:`benchmeasure.irt.model` (which stay the reference and run
``--sampler pymc``), up to additive constants:

* ``collapsed`` (:func:`benchmeasure.irt.routes.collapsed.density.collapsed_density`): θ's marginal, every b
  integrated out;
* ``joint`` (:func:`benchmeasure.irt.routes.joint.density.joint_density`): (θ, b) together.

This module holds what they share: the buffer, the Householder reflection, the prior and status codes
(:func:`_finish`), :class:`Density` and the compiled pairs (:func:`register_pair`, :func:`compiled_pair`).

``tests/test_compiled_density.py`` checks each density and gradient against the PyMC model's at random
points, and the fits against the PyMC-compiled route's draws in distribution.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numpy as np
from numba import types

from benchmeasure.base.kernel_cache import numba

_LOGP_SIG = types.int64(types.uint64, types.CPointer(types.double), types.CPointer(types.double),
                        types.CPointer(types.double), types.voidptr)
_EXPAND_SIG = types.int64(types.uint64, types.uint64, types.CPointer(types.double), types.CPointer(types.double),
                          types.voidptr)

# nutpie's return codes for a density call: 0 fine, 1 failed, 3 gradient not finite, 4 value not finite
_OK, _FAILED, _BAD_GRAD, _BAD_VALUE = 0, 1, 3, 4


# ---------------------------------------------------------------------------------------------
# one float64 buffer per fit: [length, fields, (offset, rows, cols) per field, data…]


def pack(*fields) -> np.ndarray:
    """The buffer holding ``fields`` (scalars, vectors or matrices, all stored as float64), header first."""
    arrays = [np.atleast_1d(np.asarray(f, dtype=float)) for f in fields]
    header = 2 + 3 * len(arrays)
    total = header + sum(a.size for a in arrays)
    buf = np.zeros(total)
    buf[0], buf[1] = total, len(arrays)
    offset = header
    for k, a in enumerate(arrays):
        rows, cols = (a.shape[0], 1) if a.ndim == 1 else a.shape
        buf[2 + 3 * k: 5 + 3 * k] = (offset, rows, cols)
        buf[offset: offset + a.size] = a.reshape(-1)
        offset += a.size
    return buf


@numba.njit(cache=True, inline="always")
def _buffer(data):
    head = numba.carray(data, (1,), np.float64)
    return numba.carray(data, (int(head[0]),), np.float64)


@numba.njit(cache=True, inline="always")
def _vec(buf, k):
    offset, rows, cols = int(buf[2 + 3 * k]), int(buf[3 + 3 * k]), int(buf[4 + 3 * k])
    return buf[offset: offset + rows * cols]


@numba.njit(cache=True, inline="always")
def _mat(buf, k):
    offset, rows, cols = int(buf[2 + 3 * k]), int(buf[3 + 3 * k]), int(buf[4 + 3 * k])
    return buf[offset: offset + rows * cols].reshape((rows, cols))


@numba.njit(cache=True, inline="always")
def _reflect(x, v, out):
    """out = (I − 2vvᵀ)·x (the Householder reflection is its own inverse and transpose)."""
    dot = 0.0
    for j in range(x.shape[0]):
        dot += x[j] * v[j]
    for j in range(x.shape[0]):
        out[j] = x[j] - 2.0 * v[j] * dot


@numba.njit(cache=True, inline="always")
def _unrotate(z, m, n, c, s, v_models, v_items, theta, b):
    """(θ, b) = Q·z[:m + n], Q = blockdiag(H_M, H_N)·R (:class:`benchmeasure.irt.model.Rotation`): R mixes
    coordinates 0 and m with (c, s), each H a Householder reflection (``v_models``, ``v_items``)."""
    x_models = z[:m].copy()
    x_items = z[m:m + n].copy()
    x_models[0] = c * z[0] + s * z[m]
    x_items[0] = s * z[0] - c * z[m]
    _reflect(x_models, v_models, theta)
    _reflect(x_items, v_items, b)


@numba.njit(cache=True, inline="always")
def _rotate_gradient(grad_theta, grad_b, c, s, v_models, v_items, out):
    """out[:m + n] = Qᵀ·(∂/∂θ, ∂/∂b), the chain rule through :func:`_unrotate` (Qᵀ = R·blockdiag(H_M, H_N))."""
    m = grad_theta.shape[0]
    gm = np.empty(m)
    gb = np.empty(grad_b.shape[0])
    _reflect(grad_theta, v_models, gm)
    _reflect(grad_b, v_items, gb)
    out[:m] = gm
    out[m:m + gb.shape[0]] = gb
    out[0] = c * gm[0] + s * gb[0]
    out[m] = s * gm[0] - c * gb[0]


@numba.njit(cache=True, inline="always")
def _finish(value, grad, z, out, logp):
    """Add the Normal(0, I) prior of z, write the results, and return nutpie's status code."""
    for j in range(z.shape[0]):
        value -= 0.5 * z[j] * z[j]
        out[j] = grad[j] - z[j]
        if not math.isfinite(out[j]):
            return _BAD_GRAD
    logp[0] = value
    return _OK if math.isfinite(value) else _BAD_VALUE


# ---------------------------------------------------------------------------------------------
# what nutpie samples


@dataclass(frozen=True)
class Density:
    """A log density ready for nutpie: which compiled pair runs it, its data buffer, and what it stores.

    ``variables`` are (name, dims) pairs of the stored draws, in the order ``expand`` writes them (C order),
    ``dims`` one dim's name or a tuple of them; ``coords`` the labels of each dim. ``route`` names the compiled
    pair (``collapsed``, ``joint``, or one added by :func:`register_pair`).
    """

    route: str
    buffer: np.ndarray
    n_dim: int
    variables: tuple
    coords: dict

    def shape(self, dims) -> tuple:
        """The shape of a variable with ``dims``."""
        return tuple(len(self.coords[d]) for d in ((dims,) if isinstance(dims, str) else dims))

    @property
    def n_expanded(self) -> int:
        return sum(math.prod(self.shape(dims)) for _, dims in self.variables)

    def logp(self, z) -> tuple[float, np.ndarray]:
        """(log density, gradient) at ``z`` through the compiled function itself (for tests and checks)."""
        z = np.ascontiguousarray(z, dtype=float)
        grad = np.empty(self.n_dim)
        value = np.empty(1)
        logp_fn, _ = compiled_pair(self.route)
        status = logp_fn.ctypes(self.n_dim, _ptr(z), _ptr(grad), _ptr(value), _void(self.buffer))
        if status != _OK:
            return -math.inf, grad
        return float(value[0]), grad

    def expand(self, z) -> np.ndarray:
        """The stored values (every variable, flattened in order) at ``z``."""
        z = np.ascontiguousarray(z, dtype=float)
        out = np.empty(self.n_expanded)
        _, expand_fn = compiled_pair(self.route)
        expand_fn.ctypes(self.n_dim, self.n_expanded, _ptr(z), _ptr(out), _void(self.buffer))
        return out


def _ptr(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def _void(a):
    return ctypes.c_void_p(a.ctypes.data)


_SOURCES: dict = {}   # route → (log density, expand), registered by each density's module
_COMPILED: dict = {}


def register_pair(route: str, logp, expand) -> None:
    """Add a density's (log density, expand) pair, as plain functions of nutpie's C signatures that the kernel
    cache compiles once: each density's module registers its own (``irt/routes/collapsed/density.py``,
    ``irt/routes/joint/density.py``, the suite's correlated-abilities density)."""
    _SOURCES[route] = (logp, expand)


def compiled_pair(route: str):
    """The (log density, expand) C functions of ``route``: loaded from the kernel cache, compiled if absent."""
    if route not in _COMPILED:
        from benchmeasure.base.kernel_cache import timed_build

        logp, expand = _SOURCES[route]
        _COMPILED[route] = timed_build(
            lambda: (numba.cfunc(_LOGP_SIG, cache=True)(logp), numba.cfunc(_EXPAND_SIG, cache=True)(expand)),
            f"the {route} route's log density", logp)
    return _COMPILED[route]


