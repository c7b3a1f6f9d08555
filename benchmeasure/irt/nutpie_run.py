"""nutpie, run on a compiled density (:mod:`benchmeasure.irt.compiled`), its trace read into plain arrays.

Three pieces, shared by ``fit`` and ``fit-suite``:

* :func:`import_nutpie`: nutpie imports ArviZ, pandas and xarray at its top but uses them only to convert a
  finished trace and in its type annotations. While nutpie's own modules run, each of the three that is not
  loaded yet is a stand-in (:class:`_Deferred`) that hands out a placeholder class for any name; afterwards the
  stand-ins import the real module the first time nutpie asks one for a name. A fit that never needs them so
  imports none of the three (ArviZ alone is about 1.3 s, pandas and xarray about 0.5 s on the 2-core
  development machine). The placeholders are safe only in annotations; after the import every global of
  nutpie's modules (and of their classes) is checked, and if a placeholder was kept anywhere else nutpie is
  imported again, plainly.
* :func:`sample_nutpie`: sampling to the end, Ctrl-C stopping it at once.
* :func:`trace_draws`: nutpie's raw Arrow trace as a :class:`~benchmeasure.irt.draws.Draws`.
"""

from __future__ import annotations

import sys
import threading
import types as types_module

import numpy as np

_DEFERRED = ("arviz", "pandas", "xarray")


class _Placeholder(type):
    """The type of the classes a stand-in hands out while nutpie is imported: usable in annotations (``X | Y``,
    ``list[X]``), refused as a base class or a constructor."""

    def __call__(cls, *args, **kwargs):
        raise TypeError(f"{cls.__name__} is a placeholder while nutpie is imported")


class _Deferred(types_module.ModuleType):
    """Stands in for a module while nutpie is imported (placeholders for every name), then for the module
    itself (any name asked for imports it). ``arviz``'s trace conversion names come from ``arviz_base``, which
    is what ArviZ itself uses for them, so asking for those does not load ArviZ's statistics and plots."""

    def __init__(self, name: str):
        super().__init__(name)
        self._importing = True

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if self.__dict__.get("_importing"):
            def refuse(cls, **kwargs):
                raise TypeError(f"{cls.__name__} is a placeholder while nutpie is imported")

            return _Placeholder(f"{self.__name__}.{name}", (), {"__init_subclass__": classmethod(refuse)})
        import importlib

        if self.__name__ == "arviz" and name in ("from_dict", "dict_to_dataset"):
            return getattr(importlib.import_module("arviz_base"), name)
        return getattr(importlib.import_module(self.__name__), name)


def _keeps_placeholder(module) -> bool:
    """Whether a placeholder is held anywhere but in an annotation: a global of ``module`` or an attribute of
    one of its classes."""
    for value in list(vars(module).values()):
        if isinstance(value, _Placeholder):
            return True
        if isinstance(value, type) and value.__module__ == module.__name__:
            if any(isinstance(v, _Placeholder) for v in vars(value).values()):
                return True
    return False


_IMPORTING = threading.Lock()   # the stand-ins are process-wide: one import at a time


def import_nutpie():
    """The ``nutpie`` module, imported without loading ArviZ, pandas or xarray (see the module docstring)."""
    with _IMPORTING:
        return _import_nutpie()


def _import_nutpie():
    if "nutpie" in sys.modules:
        return sys.modules["nutpie"]
    stand_ins = {name: _Deferred(name) for name in _DEFERRED if name not in sys.modules}
    sys.modules.update(stand_ins)
    try:
        import nutpie
    except (TypeError, ImportError):   # a placeholder used for more than an annotation, a submodule asked for
        nutpie = None
    finally:
        for name, stand_in in stand_ins.items():
            stand_in._importing = False
            if sys.modules.get(name) is stand_in:   # later imports of these get the modules themselves
                del sys.modules[name]
    if nutpie is None or any(_keeps_placeholder(m) for name, m in list(sys.modules.items())
                             if name == "nutpie" or name.startswith("nutpie.")):
        for name in [n for n in sys.modules if n == "nutpie" or n.startswith("nutpie.")]:
            del sys.modules[name]
        import nutpie
    return nutpie


def sample_nutpie(nutpie, compiled, **options):
    """``nutpie.sample(compiled, **options)`` to the end, as a :class:`~benchmeasure.irt.draws.Draws`
    (:func:`trace_draws`); Ctrl-C stops it and raises.

    nutpie's own blocking wait turns Ctrl-C into a partial trace (the fit ran on with it), so the sampler is
    started in the background and waited for here. While it is being started (nutpie's threads spawned, their
    initial points drawn) Ctrl-C is held (``base/interrupt.held``) and acted on once the handle exists, so the
    sampler is always cancelled rather than left running or dropped half-made: a Ctrl-C in that window once left a
    fit running (``tests/test_interrupt.py``, about 1 run in 200)."""
    from benchmeasure.base.interrupt import held

    sampler = None
    try:
        with held():
            sampler = nutpie.sample(compiled, blocking=False, return_raw_trace=True, **options)
        return trace_draws(sampler.wait(), compiled, int(options["draws"]))
    except KeyboardInterrupt:
        if sampler is not None:
            sampler.cancel()
        raise


