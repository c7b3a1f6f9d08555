"""A posterior sample as plain arrays, with the ArviZ DataTree of the same built only when something asks for it.

The array layer under the fit's conveniences: every stored variable as a NumPy array laid out (chain, draw, …)
with the names of its other dimensions, the coordinates (labels) of those dimensions, and the sampler's per-draw
statistics (chain, draw). A default fit reads its draws, summaries and diagnostics from here, so it never imports
xarray or pandas (about half a second of a small fit's wall time on the 2-core development machine); the
DataTree (:meth:`Draws.tree`) is made the first time a reader asks for one, for example to save
``posterior.zarr``. Until then a :class:`Draws` also answers as that DataTree would (``draws["posterior"]``,
``draws.posterior``, ``"posterior" in draws.children``): it builds the tree and hands the request on.
"""

from __future__ import annotations

import numpy as np


class Draws:
    """``variables``: name → (dims other than chain and draw, array (chain, draw, …)); ``coords``: dim → labels;
    ``stats``: sampler statistic → array (chain, draw); ``attrs``: the posterior group's attributes."""

    def __init__(self, variables: dict, coords: dict | None = None, stats: dict | None = None,
                 attrs: dict | None = None):
        self.variables = dict(variables)
        self.coords = {k: list(v) for k, v in (coords or {}).items()}
        self.stats = dict(stats or {})
        self.attrs = dict(attrs or {})
        self._tree = None

    @classmethod
    def of(cls, posterior) -> Draws:
        """``posterior`` itself when it is a :class:`Draws`; for an ArviZ DataTree, a :class:`Draws` viewing its
        ``posterior`` and ``sample_stats`` groups (arrays as stored, no copy where the layout allows)."""
        if isinstance(posterior, Draws):
            return posterior
        group = posterior["posterior"] if "posterior" in posterior.children else posterior.posterior
        variables, coords = {}, {}
        for name in group.data_vars:
            array = group[name]
            dims = tuple(d for d in array.dims if d not in ("chain", "draw"))
            variables[name] = (dims, np.asarray(array.transpose("chain", "draw", *dims).values))
            for d in dims:
                coords[d] = (list(np.asarray(array.coords[d].values)) if d in array.coords
                             else list(range(array.sizes[d])))
        try:
            stats_group = posterior["sample_stats"]
            stats = {name: np.asarray(stats_group[name].values) for name in stats_group.data_vars
                     if stats_group[name].dims == ("chain", "draw")}
        except KeyError:
            stats = {}
        out = cls(variables, coords, stats, dict(group.attrs))
        out._tree = posterior
        return out

    # -- the array layer --------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, int]:
        """(chains, draws per chain)."""
        first = next(iter(self.variables.values()))[1]
        return first.shape[0], first.shape[1]

    def names(self) -> list:
        return list(self.variables)

    def values(self, name: str) -> np.ndarray:
        """The draws of ``name`` as stored: (chain, draw, …)."""
        return self.variables[name][1]

    def dims(self, name: str) -> tuple:
        return self.variables[name][0]

    def labels(self, name: str) -> list:
        """``name[label]`` for every element of ``name``, in flat order (one label per dimension)."""
        dims = self.dims(name)
        if not dims:
            return [name]
        grids = np.meshgrid(*[np.asarray(self._coord(d), dtype=object) for d in dims], indexing="ij")
        flat = [g.ravel() for g in grids]
        return [f"{name}[{', '.join(str(f[k]) for f in flat)}]" for k in range(flat[0].size)]

    def _coord(self, dim: str) -> list:
        if dim in self.coords:
            return self.coords[dim]
        for dims, values in self.variables.values():
            if dim in dims:
                return list(range(values.shape[2 + dims.index(dim)]))
        raise KeyError(dim)

    def with_variable(self, name: str, dims: tuple, values: np.ndarray, coords: dict | None = None) -> Draws:
        """A copy with ``name`` added (or replaced); the arrays are shared, not copied."""
        return Draws({**self.variables, name: (tuple(dims), values)}, {**self.coords, **(coords or {})},
                     self.stats, self.attrs)

    def keep(self, names) -> Draws:
        """A copy with only ``names`` among the variables (in their order)."""
        if list(self.variables) == list(names):
            return self
        used = {d for n in names for d in self.variables[n][0]}
        return Draws({n: self.variables[n] for n in names}, {d: v for d, v in self.coords.items() if d in used},
                     self.stats, self.attrs)

    # -- the DataTree, when asked for -------------------------------------------------------------------

    def tree(self):
        """The ArviZ DataTree (``posterior`` and ``sample_stats`` groups) of these draws, made once."""
        if self._tree is None:
            import xarray as xr

            n_chains, n_draws = self.shape
            chain_draw = {"chain": np.arange(n_chains), "draw": np.arange(n_draws)}
            used = {d for dims, _ in self.variables.values() for d in dims}
            posterior = xr.Dataset({name: (("chain", "draw", *dims), values)
                                    for name, (dims, values) in self.variables.items()},
                                   coords={**chain_draw, **{d: v for d, v in self.coords.items() if d in used}},
                                   attrs=self.attrs)
            groups = {"posterior": posterior}
            if self.stats:
                groups["sample_stats"] = xr.Dataset({name: (("chain", "draw"), values)
                                                     for name, values in self.stats.items()}, coords=chain_draw)
            self._tree = xr.DataTree.from_dict(groups)
        return self._tree

    def __getitem__(self, key):
        return self.tree()[key]

    def __contains__(self, key):
        return key in self.tree()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.tree(), name)
