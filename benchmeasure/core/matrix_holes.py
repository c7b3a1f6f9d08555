"""Count matrices with holes and K per cell: the companion trials file. Standard library only.

A complete matrix (every cell answered ``--n-trials`` times) is written exactly as before: one CSV of counts.
A matrix with absent cells or cells with fewer trials (``prepare --allow-missing``) is two files:

* the counts, ``response_matrix.csv``: as before, but an absent cell is **blank**;
* the trials, ``response_matrix.trials.csv`` (:func:`trials_path`): the same header and rows, each cell the
  number of trials of that model on that item (1 … K), blank where absent.

So each file alone says which cells are absent, and the pair says K per cell. A reader that supports holes
(:func:`read_counts_and_trials`) checks that the two agree: the same models and items in the same order, blank in
the same cells, and no count above its cell's trials (``count 3 > 2 trials`` is an error). A reader that does not
support holes refuses a blank cell, and names ``--allow-missing``.
"""

from __future__ import annotations

import csv
import operator
import os
from itertools import repeat

from benchmeasure.base.csv_table import read_table, table_kind
from benchmeasure.base.errors import fail
from benchmeasure.base.files import atomic_write


def trials_path(matrix_path: str | os.PathLike) -> str:
    """``x/response_matrix.csv`` → ``x/response_matrix.trials.csv`` (``.trials.csv`` appended otherwise); a compressed
    matrix has a compressed companion: ``m.csv.gz`` → ``m.trials.csv.gz``."""
    from benchmeasure.base.compressed import strip_compression

    path, suffix = strip_compression(matrix_path)
    stem = path[:-4] if path.lower().endswith(".csv") else path
    return f"{stem}.trials.csv{suffix}"


def companion_trials(matrix_path: str | os.PathLike) -> str | None:
    """The trials file beside a matrix (:func:`trials_path`), or None when there is none.

    A trials file there under another compression than the matrix's (``m.trials.csv.gz`` beside ``m.csv``, and no
    ``m.csv.gz`` it would belong to) is refused, naming both: it was not looked for, so the counts were read as out
    of K without a word.
    """
    from benchmeasure.base.compressed import strip_compression

    companion = trials_path(matrix_path)
    if os.path.isfile(companion):
        return companion
    plain, matrix = strip_compression(companion)[0], strip_compression(matrix_path)[0]
    for suffix in ("", ".gz", ".bz2", ".xz"):
        other = plain + suffix
        if other != companion and os.path.isfile(other) and not os.path.isfile(matrix + suffix):  # not its matrix's
            fail(f"{os.fspath(matrix_path)}: the trials file beside it is {other}, but a trials file takes the "
                 f"matrix's compression: rename it to {companion} (or move it away if it belongs to another matrix)")
    return None


def has_holes(trials, n_trials: int) -> bool:
    """Whether a trials table (rows of ints; 0 = absent) differs from K everywhere."""
    return trials is not None and any(t != n_trials for row in trials for t in row)


def write_counts_and_trials(models: list, items: list, counts, trials, path: str | os.PathLike) -> None:
    """The counts (blank where ``trials`` is 0) and the companion trials file, atomically."""
    counts = counts.tolist() if hasattr(counts, "tolist") else counts
    trials = trials.tolist() if hasattr(trials, "tolist") else trials
    for target, table in ((path, counts), (trials_path(path), trials)):
        with atomic_write(target) as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["model", *items])
            for model, row, k_row in zip(models, table, trials):
                writer.writerow([model, *("" if k == 0 else value for value, k in zip(row, k_row))])


def _cell(cell: str, path: str, line: int, model: str, item: str, n_trials: int, what: str):
    """One cell's value (None: blank = absent), or the error naming it."""
    text = cell.strip()
    if not text:
        return None
    if len(text) > 9 or not text.isascii() or not text.isdigit():
        fail(f"{path}: line {line}, model {model!r}, item {item!r}: {text[:24]!r} is not {what} in "
             f"[0, {n_trials}] (blank = absent)")
    value = int(text)
    if value > n_trials:
        fail(f"{path}: line {line}, model {model!r}, item {item!r}: {what} {value} is outside "
             f"[0, {n_trials}] (--n-trials {n_trials})")
    return value


def _read_cells(path: str, n_trials: int, what: str) -> tuple[list, list, list, list]:
    table = read_table(path, expected="a header 'model,<item>,…'")
    if table.header[0] != "model":
        kind = table_kind(table.header)
        fail(f"{path}: first header column must be 'model', found {table.header[0]!r}"
             + (f"; this is {kind}" if kind else ""))
    items = table.header[1:]
    # the texts a cell usually holds, validated once: a row whose cells all hit this table costs one dict lookup per
    # cell; any other text (spaces, a sign, a value above K) goes through the checks below and their messages
    known = {"": None, **{str(v): v for v in range(min(n_trials, 10_000) + 1)}}
    models, values, lines = [], [], []
    for line, row in zip(table.lines, table.rows):
        model = row[0].strip()  # stripped, as the item IDs of the header and every other reader's IDs are
        if not model:
            fail(f"{path}: line {line}, column 'model': blank model ID")
        try:
            cells = list(map(known.__getitem__, row[1:]))
        except KeyError:
            cells = [_cell(cell, path, line, model, item, n_trials, what) for item, cell in zip(items, row[1:])]
        models.append(model)
        values.append(cells)
        lines.append(line)
    if len(set(models)) != len(models):
        dup = next(m for m in models if models.count(m) > 1)
        fail(f"{path}: model ID {dup!r} appears on more than one row")
    return models, items, values, lines


