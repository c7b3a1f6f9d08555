"""Posterior uncertainty of DDM, Max Gap and the Top-k Gap Sum (beyond the paper).

The paper reports the metrics at the posterior mean of each item's difficulty. Here they
are computed for every posterior draw of the difficulty vector b (each draw min–max
normalized on its own, exactly as :mod:`benchmeasure.core.metrics` does for one vector), which
gives a posterior distribution per metric; we report its mean, median and the central
94% interval (the 3% and 97% quantiles: an equal-tailed interval, ArviZ's default
probability).

:func:`metric_draws` is a NumPy transcription of :mod:`benchmeasure.core.metrics` over a batch
of draws — the stdlib version takes minutes at 4,000 draws × 4,000 items — and
``tests/test_posterior_metrics.py`` checks that both agree draw by draw.

A saved posterior is read from either

* a zarr store written by ArviZ/xarray — what ``fit_irt.py --save-posterior`` writes
  (``posterior.zarr``, a folder),
* a NetCDF file written by ArviZ/xarray (``posterior`` group, variable ``b`` with dims
  (chain, draw, item); needs the netCDF4 or h5netcdf package),
* a NumPy ``.npz`` with an array ``b`` of shape (chain, draw, item) or (draw, item) and,
  optionally, an array ``items`` of item IDs, or
* a CSV of draws: a header of item IDs, one row per draw.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from benchmeasure.base.csv_table import read_table, table_kind
from benchmeasure.base.errors import InputError, fail

PROBABILITY = 0.94


def _sorted_unit(b, low, high):
    """Each draw min-max normalized to [0, 1] and sorted; a range past the largest float (-1e308 … 1e308)
    is mapped on halves, which cannot overflow."""
    with np.errstate(over="ignore"):
        span = high - low
    wide = ~np.isfinite(span[:, 0])
    z = np.empty_like(b)
    z[~wide] = (b[~wide] - low[~wide]) / span[~wide]
    z[wide] = (b[wide] / 2 - low[wide] / 2) / (high[wide] / 2 - low[wide] / 2)
    return np.sort(np.clip(z, 0.0, 1.0), axis=1)


def metric_draws(b_draws, top_k: int = 5) -> dict:
    """DDM, Max Gap and Top-k Gap Sum of each draw.

    Parameters
    ----------
    b_draws : array_like, shape (D, N)
        D posterior draws of N unnormalized difficulties (N ≥ 2).
    top_k : int

    Returns
    -------
    dict of str → ndarray of shape (D,)
        ``ddm``, ``max_gap`` and ``top{k}_gap_sum``.
    """
    b = np.asarray(b_draws, dtype=float)
    if b.ndim != 2 or b.shape[1] < 2:
        fail(f"posterior draws must have shape (draws, items ≥ 2), got {b.shape}")
    if not np.all(np.isfinite(b)):
        fail("posterior draws contain a value that is not finite")
    low, high = b.min(axis=1, keepdims=True), b.max(axis=1, keepdims=True)
    if np.any(high <= low):
        fail(f"draw {int(np.flatnonzero(high[:, 0] <= low[:, 0])[0])}: all difficulties equal; "
             "min-max normalization is undefined")
    return sorted_unit_metrics(_sorted_unit(b, low, high), top_k)


def sorted_unit_metrics(z, top_k: int = 5) -> dict:
    """DDM, Max Gap and Top-k Gap Sum of rows ``z`` (D, N) already min–max normalized to [0, 1] and sorted: one
    compiled pass per row (:func:`benchmeasure.analyses.kernels.sorted_metrics`), with no sort of the gaps."""
    from benchmeasure.analyses.kernels import sorted_metrics

    z = np.ascontiguousarray(z, dtype=float)
    out = {name: np.empty(z.shape[0]) for name in ("ddm", "max_gap", f"top{top_k}_gap_sum")}
    sorted_metrics(z, int(top_k), out["ddm"], out["max_gap"], out[f"top{top_k}_gap_sum"])
    return out


@dataclass(frozen=True)
class Interval:
    """Posterior summary of one metric."""

    mean: float
    median: float
    low: float
    high: float
    probability: float

    def as_dict(self) -> dict:
        return {"mean": self.mean, "median": self.median, "low": self.low, "high": self.high,
                "probability": self.probability}


def summarize_draws(values, probability: float = PROBABILITY) -> Interval:
    """Mean, median and central ``probability`` interval of ``values`` (shape (D,))."""
    values = np.asarray(values, dtype=float)
    tail = (1 - probability) / 2
    low, median, high = np.quantile(values, [tail, 0.5, 1 - tail])
    return Interval(float(values.mean()), float(median), float(low), float(high), probability)


def posterior_intervals(b_draws, top_k: int = 5, probability: float = PROBABILITY) -> dict:
    """``{metric: Interval}`` for the metrics of :func:`metric_draws`."""
    if not 0 < probability < 1:
        fail(f"the interval probability (--hdi-prob) must lie in (0, 1), got {probability}")
    return {name: summarize_draws(v, probability) for name, v in metric_draws(b_draws, top_k).items()}


def ecdf_band(b_draws, grid, probability: float = PROBABILITY) -> tuple:
    """Pointwise central ``probability`` band of the ECDF of normalized difficulties over the draws.

    Each draw of b is min–max normalized on its own (as :func:`metric_draws`) and its ECDF
    F_d(x) = #{z_i ≤ x}/N evaluated at ``grid``; the band is the equal-tailed quantiles of
    F_d(x) across draws at each x.

    Parameters
    ----------
    b_draws : array_like, shape (D, N)
    grid : array_like, shape (G,)
        Points of [0, 1].

    Returns
    -------
    (ndarray, ndarray)
        Lower and upper band, each of shape (G,).
    """
    b = np.asarray(b_draws, dtype=float)
    low, high = b.min(axis=1, keepdims=True), b.max(axis=1, keepdims=True)
    if np.any(high <= low):
        fail("a posterior draw has all difficulties equal; min-max normalization is undefined")
    z = _sorted_unit(b, low, high)
    x = np.asarray(grid, dtype=float)
    values = np.stack([np.searchsorted(row, x, side="right") for row in z]) / z.shape[1]
    tail = (1 - probability) / 2
    lower, upper = np.quantile(values, [tail, 1 - tail], axis=0)
    return lower, upper


def input_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file, or of a folder (a zarr store): every file's relative path and bytes, in sorted order."""
    import hashlib

    from benchmeasure.base.files import sha256_file

    path = os.fspath(path)
    if not os.path.isdir(path):
        return sha256_file(path)
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            digest.update(os.path.relpath(full, path).encode() + b"\0")
            digest.update(sha256_file(full).encode())
    return digest.hexdigest()


