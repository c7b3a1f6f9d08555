"""The fit folder, written once here: ``difficulty.csv``, ``ability.csv``, ``diagnostics.json`` (and
``posterior.zarr`` with ``--save-posterior``), as ``benchmeasure fit`` (``scripts/fit_irt.py``) leaves them.

* ``difficulty.csv`` — ``item,b_mean,b_sd,r_hat,ess_bulk`` (plus ``fixed`` for an anchored fit), one row per
  item in matrix order; ``ability.csv`` — ``model,theta_mean,theta_sd,r_hat,ess_bulk``. A figure a method
  does not give (MAP has no b_sd) is an empty cell, never NaN.
* ``diagnostics.json`` — :func:`benchmeasure.irt.plan.fit_record`, the one record of a fit: convergence (the
  paper's Tables 6/9/10 report ``max_r_hat``, ``min_ess_bulk`` and ``divergences``), the settings, the input's
  sha256, constant items and models, timing, warnings, package versions and the command line. Non-finite numbers are
  written as null.
* ``posterior.zarr`` — the ArviZ DataTree of θ and b draws (:func:`save_posterior_zarr`).
* ``check_fit/`` — the model-fit check of the fit (``items.csv``, ``models.csv``, ``check_fit.json``), written by the
  fit command unless ``--no-check-fit`` (:mod:`benchmeasure.analyses.fit_check_outputs`).

:func:`write_fit_folder` writes everything into a staging folder first and then moves each file into place,
so a folder holds one fit's outputs or the previous fit's, and a refit without ``--save-posterior`` removes
an older ``posterior.zarr`` that would otherwise be read as this fit's.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmeasure.base.files import (
    atomic_write,
    make_parents,
    remove_empty_folders,
    write_json,
)
from benchmeasure.core.fit_check_text import CHECK_FOLDER

POSTERIOR_NAME = "posterior.zarr"  # the posterior draws beside a fit's CSVs (benchmeasure fit --save-posterior)
DIFFICULTY_COLUMNS = ["item", "b_mean", "b_sd", "r_hat", "ess_bulk"]
ABILITY_COLUMNS = ["model", "theta_mean", "theta_sd", "r_hat", "ess_bulk"]
#: Every file a fit may write into its folder; a refit replaces them all or removes the stale ones.
OUTPUTS = ("difficulty.csv", "ability.csv", "diagnostics.json")
#: Subfolders a fit may write (analyses of the fit: ``check_fit/``, the model-fit check); likewise replaced or removed.
SUBFOLDERS = (CHECK_FOLDER,)


def _cell(value, digits: int = 6) -> str:
    """A CSV cell: empty for a missing figure (None or NaN), else a compact float."""
    if value is None or not math.isfinite(float(value)):
        return ""
    return f"{float(value):.{digits}g}"


def json_safe(value):
    """``value`` with numpy scalars made Python numbers and every non-finite float made None (JSON null)."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def tail_ess_summary(result, progress=None) -> dict:
    """``min_ess_tail`` and ``worst_ess_tail`` over θ and b (tail ESS of the 5 % and 95 % quantiles), beside
    the bulk ESS: how well the posterior intervals are resolved. None for a fit without draws (MAP).

    The draws are read in their stored type (float32 b on the collapsed route) and summarized a chunk of
    parameters at a time (:func:`~.diagnostics.ess_tail`): at 12 × 41,871 with 4,000 draws a float64 copy of
    every b draw (1.3 GB) and the FFT of every indicator at once (two of 5.4 GB) are never made."""
    if result.posterior is None:
        return {"min_ess_tail": None, "worst_ess_tail": None}
    from benchmeasure.irt.diagnostics import ess_tail
    from benchmeasure.irt.draws import Draws

    posterior = Draws.of(result.posterior)
    worst, where = None, None
    for var in ("theta", "b"):
        if var not in posterior.variables:
            continue
        values = posterior.values(var)   # (chain, draw, element), as stored

        def on_chunk(done, total, var=var):
            if progress is not None:
                progress.update(f"tail ESS of {var}", done, total)

        known = getattr(result, "ess_tail" if var == "b" else "theta_ess_tail", None)
        tails = known if known is not None else ess_tail(values, on_chunk=on_chunk)
        if np.any(np.isfinite(tails)):
            k = int(np.nanargmin(tails))
            if worst is None or tails[k] < worst:
                worst, where = float(tails[k]), posterior.labels(var)[k]
    return {"min_ess_tail": worst, "worst_ess_tail": where}