def trace_draws(trace, compiled, draws: int):
    """nutpie's finished trace (Arrow record batches per chain: the stored variables, and the sampler's statistics
    with a ``tuning`` flag per row) as a :class:`~benchmeasure.irt.draws.Draws` of the kept draws; its
    :meth:`~benchmeasure.irt.draws.Draws.tree` is what nutpie's own conversion gives, but for the text statistic
    ``divergence_message`` (``tests/test_compiled_density.py``).

    nutpie's own conversion builds warm-up groups too and goes through ArviZ's general ``from_dict``; this reads
    each column once. Kept: every stored variable, in the shape and dims its Arrow field records, with the
    model's coordinates; every numeric statistic with one value per draw (vector statistics are not stored by
    default; text ones are dropped, as :func:`benchmeasure.irt.fit_folder.save_posterior_zarr` drops them)."""
    import pyarrow as pa

    from benchmeasure.irt.draws import Draws

    draw_batches, stat_batches = trace.get_arrow_trace()
    posterior, stats = {}, {}
    for chain, (draw, stat) in enumerate(zip(draw_batches, stat_batches)):
        draw, stat = pa.record_batch(draw), pa.record_batch(stat)
        tuning = _numbers(stat.column("tuning"))
        kept = np.flatnonzero(~tuning)
        if kept.size != draws:
            raise RuntimeError(f"nutpie returned {kept.size} draws for chain {chain}, not {draws}")
        for field, column in zip(draw.schema, draw.columns):
            meta = field.metadata or {}
            shape = tuple(int(v) for v in meta.get(b"shape", b"").decode().split(",") if v)
            dims = tuple(d for d in meta.get(b"dims", b"").decode().split(",") if d)
            values = _flat(column).reshape(len(tuning), *shape)[kept]
            posterior.setdefault(field.name, (dims, []))[1].append(values)
        for field, column in zip(stat.schema, stat.columns):
            kind = field.type
            if field.name in ("chain", "draw") or not (
                    pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
                continue
            stats.setdefault(field.name, []).append(_numbers(column)[kept])
    variables = {}
    for name, (dims, chains) in posterior.items():
        dims = dims or tuple(f"{name}_dim_{i}" for i in range(chains[0].ndim - 1))
        variables[name] = (dims, np.stack(chains))
    used = {d for dims, _ in variables.values() for d in dims}
    coords = {name: list(values) for name, values in (compiled.coords or {}).items() if name in used}
    return Draws(variables, coords, {name: np.stack(chains) for name, chains in stats.items()})


def _flat(column) -> np.ndarray:
    """A column of draws (a list per row, every row of one shape, or a number per row) as one flat array."""
    import pyarrow as pa

    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        offsets = _numbers(column.offsets)   # (flatten() would load pyarrow.compute)
        return _numbers(column.values)[offsets[0]: offsets[-1]]
    return _numbers(column)


def _numbers(column) -> np.ndarray:
    """An Arrow column of fixed-width numbers or flags as a NumPy array of the same type, read from its buffers;
    a missing value is NaN in a float column, 0 (False) in an integer (flag) column. (pyarrow's own
    ``to_numpy`` imports pandas.)"""
    import pyarrow as pa

    kind, n, offset = column.type, len(column), column.offset
    validity, data = column.buffers()[:2]
    if pa.types.is_boolean(kind):
        values = _bits(data, offset, n)
    else:
        width = kind.bit_width
        dtype = np.dtype(f"float{width}" if pa.types.is_floating(kind) else
                         f"int{width}" if pa.types.is_signed_integer(kind) else f"uint{width}")
        values = np.frombuffer(data, dtype=dtype, count=offset + n)[offset:]
    if validity is not None and column.null_count:
        values = values.copy()
        values[~_bits(validity, offset, n)] = np.nan if values.dtype.kind == "f" else 0
    return values


def _bits(buffer, offset: int, n: int) -> np.ndarray:
    """``n`` flags from an Arrow bitmap (least significant bit first) from bit ``offset``."""
    bits = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")
    return bits[offset: offset + n].astype(bool)


def nutpie_model(density):
    """The density (:class:`~benchmeasure.irt.compiled.Density`) as a nutpie compiled model (nutpie's own
    numba-backed model class, our functions)."""
    from benchmeasure.irt.compiled import compiled_pair

    import_nutpie()
    from nutpie.compile_pymc import CompiledPyMCModel

    logp_fn, expand_fn = compiled_pair(density.route)
    names = [name for name, _ in density.variables]
    shapes = [density.shape(dims) for _, dims in density.variables]
    n_dim = density.n_dim

    def initial_point(seed):   # PyMC's default for nutpie: the prior's centre 0 with U(−1, 1) jitter
        return np.random.default_rng(seed).uniform(-1.0, 1.0, n_dim)

    buffer = density.buffer
    buffer.flags.writeable = False
    return CompiledPyMCModel(
        _n_dim=n_dim, dims={name: (d,) if isinstance(d, str) else tuple(d) for name, d in density.variables},
        _coords={k: _labels_for_nutpie(v) for k, v in density.coords.items()},
        _shapes=dict(zip(names, shapes)), compiled_logp_func=logp_fn, compiled_expand_func=expand_fn,
        initial_point_func=initial_point, shared_data={}, shared_var_keys={}, user_data=buffer,
        n_expanded=density.n_expanded, shape_info=(names, None, shapes), logp_func=None, expand_func=None)


def _labels_for_nutpie(labels):
    """Coordinate labels in a form nutpie's sampler takes without pandas: a list of strings or an int64 array
    (other labels as their text)."""
    labels = list(labels)
    if all(isinstance(v, str) for v in labels):
        return labels
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in labels):
        return np.asarray(labels, dtype=np.int64)
    return [str(v) for v in labels]