def read_posterior_b(path: str | os.PathLike, variable: str = "b") -> tuple[list, np.ndarray]:
    """Item IDs and difficulty draws, shape (D, N), from a zarr/NetCDF posterior, an .npz or a CSV of draws."""
    path = os.fspath(path).rstrip("/")
    if os.path.isdir(path) and not path.endswith(".zarr") and os.path.isdir(os.path.join(path, "posterior.zarr")):
        path = os.path.join(path, "posterior.zarr")  # a fit folder saved with --save-posterior
    if path.endswith(".zarr") and os.path.isdir(path):
        return _read_datatree(path, variable, "zarr")
    if not os.path.isfile(path):
        fit_folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
        if os.path.isfile(os.path.join(fit_folder, "difficulty.csv")):
            fail(f"{path}: no posterior draws: the fit in {fit_folder} was saved without them; refit with "
                 "benchmeasure fit … --save-posterior (it writes posterior.zarr)")
        fail(f"{path}: is a folder; give posterior.zarr, an .nc, an .npz or a CSV of draws" if os.path.isdir(path)
             else f"{path}: no such file")
    if path.endswith((".nc", ".netcdf", ".h5")):
        return _read_datatree(path, variable, None)
    if path.endswith(".npz"):
        return _read_npz(path, variable)
    table = read_table(path, expected="a header of item IDs, then one row of draws per line")
    kind = table_kind(table.header)
    if kind:
        fail(f"{path}: not a CSV of posterior draws; this is {kind}. The posterior is the fit folder's posterior.zarr "
             "(benchmeasure fit … --save-posterior; then benchmeasure posterior-metrics FIT_FOLDER)")
    if not table.rows:
        fail(f"{path}: expected a header of item IDs and at least one row of draws")
    items = table.header
    draws = []
    for r, row in enumerate(table.rows):
        try:
            values = [float(cell) for cell in row]
        except ValueError:
            bad = next(k for k, cell in enumerate(row) if not _is_float(cell))
            fail(f"{table.where(r, items[bad])}: {row[bad][:40]!r} is not a number")
        if not all(math.isfinite(v) for v in values):
            bad = next(k for k, v in enumerate(values) if not math.isfinite(v))
            fail(f"{table.where(r, items[bad])}: {row[bad]!r} is not a finite number")
        draws.append(values)
    return items, np.asarray(draws, dtype=float)