def _write_csv(path: Path, columns: list, rows) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)


def _rows(names, table: dict, fixed: set | None = None):
    """CSV rows from a FitResult table (:meth:`~.fit.FitResult.difficulty_columns`): mean to 8 digits, ESS to 5."""
    columns = [table[c] for c in list(table)[1:]]
    for name, mean, sd, r_hat, ess, *extra in zip(names, *columns):   # extra: the 2PL's a_mean, a_sd
        row = [name, _cell(mean, 8), _cell(sd), _cell(r_hat), _cell(ess, 5)] + [_cell(v) for v in extra]
        yield row + ([str(name in fixed).lower()] if fixed else [])


def write_fit_folder(out_dir: Path, result, record: dict, save_posterior: bool, progress=None,
                     subfolders: dict | None = None) -> None:
    """Write every output to a staging folder inside ``out_dir`` first, then move each into place.

    ``progress`` (a :class:`~.progress.Progress`, optional) names each file as it is written (in a log it
    repeats its line every few seconds, so a long write of ``posterior.zarr`` shows it is alive).
    ``subfolders`` maps a name of :data:`SUBFOLDERS` to ``write(folder, staging)``, which writes that subfolder's
    files (an analysis of this fit, such as its model-fit check) once the fit's own files are in ``staging``; a
    subfolder of :data:`SUBFOLDERS` this fit does not write is removed, an earlier fit's."""
    def phase(name, done=0, total=0):
        if progress is not None:
            progress.update(name, done, total)

    out_dir = Path(out_dir)
    created = make_parents(out_dir)   # removed again (when empty) if the writing stops, Ctrl-C included
    staging = Path(tempfile.mkdtemp(prefix=".fit_irt.", dir=out_dir))
    try:
        fixed = set(result.settings.get("fixed_items") or ())
        phase("writing difficulty.csv, ability.csv, diagnostics.json")
        slopes = ["a_mean", "a_sd"] if getattr(result, "a_mean", None) is not None else []
        _write_csv(staging / "difficulty.csv", DIFFICULTY_COLUMNS + slopes + (["fixed"] if fixed else []),
                   _rows(result.items, result.difficulty_columns(), fixed))
        _write_csv(staging / "ability.csv", ABILITY_COLUMNS,
                   _rows(result.models, result.ability_columns()))
        write_json(staging / "diagnostics.json", record)
        for name, write in (subfolders or {}).items():
            phase(f"writing {name}/")
            write(staging / name, staging)
        target = out_dir / POSTERIOR_NAME
        if save_posterior and result.posterior is not None:
            phase(f"writing {POSTERIOR_NAME}")
            save_posterior_zarr(result.posterior, staging / POSTERIOR_NAME)
            # everything is complete: move into place (the posterior first, diagnostics.json last)
            if target.exists():
                os.replace(target, staging / "old-posterior")
            os.replace(staging / POSTERIOR_NAME, target)
        elif target.is_dir() and not target.is_symlink():  # an earlier fit's posterior would be read as this one's
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        for name in SUBFOLDERS:   # the fit's analyses next, diagnostics.json still last
            _replace(staging / name if name in (subfolders or {}) else None, out_dir / name, staging / f"old-{name}")
        for name in OUTPUTS:
            os.replace(staging / name, out_dir / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        remove_empty_folders(created)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _replace(new: Path | None, target: Path, old: Path) -> None:
    """Move the folder ``new`` to ``target`` (what was there moves to ``old``, in the staging folder); with ``new``
    None remove ``target``."""
    if target.exists() or target.is_symlink():
        if target.is_dir() and not target.is_symlink():
            os.replace(target, old)
        else:
            target.unlink()
    if new is not None:
        os.replace(new, target)


#: Items per zarr chunk of a draws variable: (chains, draws, 1024) float32 is 16 MB at 4 × 1,000 draws.
ZARR_CHUNK = 1024


def save_posterior_zarr(posterior, path: Path) -> None:
    """The posterior DataTree (theta, b and sampler statistics) as a zarr store ArviZ reads back.

    Draws variables are stored in chunks of :data:`ZARR_CHUNK` along their last dimension (items, models), so
    zarr encodes one chunk at a time from the arrays in memory, in their stored type (float32 b draws stay
    float32), instead of one chunk holding every draw."""
    import warnings

    tree = posterior.copy()
    if "sample_stats" in tree.children:
        stats = tree["sample_stats"].to_dataset()
        drop = [name for name, var in stats.data_vars.items() if var.dtype == object]
        if drop:
            tree["sample_stats"] = stats.drop_vars(drop)
    encoding = {}
    for group, node in tree.subtree_with_keys:
        chunked = {name: {"chunks": (*var.shape[:-1], min(ZARR_CHUNK, var.shape[-1]))}
                   for name, var in node.to_dataset().data_vars.items()
                   if var.ndim >= 3 and var.dims[:2] == ("chain", "draw")}
        if chunked:
            encoding["/" if group == "." else "/" + group] = chunked
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.to_zarr(path, mode="w", encoding=encoding)


@dataclass(frozen=True)
class FitFolder:
    """A fit folder as :func:`write_fit_folder` leaves it, read back by :func:`read_fit_folder`.

    ``diagnostics`` is its ``diagnostics.json``; ``posterior`` the path of its ``posterior.zarr`` when *this*
    fit wrote one, else None, and ``posterior_note`` says why (or where it is). :meth:`difficulty` reads its
    ``difficulty.csv`` (when a caller has checked the rest).
    """

    folder: str
    diagnostics: dict
    posterior: str | None
    posterior_note: str

    def difficulty(self):
        """The posterior-mean column of ``difficulty.csv`` (``core.difficulty_file.read_difficulty_column``)."""
        from benchmeasure.core.difficulty_file import read_difficulty_column

        return read_difficulty_column(os.path.join(self.folder, "difficulty.csv"))


def read_fit_folder(folder, name: str | None = None) -> FitFolder:
    """Read the outputs of ``benchmeasure fit`` in ``folder``; one InputError line for anything missing or foreign.

    ``name`` is how messages refer to the folder (a command passes its flag, e.g. ``--fit-dir DIR``).
    """
    from benchmeasure.base.errors import fail

    folder = os.fspath(folder)
    name = name or folder
    if not os.path.isdir(folder):
        fail(f"{name}: " + ("is a file, not a fit folder (give the folder that benchmeasure fit --output-dir wrote)"
                            if os.path.exists(folder) else "no such folder"))
    path = os.path.join(folder, "diagnostics.json")
    if not os.path.isfile(path):
        fail(f"{name}: no diagnostics.json (write one with benchmeasure fit --output-dir {folder})")
    try:
        with open(path, encoding="utf-8") as handle:
            diagnostics = json.load(handle)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{path}: not JSON ({exc})")
    source = diagnostics.get("input") if isinstance(diagnostics, dict) else None
    settings = diagnostics.get("settings") if isinstance(diagnostics, dict) else None
    if not isinstance(source, dict) or not isinstance(settings, dict) or not all(
            k in source for k in ("sha256", "n_trials")) or "method" not in diagnostics:
        fail(f"{path}: not a diagnostics.json of benchmeasure fit (no input.sha256, input.n_trials, method "
             f"or settings)")
    posterior = os.path.join(folder, POSTERIOR_NAME)
    if POSTERIOR_NAME not in diagnostics.get("outputs", []):
        stale = f" (the {POSTERIOR_NAME} there is from an earlier fit)" if os.path.exists(posterior) else ""
        posterior, note = None, (f"{folder} holds no posterior of this fit (benchmeasure fit without "
                                 f"--save-posterior){stale}")
    elif not os.path.isdir(posterior):
        posterior, note = None, f"{posterior} is missing"
    else:
        note = f"1PL draws from {posterior}"
    return FitFolder(folder, diagnostics, posterior, note)


def posterior_store(path) -> Path:
    """A fit folder stands for its ``posterior.zarr``; any other path is the posterior itself (checked to exist)."""
    from benchmeasure.base.errors import fail

    path = Path(path)
    if path.is_dir() and not path.name.endswith(".zarr"):
        store = path / POSTERIOR_NAME
        if not store.is_dir():
            fail(f"{path}: no {POSTERIOR_NAME} inside (give the posterior file or store, or a benchmeasure fit "
                 f"--save-posterior output folder)")
        return store
    if not path.exists():
        fail(f"{path}: no such posterior")
    return path
