"""Read one column of item difficulties from a CSV file. Standard library only.

Difficulty files are what ``scripts/fit_irt.py`` writes (``item,b_mean,b_sd,…``) or what
the paper released (``data/benchmarks/<benchmark>/difficulty.csv``: ``item_id,b_mean``).
The item ID column may be called ``item`` or ``item_id``; it is optional for reading
values but, where present, is used to name the offending item in error messages.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass

from .errors import fail, file_errors

ID_COLUMNS = ("item", "item_id")


@dataclass(frozen=True)
class DifficultyColumn:
    """Values of one column of a difficulty file, in file order.

    Attributes
    ----------
    path : str
    column : str
    item_ids : list of str
        The IDs from ``item``/``item_id``, or 0 … n−1 as strings when the file has neither.
    values : list of float, length n
    """

    path: str
    column: str
    item_ids: list
    values: list


def read_difficulty_column(path: str | os.PathLike, column: str = "b_mean") -> DifficultyColumn:
    """Read ``column`` as floats; reject a missing file or column and any non-finite value."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        fail(f"{path}: no such file")
    with file_errors(path):
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None or not any(name.strip() for name in header):
                fail(f"{path}: file is empty (expected a header with column {column!r})")
            header = [name.strip() for name in header]
            if column not in header:
                fail(f"{path}: no column {column!r} (columns: {', '.join(header)}); choose one with --column")
            value_at = header.index(column)
            id_at = next((header.index(name) for name in ID_COLUMNS if name in header), None)
            ids, values = [], []
            for line_number, row in enumerate(reader, start=2):
                if not row or all(not cell.strip() for cell in row):
                    continue
                item = row[id_at].strip() if id_at is not None and id_at < len(row) else str(len(values))
                cell = row[value_at].strip() if value_at < len(row) else ""
                try:
                    value = float(cell)
                except ValueError:
                    fail(f"{path}: line {line_number}, item {item!r}: {column} {cell!r} is not a number")
                if not math.isfinite(value):
                    fail(f"{path}: line {line_number}, item {item!r}: {column} is {cell!r}, not a finite number")
                ids.append(item)
                values.append(value)
    if len(values) < 2:
        fail(f"{path}: need at least 2 items, found {len(values)}")
    return DifficultyColumn(path=path, column=column, item_ids=ids, values=values)
