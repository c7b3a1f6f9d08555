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

* ``collapsed`` (:func:`collapsed_density`): z ~ Normal(0, I), θ = H·z (H the Householder reflection of
  :func:`benchmeasure.irt.model.build_collapsed_model`), plus the marginal log-likelihood of θ with every b
  integrated out (:func:`benchmeasure.irt.collapsed.marginal_logp_grad`, or its holes / K-per-cell form
  :func:`benchmeasure.irt.collapsed_holes.marginal_logp_grad_holes`); stored draws: θ.
* ``joint`` (:func:`joint_density`): the paper's joint 1PL in the rotated coordinates (θ, b) = Q·z of
  :class:`benchmeasure.irt.model.Rotation` or directly in (θ, b), with the fused binomial kernel
  (:func:`benchmeasure.irt.kernel.loglik_and_grad`); with anchors, the free b only. Stored draws: θ and b
  (and ``b_free`` with anchors), as the PyMC model names them.

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
from benchmeasure.irt.collapsed import marginal_logp_grad
from benchmeasure.irt.collapsed_holes import marginal_logp_grad_holes
from benchmeasure.irt.kernel import loglik_and_grad

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
def _finish(value, grad, z, out, logp):
    """Add the Normal(0, I) prior of z, write the results, and return nutpie's status code."""
    for j in range(z.shape[0]):
        value -= 0.5 * z[j] * z[j]
        out[j] = grad[j] - z[j]
        if not math.isfinite(out[j]):
            return _BAD_GRAD
    logp[0] = value
    return _OK if math.isfinite(value) else _BAD_VALUE


@numba.njit(cache=True)
def holes_loglik(theta, buf, first):
    """The holes / K-per-cell marginal log-likelihood of θ and its gradient, its 12 arrays (those of
    :meth:`~benchmeasure.irt.collapsed_holes.CollapsedHolesData.args`) the buffer's fields ``first`` onwards."""
    f = first
    return marginal_logp_grad_holes(theta, _vec(buf, f), _vec(buf, f + 1), _mat(buf, f + 2),
                                    _vec(buf, f + 3).astype(np.int64), _vec(buf, f + 4), _vec(buf, f + 5),
                                    _vec(buf, f + 6), _mat(buf, f + 7), _mat(buf, f + 8), _vec(buf, f + 9),
                                    _vec(buf, f + 10), _vec(buf, f + 11).astype(np.int64))


# ---------------------------------------------------------------------------------------------
# the collapsed route: θ = H·z, every b integrated out


@numba.njit(cache=True)
def _collapsed_call(z, buf, out, logp):
    kind = int(_vec(buf, 0)[0])
    v = _vec(buf, 1)
    theta = np.empty(z.shape[0])
    _reflect(z, v, theta)
    if kind == 0:
        value, grad_theta = marginal_logp_grad(theta, _vec(buf, 2), _mat(buf, 3), _vec(buf, 4), _vec(buf, 5)[0],
                                               _vec(buf, 6), _vec(buf, 7), _vec(buf, 8), _mat(buf, 9), _vec(buf, 10),
                                               _vec(buf, 11), _vec(buf, 12).astype(np.int64))
    else:
        value, grad_theta = holes_loglik(theta, buf, 2)
    grad = np.empty(z.shape[0])
    _reflect(grad_theta, v, grad)
    return _finish(value, grad, z, out, logp)


def _collapsed_logp(dim, x, grad, logp, data):
    buf = _buffer(data)
    z = numba.carray(x, (dim,))
    out = numba.carray(grad, (dim,))
    value = numba.carray(logp, (1,))
    return _collapsed_call(z, buf, out, value)


def _collapsed_expand(dim, n_expanded, x, out, data):
    buf = _buffer(data)
    z = numba.carray(x, (dim,))
    theta = numba.carray(out, (n_expanded,))
    _reflect(z, _vec(buf, 1), theta)
    return _OK


# ---------------------------------------------------------------------------------------------
# the joint route: (θ, b_free) = Q·z (rotated) or z itself (direct), anchors held at their values


@numba.njit(cache=True)
def _joint_unpack(z, buf, theta, b):
    """θ and every b (anchors at their value) from the sampler's coordinates z; returns the free b."""
    head = _vec(buf, 0)
    rotated, m, c, s = head[0] == 0.0, int(head[1]), head[2], head[3]
    free = _vec(buf, 10)
    n_free = free.shape[0]
    b_free = np.empty(n_free)
    if rotated:
        x_models = z[:m].copy()
        x_items = z[m:].copy()
        x_models[0] = c * z[0] + s * z[m]
        x_items[0] = s * z[0] - c * z[m]
        _reflect(x_models, _vec(buf, 1), theta)
        _reflect(x_items, _vec(buf, 2), b_free)
    else:
        theta[:] = z[:m]
        b_free[:] = z[m:]
    b[:] = _vec(buf, 9)
    for f in range(n_free):
        b[int(free[f])] = b_free[f]
    return b_free


