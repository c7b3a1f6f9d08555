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

import csv
import os
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import fail
from benchmeasure.base.files import atomic_write


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
    """

    models: list
    items: list
    counts: np.ndarray
    n_trials: int

    @property
    def shape(self) -> tuple:
        return self.counts.shape

    def accuracy(self) -> np.ndarray:
        """Per-cell success rate counts / n_trials, shape (M, N)."""
        return self.counts / self.n_trials

    def drop_model(self, index: int) -> ResponseMatrix:
        """The same matrix without model ``index`` (for leave-one-model-out refits)."""
        keep = [j for j in range(len(self.models)) if j != index]
        return ResponseMatrix([self.models[j] for j in keep], list(self.items), self.counts[keep], self.n_trials)

    def constant_items(self) -> dict:
        """Items solved by every model in every trial (``all_correct``) or by none (``all_wrong``)."""
        total = self.counts.sum(axis=0)
        full = len(self.models) * self.n_trials
        return {
            "all_correct": [item for item, t in zip(self.items, total) if t == full],
            "all_wrong": [item for item, t in zip(self.items, total) if t == 0],
        }


def constant_models(matrix: ResponseMatrix) -> dict:
    """Models that solved every item in every trial (``all_correct``) or none (``all_wrong``): legal, but their
    ability is then set mostly by the prior."""
    total = matrix.counts.sum(axis=1)
    full = len(matrix.items) * matrix.n_trials
    return {"all_correct": [m for m, t in zip(matrix.models, total) if t == full],
            "all_wrong": [m for m, t in zip(matrix.models, total) if t == 0]}


def check_n_trials(n_trials: int) -> int:
    if n_trials < 1:
        fail(f"--n-trials must be a positive integer, got {n_trials}")
    return n_trials


def _duplicate(names: list) -> str | None:
    seen = Counter(names)
    return next((name for name in names if seen[name] > 1), None)


INTEGER = re.compile(r"-?[0-9]+")


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
    if header[0] != "model":
        fail(f"{path}: first header column must be 'model', found {header[0]!r}")
    items = header[1:]
    models, data = [], []
    for r, row in enumerate(table.rows):
        line = table.lines[r]
        model = row[0]
        if not model.strip():
            fail(f"{path}: line {line}, column 'model': blank model ID")
        values = []
        for item, cell in zip(items, row[1:]):
            text = cell.strip()
            if not text:
                fail(f"{path}: line {line}, model {model!r}, item {item!r}: empty cell")
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
    return ResponseMatrix(models, items, counts, n_trials)


def write_matrix(matrix: ResponseMatrix, path: str | os.PathLike) -> None:
    """Write ``matrix`` as CSV, atomically, creating missing parent folders."""
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", *matrix.items])
        for model, row in zip(matrix.models, matrix.counts.tolist()):
            writer.writerow([model, *row])


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
