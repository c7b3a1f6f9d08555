"""The response matrix: models × items, each cell the number of correct trials.

This is the input of every fit and analysis (paper, Figure 2). On disk it is a CSV whose
first column is ``model`` and whose other columns are the item IDs, as
``scripts/prepare_response_matrix.py`` writes it::

    model,q0,q1
    model-a,1,2
    model-b,0,1

IDs are kept as exact strings (``007`` stays ``007``), in file order.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from benchmeasure.base.csv_table import read_table, table_kind
from benchmeasure.base.errors import fail

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResponseMatrix:
    """Correct counts of each model on each item.

    Attributes
    ----------
    models : list of str, length M
    items : list of str, length N
    counts : ndarray of int64, shape (M, N)
        ``counts[j, i]`` is how many of the ``n_trials`` responses of model j to item i were correct.
    n_trials : int
        Responses collected per model–item pair (the binomial size K).
    trials : ndarray of int64, shape (M, N), or None
        Trials per cell when they differ (``prepare --allow-missing``): 0 = absent cell, at most ``n_trials``.
        None (the default): every cell has ``n_trials`` (:mod:`benchmeasure.core.matrix_holes`).
    """

    models: list
    items: list
    counts: np.ndarray
    n_trials: int
    trials: np.ndarray | None = None

    @property
    def shape(self) -> tuple:
        return self.counts.shape

    def accuracy(self) -> np.ndarray:
        """Per-cell success rate counts / n_trials, shape (M, N)."""
        return self.counts / self.n_trials

    def drop_model(self, index: int) -> ResponseMatrix:
        """The same matrix without model ``index`` (for leave-one-model-out refits); holes are kept."""
        keep = [j for j in range(len(self.models)) if j != index]
        trials = None if self.trials is None else self.trials[keep]
        if trials is not None and (trials == self.n_trials).all():
            trials = None
        return ResponseMatrix([self.models[j] for j in keep], list(self.items), self.counts[keep], self.n_trials,
                              trials)

    def cell_trials(self):
        """Trials per cell for a likelihood: the (M, N) ``trials`` matrix with holes (0 = absent), else K."""
        return self.n_trials if self.trials is None else self.trials

    @property
    def present_cells(self) -> int:
        """How many cells hold an answer (M·N without holes)."""
        return self.counts.size if self.trials is None else int((self.trials > 0).sum())

    def constant_items(self) -> dict:
        """Items solved by every model in every trial (``all_correct``) or by none (``all_wrong``)."""
        total = self.counts.sum(axis=0)
        full = np.broadcast_to(len(self.models) * self.n_trials if self.trials is None else self.trials.sum(axis=0),
                               total.shape)
        return {
            "all_correct": [item for item, t, f in zip(self.items, total, full) if t == f],
            "all_wrong": [item for item, t in zip(self.items, total) if t == 0],
        }


def constant_models(matrix: ResponseMatrix) -> dict:
    """Models that solved every item in every trial (``all_correct``) or none (``all_wrong``): legal, but their
    ability is then set mostly by the prior."""
    total = matrix.counts.sum(axis=1)
    full = np.broadcast_to(len(matrix.items) * matrix.n_trials if matrix.trials is None else matrix.trials.sum(axis=1),
                           total.shape)
    return {"all_correct": [m for m, t, f in zip(matrix.models, total, full) if t == f],
            "all_wrong": [m for m, t in zip(matrix.models, total) if t == 0]}


def check_n_trials(n_trials: int) -> int:
    if n_trials < 1:
        fail(f"--n-trials must be a positive integer, got {n_trials}")
    return n_trials


def warn_unreached_n_trials(path: str | os.PathLike, counts, n_trials: int) -> None:
    """Warn when no count reaches ``n_trials``: every rate would be read as if out of K, while the data were
    probably collected with fewer trials (0/1 data read with ``--n-trials 8`` puts every model near the floor)."""
    counts = np.asarray(counts)
    if counts.size == 0 or n_trials <= 1:
        return
    top = int(counts.max())
    if top < n_trials:
        logger.warning("%s: no count reaches --n-trials %d (the largest is %d), so every model is read as "
                       "answering at most %d of %d; if the data have %d trial%s per model-item pair, give "
                       "--n-trials %d", os.fspath(path), n_trials, top, top, n_trials, max(top, 1),
                       "s" if max(top, 1) > 1 else "", max(top, 1))


def _duplicate(names: list) -> str | None:
    seen = Counter(names)
    return next((name for name in names if seen[name] > 1), None)


INTEGER = re.compile(r"-?[0-9]+")


def _plain_counts(cells: list) -> bool:
    """Whether every cell is 1 to 12 ASCII digits and nothing else: read as it is by the fast path of
    :func:`read_matrix` (anything else goes cell by cell, which names the cell it refuses)."""
    joined = "".join(cells)
    return (joined.isascii() and joined.isdigit() and "" not in cells
            and max(map(len, cells), default=0) <= 12)


def read_matrix(path: str | os.PathLike, n_trials: int, min_size: tuple = (2, 2)) -> ResponseMatrix:
    """Read and validate a count matrix CSV.

    Rejected with :class:`~benchmeasure.base.errors.InputError` naming the cell or ID: a missing
    or empty file; a first column not called ``model``; an empty cell; a value that is not
    an integer in [0, n_trials]; duplicate model or item IDs; a blank ID; fewer than
    ``min_size`` = (models, items) — 2 and 2 for a fit, 1 and 1 to score a model or calibrate an
    item with the other side fixed; a row with too few or too many cells.
    """
    check_n_trials(n_trials)
    path = os.fspath(path)
    table = read_table(path, expected="a header 'model,<item>,…'")
    header = table.header
    if {"item_id", "trial", "correct"} <= set(header):
        fail(f"{path}: graded responses (model,item_id,trial,correct), not a count matrix; make the matrix first: "
             f"benchmeasure prepare {path} --n-trials {n_trials} --output response_matrix.csv")
    if header[0] != "model":
        kind = table_kind(header)
        fail(f"{path}: first header column must be 'model', found {header[0]!r}"
             + ("; a wide table (one row per model or item) becomes a matrix with benchmeasure prepare --from wide"
                if not header[0].strip() else f"; this is {kind}" if kind else ""))
    items = header[1:]
    models, data = [], []
    for r, row in enumerate(table.rows):
        line = table.lines[r]
        model = row[0].strip()  # stripped, as the item IDs of the header and every other reader's IDs are
        if not model:
            fail(f"{path}: line {line}, column 'model': blank model ID")
        cells = row[1:]
        if len(cells) == len(items) and _plain_counts(cells):   # the common case, checked for the whole row at once
            values = np.asarray(cells).astype(np.int64)
            if values.size == 0 or values.max() <= n_trials:
                models.append(model)
                data.append(values)
                continue
        values = []
        for item, cell in zip(items, row[1:]):
            text = cell.strip()
            if not text:
                fail(f"{path}: line {line}, model {model!r}, item {item!r}: empty cell (an absent answer; "
                     "this command needs a complete matrix, see --allow-missing in docs/suites.md)")
            if len(text) > 12 or not INTEGER.fullmatch(text):  # int() would also take '+1', '1_0' and '٣'
                shown = text if len(text) <= 24 else f"{text[:20]}… ({len(text)} characters)"
                fail(f"{path}: line {line}, model {model!r}, item {item!r}: {shown!r} is not an integer count "
                     f"in [0, {n_trials}]")
            value = int(text)
            if not 0 <= value <= n_trials:
                fail(f"{path}: line {line}, model {model!r}, item {item!r}: count {value} is outside "
                     f"[0, {n_trials}] (--n-trials {n_trials})")
            values.append(value)
        models.append(model)
        data.append(values)
    if (dup := _duplicate(models)) is not None:
        fail(f"{path}: model ID {dup!r} appears on more than one row")
    if len(models) < min_size[0] or len(items) < min_size[1]:
        fail(f"{path}: need at least {min_size[0]} model{'s' * (min_size[0] > 1)} and {min_size[1]} "
             f"item{'s' * (min_size[1] > 1)}, found {len(models)} models and {len(items)} items")
    counts = np.asarray(data, dtype=np.int64).reshape(len(models), len(items))
    _refuse_unread_trials_file(path, n_trials)
    warn_unreached_n_trials(path, counts, n_trials)
    return ResponseMatrix(models, items, counts, n_trials)


def _refuse_unread_trials_file(path: str, n_trials: int) -> None:
    """A companion trials file that gives some cell fewer than ``n_trials`` trials changes what the counts mean:
    read as complete, each count would be taken out of K. Refused, naming ``--allow-missing`` (which reads it)."""
    from benchmeasure.core.matrix_holes import _read_cells, companion_trials

    companion = companion_trials(path)
    if companion is None:
        return
    _, _, trials, _ = _read_cells(companion, n_trials, "a number of trials")
    fewer = sum(1 for row in trials for t in row if t != n_trials)
    if fewer:
        fail(f"{path}: the trials file beside it, {companion}, gives {fewer} cell{'s' * (fewer != 1)} fewer than "
             f"--n-trials {n_trials} trials; read as a complete matrix each count would be out of {n_trials}: give "
             "--allow-missing (fit, check, score, calibrate, robustness, fit-ability take it) to read the trials "
             "file, or move it away if it belongs to another matrix")


def write_matrix(matrix: ResponseMatrix, path: str | os.PathLike) -> None:
    """Write ``matrix`` as CSV, atomically, creating missing parent folders (the one count-matrix writer,
    :func:`benchmeasure.core.response_counts.write_count_table`, shared with the standard-library path)."""
    from benchmeasure.core.response_counts import write_count_table

    write_count_table(matrix, path)


def read_matrix_allowing_holes(path: str | os.PathLike, n_trials: int, min_size: tuple = (2, 2)) -> ResponseMatrix:
    """A count matrix that may have absent cells (blank) and K per cell (``MATRIX.trials.csv``,
    :mod:`benchmeasure.core.matrix_holes`); ``trials`` is None when every cell has ``n_trials``. ``min_size`` as
    for :func:`read_matrix`."""
    from benchmeasure.core.matrix_holes import read_counts_and_trials

    check_n_trials(n_trials)
    models, items, counts, trials = read_counts_and_trials(path, n_trials)
    if len(models) < min_size[0] or len(items) < min_size[1]:
        fail(f"{path}: need at least {min_size[0]} model{'s' * (min_size[0] > 1)} and {min_size[1]} "
             f"item{'s' * (min_size[1] > 1)}, found {len(models)} models and {len(items)} items")
    trials = np.asarray(trials, dtype=np.int64).reshape(len(models), len(items))
    return ResponseMatrix(list(models), list(items), np.asarray(counts, dtype=np.int64).reshape(trials.shape),
                          n_trials, None if (trials == n_trials).all() else trials)


def check_recorded_n_trials(path: str | os.PathLike, n_trials: int) -> None:
    """Fail when the matrix's provenance record (``<path>.json``, written by ``prepare_response_matrix.py``)
    says it was built with another number of trials than ``--n-trials``.

    Counts alone cannot show every mismatch: a K = 4 matrix read with ``--n-trials 8`` has no count above 8,
    yet every rate would be halved. Without a record (or one that names no ``n_trials``) nothing is checked.
    """
    import json

    record_path = f"{os.fspath(path)}.json"
    if not os.path.isfile(record_path):
        return
    try:
        with open(record_path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return  # not a record we can read: the counts' own checks still apply
    recorded = record.get("settings", {}).get("n_trials") if isinstance(record, dict) else None
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded != n_trials:
        fail(f"{path}: built with {recorded} trials per model-item pair (its record {record_path} says so), "
             f"but --n-trials is {n_trials}; give --n-trials {recorded}")