def read_counts_and_trials(path: str | os.PathLike, n_trials: int) -> tuple[list, list, list, list]:
    """(models, items, counts, trials) of a matrix that may have holes; trials 0 = absent.

    Without a companion file every present cell has ``n_trials`` trials. Rejected: a companion whose models,
    items or blank cells differ from the counts'; a count above its cell's trials; a cell with 0 trials in the
    companion; a model with no answer at all.
    """
    path = os.fspath(path)
    models, items, counts, lines = _read_cells(path, n_trials, "an integer count")
    companion = companion_trials(path) or trials_path(path)
    if os.path.isfile(companion):
        t_models, t_items, trials, _ = _read_cells(companion, n_trials, "a number of trials")
        if t_models != models or t_items != items:
            fail(f"{companion}: its models or items differ from {path}'s (same header and rows, in order)")
    else:
        trials = [[None if c is None else n_trials for c in row] for row in counts]
    filled_counts, filled_trials = [], []
    for model, line, c_row, t_row in zip(models, lines, counts, trials):
        c_fill = list(map(_ZERO.get, c_row, c_row))   # None → 0, any other value kept
        t_fill = list(map(_ZERO.get, t_row, t_row))
        # the row's checks at list speed; the cell that fails is found and named by _row_error
        if (list(map(operator.is_, c_row, repeat(None))) != list(map(operator.is_, t_row, repeat(None)))
                or 0 in t_row or any(map(operator.gt, c_fill, t_fill))):
            _row_error(path, companion, line, model, items, c_row, t_row)
        if t_row.count(None) == len(t_row):
            fail(f"{path}: line {line}: model {model!r} has no answers at all (every cell is blank)")
        filled_counts.append(c_fill)
        filled_trials.append(t_fill)
    return models, items, filled_counts, filled_trials


_ZERO = {None: 0}


def _row_error(path, companion, line, model, items, c_row, t_row) -> None:
    """The first cell of a row whose count and trials disagree, named."""
    for item, c, t in zip(items, c_row, t_row):
        if (c is None) != (t is None) or t == 0:
            fail(f"{path}: line {line}, model {model!r}, item {item!r}: absent in one of {path} and "
                 f"{companion} only (a blank cell must be blank in both; trials are 1 or more)")
        if c is not None and c > t:
            fail(f"{path}: line {line}, model {model!r}, item {item!r}: count {c} is above the cell's "
                 f"{t} trial{'s' * (t != 1)} ({companion})")


def diagnostics_beside(path, name: str = "diagnostics.json", up: int = 0) -> dict:
    """The ``diagnostics.json`` (or ``name``) of the fit folder holding ``path`` (a file or a zarr folder), or of the
    folder ``up`` levels above it; {} when none."""
    import json

    folder = os.path.dirname(os.path.abspath(os.fspath(path).rstrip("/")))
    for _ in range(up):
        folder = os.path.dirname(folder)
    beside = os.path.join(folder, name)
    try:
        with open(beside, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def absent_cells_beside(path) -> dict | None:
    """``absent_cells`` (total, per model, per item) of the fit beside ``path`` when it had holes, else None: a fit
    folder's diagnostics.json, or for ``DIR/<benchmark>/difficulty.csv`` of ``fit-suite`` the suite's
    ``DIR/suite.json`` (whose counts cover the whole suite)."""
    for name, up in (("diagnostics.json", 0), ("suite.json", 1)):
        absent = _checked_absent(diagnostics_beside(path, name, up).get("absent_cells"))
        if absent is not None:
            return absent
    return None


def _checked_absent(absent) -> dict | None:
    """``absent`` when it is a well-formed record with at least one absent cell (an integer total ≥ 1 and per
    model / per item tables of non-negative integers), else None: a malformed record is ignored, not trusted."""
    if not isinstance(absent, dict):
        return None
    total = absent.get("total")
    if isinstance(total, bool) or not isinstance(total, int) or total < 1:
        return None
    tables = {}
    for key in ("per_model", "per_item"):
        table = absent.get(key, {})
        if not isinstance(table, dict) or any(isinstance(v, bool) or not isinstance(v, int) or v < 0
                                              for v in table.values()):
            return None
        tables[key] = {str(k): v for k, v in table.items()}
    return {"total": total, **tables}
