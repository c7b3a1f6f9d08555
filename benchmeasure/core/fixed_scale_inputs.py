"""Inputs of scoring and calibrating on a fixed scale (``score``, ``calibrate-items``, ``select-anchors``).

The answers (a count matrix or graded responses, told apart by the header), the benchmark's difficulty
file, and the provenance record of each input file. Shared by those commands, so it lives here, not in
one of them (ARCHITECTURE.md: commands do not import each other).
"""

from __future__ import annotations

import numpy as np

from benchmeasure.base.files import sha256_file


def read_counts(path: str, n_trials: int, allow_missing: bool = False):
    """A count matrix, or graded responses in long format (told apart by the header). With ``allow_missing``
    absent cells and K per cell are kept (``trials``; blank cells and ``MATRIX.trials.csv`` for a matrix)."""
    from benchmeasure.base.csv_table import open_table
    from benchmeasure.core.matrix import check_recorded_n_trials, read_matrix, read_matrix_allowing_holes
    from benchmeasure.core.responses import COLUMNS, read_responses_csv

    check_recorded_n_trials(path, n_trials)
    with open_table(path, expected="model,<item>,… or model,item_id,trial,correct") as (header, _):
        long_format = set(COLUMNS) <= set(header)
    if long_format:
        return read_responses_csv(path, n_trials, allow_missing)
    if allow_missing:
        return read_matrix_allowing_holes(path, n_trials, min_size=(1, 1))
    return read_matrix(path, n_trials, min_size=(1, 1))


def cells_of(matrix, j: int):
    """Model ``j``'s present cells: (their item indices in the matrix, counts, trials or None when all K)."""
    if matrix.trials is None:
        return np.arange(len(matrix.items)), matrix.counts[j], None
    present = np.flatnonzero(matrix.trials[j] > 0)
    return present, matrix.counts[j, present], matrix.trials[j, present]


def absent_counts(matrix) -> dict:
    """``{"total", "per_model", "per_item"}``: how many cells are absent (only nonzero entries listed)."""
    if matrix.trials is None:
        return {"total": 0, "per_model": {}, "per_item": {}}
    absent = matrix.trials == 0
    return {"total": int(absent.sum()),
            "per_model": {m: int(c) for m, c in zip(matrix.models, absent.sum(axis=1)) if c},
            "per_item": {i: int(c) for i, c in zip(matrix.items, absent.sum(axis=0)) if c}}


def benchmark_difficulties(path: str):
    """(items, b as an array) of the difficulty file: item IDs required and distinct."""
    from benchmeasure.core.difficulty_file import read_item_difficulties

    items, values = read_item_difficulties(path, "b_mean")
    return items, np.asarray(values, dtype=float)


def input_records(paths: list) -> list:
    """Path and SHA-256 of each input file (a zarr store is a folder: its path only)."""
    from pathlib import Path

    return [{"path": str(path), "sha256": sha256_file(path) if Path(path).is_file() else None}
            for path in paths if path is not None]