def has_draws(path: str | os.PathLike, variable: str) -> bool:
    """Whether the posterior at ``path`` (as :func:`read_posterior_b` takes it) holds draws of ``variable``: a zarr or
    NetCDF posterior group, or an .npz archive, with that name; a CSV of draws holds one variable, b, only. False
    where the file cannot be read: :func:`read_posterior_b` then says why."""
    import zipfile

    path = os.fspath(path).rstrip("/")
    if os.path.isdir(path) and not path.endswith(".zarr") and os.path.isdir(os.path.join(path, "posterior.zarr")):
        path = os.path.join(path, "posterior.zarr")
    try:
        if path.endswith(".npz") and os.path.isfile(path):
            with np.load(path, allow_pickle=False) as archive:
                return variable in archive.files
        if (path.endswith(".zarr") and os.path.isdir(path)) or path.endswith((".nc", ".netcdf", ".h5")):
            import xarray as xr

            tree = xr.open_datatree(path, engine="zarr" if path.endswith(".zarr") else None)
            return "posterior" in tree.children and variable in tree["posterior"].to_dataset()
    except (OSError, ValueError, KeyError, AttributeError, EOFError, zipfile.BadZipFile):
        return False
    return False


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_npz(path: str, variable: str) -> tuple[list, np.ndarray]:
    """Draws from an .npz archive: ``variable`` of shape (chain, draw, item) or (draw, item), optional ``items``."""
    import zipfile

    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        fail(f"{path}: cannot read as .npz ({' '.join(str(exc).split())[:200]})")
    if not isinstance(archive, np.lib.npyio.NpzFile):
        fail(f"{path}: a single .npy array, not an .npz archive of named arrays (save with numpy.savez)")
    try:
        with archive:
            if variable not in archive.files:
                fail(f"{path}: no array {variable!r} (arrays: {', '.join(archive.files)})")
            raw = archive[variable]
            if not isinstance(raw, np.ndarray):
                fail(f"{path}: member {variable!r} is not a NumPy array (save the draws with numpy.savez)")
            if raw.dtype.kind not in "iuf":
                fail(f"{path}: array {variable!r} holds {raw.dtype} values, expected numbers")
            b = np.asarray(raw, dtype=float)
            if b.ndim not in (2, 3) or b.size == 0:
                fail(f"{path}: array {variable!r} has shape {b.shape}; expected (chain, draw, item) or (draw, item)")
            b = b.reshape(-1, b.shape[-1])
            if "items" in archive.files:
                ids = archive["items"]
                if ids.ndim != 1 or ids.dtype.kind not in "iuUS":
                    fail(f"{path}: array 'items' must be one-dimensional IDs, found {ids.dtype} of shape {ids.shape}")
                items = [str(v) for v in ids]
            else:
                items = [str(i) for i in range(b.shape[1])]
    except InputError:
        raise
    except (OSError, ValueError, EOFError, AttributeError, zipfile.BadZipFile) as exc:
        fail(f"{path}: cannot read as .npz ({' '.join(str(exc).split())[:200]})")
    if len(items) != b.shape[1]:
        fail(f"{path}: {len(items)} item IDs for {b.shape[1]} items")
    if not np.isfinite(b).all():
        draw, item = np.argwhere(~np.isfinite(b))[0]
        fail(f"{path}: array {variable!r} draw {draw}, item {items[item]!r} is {b[draw, item]}, not a finite number")
    return items, b


def _read_datatree(path: str, variable: str, engine: str | None) -> tuple[list, np.ndarray]:
    import xarray as xr

    try:
        tree = xr.open_datatree(path, engine=engine)
    except (OSError, ValueError, KeyError) as exc:
        fail(f"{path}: cannot read as {'zarr' if engine else 'NetCDF'} ({' '.join(str(exc).split())})")
    if "posterior" not in tree.children:
        fail(f"{path}: no 'posterior' group (groups: {', '.join(tree.children) or 'none'})")
    posterior = tree["posterior"].to_dataset()
    if variable not in posterior:
        fail(f"{path}: posterior has no variable {variable!r} (variables: {', '.join(map(str, posterior))})")
    b = posterior[variable]
    item_dim = next((d for d in b.dims if d not in ("chain", "draw")), None)
    if item_dim is None:
        fail(f"{path}: posterior variable {variable!r} has no item dimension")
    stacked = b.stack(sample=[d for d in ("chain", "draw") if d in b.dims]).transpose("sample", item_dim)
    items = [str(v) for v in b[item_dim].values]
    return items, np.asarray(stacked.values, dtype=float)
