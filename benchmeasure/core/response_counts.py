"""Graded responses → count matrix with the standard library only (the paper's first call, before any venv).

The paper's README runs ``python3 scripts/prepare_response_matrix.py responses.csv --n-trials 2 --output …``
before a virtual environment exists. This module does exactly what :func:`benchmeasure.core.responses.
read_responses_csv` and :func:`~benchmeasure.core.responses.assemble_matrix` do — the same rules, the same
messages, the same matrix — on any Python 3.9+, streaming the file through the strict CSV reader
(:mod:`benchmeasure.base.csv_table`). The NumPy/pandas reader is used instead for very large files when those
packages are installed (``prepare_response_matrix.py`` chooses; ``tests/test_response_counts.py`` checks
that both give the same matrix or both refuse).

Rules (README, "input format"): columns ``model,item_id,trial,correct`` (others ignored; with ``--n-trials 1``
the ``trial`` column may be left out, each row then being trial 0); ``correct`` is
``0`` or ``1``; no blank model, item or trial ID; every (model, item) pair has exactly ``n_trials`` rows
with distinct trial IDs; every model answers every item some model answered.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass

from benchmeasure.base.csv_table import open_table
from benchmeasure.base.errors import fail
from benchmeasure.base.files import atomic_write

COLUMNS = ("model", "item_id", "trial", "correct")


@dataclass(frozen=True)
class CountTable:
    """Models × items correct counts, as plain lists (models and items in first-seen order)."""

    models: list
    items: list
    counts: list  # counts[j][i]
    n_trials: int
    trials: list | None = None  # trials[j][i] when cells differ (0 = absent; --allow-missing), else None

    @property
    def shape(self) -> tuple:
        return len(self.models), len(self.items)


def count_responses(path: str | os.PathLike, n_trials: int, allow_missing: bool = False) -> CountTable:
    """Read and validate a long-format responses CSV; count correct trials per (model, item).

    ``allow_missing``: absent cells and cells with fewer than ``n_trials`` trials are kept (``trials``)."""
    path = os.fspath(path)
    if n_trials < 1:
        fail(f"--n-trials must be a positive integer, got {n_trials}")
    models: dict = {}  # name -> index, first-seen order
    items: dict = {}
    seen: dict = {}  # (model, item, trial) -> line
    pairs: dict = {}  # (j, i) -> [rows, correct, first line]
    # one answer per cell (--n-trials 1) needs no trial column: each row is trial 0 (the bundled suites)
    required = COLUMNS if n_trials > 1 else ("model", "item_id", "correct")
    with open_table(path, required=required, nonblank=(), expected=",".join(COLUMNS)) as (header, rows):
        at = [header.index(name) if name in header else None for name in COLUMNS]
        for line, fields in rows:
            # IDs stripped, as every reader of the matrix this becomes strips them (`docs/errors.md`)
            model, item, trial, correct = ("0" if k is None else fields[k] for k in at)
            model, item, trial = model.strip(), item.strip(), trial.strip()
            if correct not in ("0", "1"):
                fail(f"{path} line {line}: model {model!r}, item {item!r}, trial {trial!r}: correct is "
                     f"{correct!r}, expected 0 or 1")
            for kind, value in (("model", model), ("item", item), ("trial", trial)):
                if not value.strip():
                    fail(f"{path} line {line}: blank {kind} ID")
            key = (model, item, trial)
            if key in seen:
                fail(f"{path} line {line}: duplicate response for model {model!r}, item {item!r}, trial "
                     f"{trial!r} (already at {path} line {seen[key]})")
            seen[key] = line
            j = models.setdefault(model, len(models))
            i = items.setdefault(item, len(items))
            tally = pairs.get((j, i))
            if tally is None:
                tally = pairs[(j, i)] = [0, 0, line]
            tally[0] += 1
            tally[1] += correct == "1"
    if not seen:
        fail(f"{path}: no responses (header only?)")
    model_names, item_names = list(models), list(items)
    wrong = [(tally[2], j, i, tally[0]) for (j, i), tally in pairs.items()
             if tally[0] > n_trials or (tally[0] != n_trials and not allow_missing)]
    if wrong:
        line, j, i, got = min(wrong)
        fail(f"{path} line {line}: model {model_names[j]!r}, item {item_names[i]!r} has {got} "
             f"trial{'s' if got != 1 else ''}, expected --n-trials {n_trials}"
             + ("" if got > n_trials else " (--allow-missing accepts fewer)"))
    if allow_missing:
        trials = [[0] * len(items) for _ in models]
        counts = [[0] * len(items) for _ in models]
        for (j, i), tally in pairs.items():
            trials[j][i], counts[j][i] = tally[0], tally[1]
        complete = all(t == n_trials for row in trials for t in row)
        return CountTable(model_names, item_names, counts, n_trials, None if complete else trials)
    counts = [[0] * len(items) for _ in models]
    present = [[False] * len(items) for _ in models]
    for (j, i), tally in pairs.items():
        counts[j][i] = tally[1]
        present[j][i] = True
    for j, row in enumerate(present):
        for i, answered in enumerate(row):
            if not answered:
                holder = model_names[next(k for k in range(len(models)) if present[k][i])]
                fail(f"{path}: model {model_names[j]!r} has no responses for item {item_names[i]!r} "
                     f"(model {holder!r} has {n_trials}); --allow-missing keeps absent cells")
    return CountTable(model_names, item_names, counts, n_trials)


def write_count_table(table, path: str | os.PathLike) -> None:
    """Write a count matrix CSV (``model,<item>,…``), atomically; ``table`` is a CountTable or ResponseMatrix.

    A table with ``trials`` (holes or K per cell) is written with its companion trials file
    (:mod:`benchmeasure.core.matrix_holes`); a complete one exactly as always."""
    if getattr(table, "trials", None) is not None:
        from benchmeasure.core.matrix_holes import write_counts_and_trials

        write_counts_and_trials(table.models, table.items, table.counts, table.trials, path)
        return
    counts = table.counts.tolist() if hasattr(table.counts, "tolist") else table.counts
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", *table.items])
        for model, row in zip(table.models, counts):
            writer.writerow([model, *row])
