"""Read one column of item difficulties from a CSV file. Standard library only.

Difficulty files are what ``scripts/fit_irt.py`` writes (``item,b_mean,b_sd,…``) or what
the paper released (``data/benchmarks/<benchmark>/difficulty.csv``: ``item_id,b_mean``).
The item ID column may be called ``item`` or ``item_id``; it is optional for reading
values but, where present, is used to name the offending item in error messages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from benchmeasure.base.csv_table import finite_float, read_table
from benchmeasure.base.errors import fail

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
    lines : list of int
        The line of each value in the file.
    id_column : str or None
        ``item`` or ``item_id``, whichever the file has.
    """

    path: str
    column: str
    item_ids: list
    values: list
    lines: list = field(default_factory=list)
    id_column: str | None = None

    def first_repeated_id(self) -> int | None:
        """Index of the first value whose item ID repeats an earlier one, or None."""
        seen: set = set()
        for k, item in enumerate(self.item_ids):
            if item in seen:
                return k
            seen.add(item)
        return None


def read_difficulty_column(path: str | os.PathLike, column: str = "b_mean") -> DifficultyColumn:
    """Read ``column`` as floats; reject a missing file or column, any non-finite value, and anything the strict
    reader refuses (:mod:`benchmeasure.base.csv_table`: rows of the wrong width, blank values, repeated columns)."""
    path = os.fspath(path)
    table = read_table(path, required=(column,), expected=f"a header with column {column!r}; choose one with --column")
    id_name = next((name for name in ID_COLUMNS if name in table.header), None)
    ids = table.column(id_name) if id_name is not None else [str(r) for r in range(len(table.rows))]
    values = []
    for r, cell in enumerate(table.column(column)):
        where = f"{table.where(r)}, item {ids[r]!r}"
        if id_name is not None and not ids[r]:
            fail(f"{table.where(r, id_name)}: blank item ID")
        values.append(finite_float(cell, f"{where}: {column}"))
    if len(values) < 2:
        fail(f"{path}: need at least 2 items, found {len(values)}")
    return DifficultyColumn(path=path, column=column, item_ids=ids, values=values, lines=list(table.lines),
                            id_column=id_name)


def read_item_difficulties(path: str | os.PathLike, column: str = "b_mean") -> tuple[list, list]:
    """(item IDs, values) of a difficulty file whose items must be named (``item``/``item_id``) and distinct.

    For files that define a scale item by item: ``score_models.py --difficulty``, ``select_anchors.py``,
    ``fit_irt.py --fixed-difficulties``.
    """
    difficulties = read_difficulty_column(path, column)
    if difficulties.id_column is None:
        fail(f"{os.fspath(path)}: no column 'item' or 'item_id'; the difficulties must name their items")
    repeated = difficulties.first_repeated_id()
    if repeated is not None:
        fail(f"{os.fspath(path)}: line {difficulties.lines[repeated]}: item {difficulties.item_ids[repeated]!r} "
             "appears more than once")
    return difficulties.item_ids, difficulties.values