@numba.njit(cache=True)
def _joint_call(z, buf, out, logp):
    head = _vec(buf, 0)
    rotated, m, c, s = head[0] == 0.0, int(head[1]), head[2], head[3]
    free = _vec(buf, 10)
    theta = np.empty(m)
    b = np.empty(_vec(buf, 9).shape[0])
    _joint_unpack(z, buf, theta, b)
    scalars = _vec(buf, 6)
    guessing = scalars[1] > 0.5
    # the counts enter only the guessing terms, which take them as integers
    y = _mat(buf, 3).astype(np.int64) if guessing else np.zeros((1, 1), dtype=np.int64)
    value, grad_theta, grad_b = loglik_and_grad(theta, b, y, _vec(buf, 4), _vec(buf, 5), scalars[0],
                                                _vec(buf, 7), _vec(buf, 8), guessing, scalars[2])
    grad_free = np.empty(free.shape[0])
    for f in range(free.shape[0]):
        grad_free[f] = grad_b[int(free[f])]
    grad = np.empty(z.shape[0])
    if rotated:   # Qᵀ = R·blockdiag(H_M, H_F)
        gm = np.empty(m)
        gi = np.empty(free.shape[0])
        _reflect(grad_theta, _vec(buf, 1), gm)
        _reflect(grad_free, _vec(buf, 2), gi)
        grad[:m] = gm
        grad[m:] = gi
        grad[0] = c * gm[0] + s * gi[0]
        grad[m] = s * gm[0] - c * gi[0]
    else:
        grad[:m] = grad_theta
        grad[m:] = grad_free
    return _finish(value, grad, z, out, logp)


def _joint_logp(dim, x, grad, logp, data):
    buf = _buffer(data)
    return _joint_call(numba.carray(x, (dim,)), buf, numba.carray(grad, (dim,)), numba.carray(logp, (1,)))


@numba.njit(cache=True)
def _joint_expand_call(z, buf, out):
    m = int(_vec(buf, 0)[1])
    n = _vec(buf, 9).shape[0]
    theta = np.empty(m)
    b = np.empty(n)
    b_free = _joint_unpack(z, buf, theta, b)
    out[:m] = theta
    out[m:m + n] = b
    if out.shape[0] > m + n:   # anchored: b_free stored too
        out[m + n:] = b_free


def _joint_expand(dim, n_expanded, x, out, data):
    _joint_expand_call(numba.carray(x, (dim,)), _buffer(data), numba.carray(out, (n_expanded,)))
    return _OK


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


_SOURCES = {"collapsed": (_collapsed_logp, _collapsed_expand), "joint": (_joint_logp, _joint_expand)}
_COMPILED: dict = {}


def register_pair(route: str, logp, expand) -> None:
    """Add a density's (log density, expand) pair, as plain functions of nutpie's C signatures that the kernel
    cache compiles once (the suite's correlated-abilities density registers itself this way)."""
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


def collapsed_density(data, models) -> Density:
    """The collapsed route's density for a :class:`~benchmeasure.irt.collapsed.CollapsedData` or
    :class:`~benchmeasure.irt.collapsed_holes.CollapsedHolesData` (same model as
    :func:`benchmeasure.irt.model.build_collapsed_model`)."""
    from benchmeasure.irt.model import _householder

    v = _householder(data.n_models)
    if hasattr(data, "patterns"):   # holes or K per cell
        args = data.args()
        fields = (1.0, v, *args)
    else:
        fields = (0.0, v, *data.args())
    return Density("collapsed", pack(*fields), data.n_models, (("theta", "model"),), {"model": list(models)})


def joint_density(counts, n_trials: int, guessing, *, models, items, parametrization: str = "rotated",
                  fixed_b=None) -> Density:
    """The joint route's density (same model as :func:`benchmeasure.irt.model.build_model` with the fused
    binomial kernel): stored ``theta``, ``b`` and, with anchors, ``b_free``."""
    from benchmeasure.irt.kernel import LoglikData
    from benchmeasure.irt.model import _householder

    y = np.asarray(counts, dtype=np.int64)
    n_models, n_items = y.shape
    fixed = np.full(n_items, np.nan) if fixed_b is None else np.asarray(fixed_b, dtype=float)
    free = np.flatnonzero(np.isnan(fixed))
    total = n_models + free.size
    c, s = math.sqrt(n_models / total), math.sqrt(free.size / total)
    lik = LoglikData(y, n_trials, guessing)
    head = (0.0 if parametrization == "rotated" else 1.0, n_models, c, s)
    buf = pack(head, _householder(n_models), _householder(free.size) if free.size else np.zeros(1), y,
               lik.row_sums, lik.col_sums, (lik.n_trials, float(lik.has_guessing), lik.constant), lik.g,
               lik.log_g_pos, np.nan_to_num(fixed), free.astype(float) if free.size else np.zeros(0))
    variables = (("theta", "model"), ("b", "item"))
    coords = {"model": list(models), "item": list(items)}
    if fixed_b is not None:
        variables += (("b_free", "free_item"),)
        coords["free_item"] = [items[i] for i in free]
    return Density("joint", buf, total, variables, coords)
