"""Wide response tables (one row per model or per item, one cell per pair) → the count matrix.

Published response matrices (ChemBench's ``binary_matrix.csv`` bundled in ``data/chembench/``,
and those of py-irt, PSN-IRT or metabench) are wide tables of 0/1 values, often written as
floats and often with the items as rows::

    ,GPT-4o,o1,Claude-3.5 (Sonnet)
    0,0.0,1.0,0.0
    1,1.0,1.0,1.0

The IDs come from the header (columns) and the first column (rows), surrounding spaces
removed; the first header cell is a label of the ID column and is ignored (it is often
blank). The file is read by the project's one strict CSV reader (:mod:`benchmeasure.base.csv_table`):
every row has as many fields as the header, no header name is blank or repeated, and lines
whose fields are all blank are skipped. Each cell is the number of
correct responses of that model to that item, an integer in [0, n_trials]; an integer
written as a float (``1.0``, ``1.``) is accepted, anything else — ``0.5``, ``1e0``, ``nan``,
a blank — is rejected with the line, the column and the model and item named. The result is
the paper's model × item matrix (Figure 2), whatever the orientation of the file.

Parsing uses the standard library only; numpy is imported to build the matrix.
"""

from __future__ import annotations

import os
import re

from benchmeasure.base.csv_table import open_table
from benchmeasure.base.errors import fail

# An integer count, optionally written as a float with a zero fraction: 1, 1.0, 1., 001.000.
# ASCII digits only (str.isdigit and int() would also take '٣'); the length bound keeps int() away from
# thousands of digits (a count that long is out of range anyway).
COUNT = re.compile(r"([0-9]{1,18})(?:\.0*)?")


def _cell_value(text: str, n_trials: int) -> int | str:
    """The count in ``text``, or a description of why it is not one."""
    if not text:
        return "empty cell"
    match = COUNT.fullmatch(text)
    if match is None:
        shown = text if len(text) <= 40 else text[:37] + "..."
        if text.lower() in ("nan", "-nan", "+nan", "na", "n/a", "null", "none"):
            return f"{shown!r} is a missing value; every cell needs a count in [0, {n_trials}]"
        return f"{shown!r} is not an integer count in [0, {n_trials}]"
    value = int(match.group(1))
    if value > n_trials:
        return f"count {value} is outside [0, {n_trials}] (--n-trials {n_trials})"
    return value


def read_wide_matrix(path: str | os.PathLike, n_trials: int, items_as_rows: bool = False):
    """Read a wide table of counts as a :class:`~benchmeasure.core.matrix.ResponseMatrix` (models × items).

    Parameters
    ----------
    path : path of a UTF-8 CSV (a BOM is allowed)
    n_trials : int
        Responses per model–item pair (K); every cell must be an integer in [0, K].
    items_as_rows : bool
        False: one row per model, one column per item. True: one row per item, one column per model
        (ChemBench's layout); the matrix is transposed on reading.

    Raises
    ------
    InputError
        Naming the file and, where it applies, the line, column, model and item: a missing, empty,
        non-UTF-8 or malformed file; a blank or duplicate ID; a row whose number of cells differs from
        the header's; a blank, non-integer, NaN or out-of-range cell; fewer than 2 models or 2 items.
    """
    from benchmeasure.core.matrix import ResponseMatrix, check_n_trials

    check_n_trials(n_trials)
    path = os.fspath(path)
    row_kind, column_kind = ("item", "model") if items_as_rows else ("model", "item")
    expected = f"a header ',<{column_kind}>,<{column_kind}>,…' and one row per {row_kind}"
    rows, data, first_line = [], [], {}
    with open_table(path, nonblank=(), expected=expected, label_first=True) as (header, lines):
        columns = header[1:]
        for line, fields in lines:
            name = fields[0].strip()
            if not name:
                fail(f"{path}: line {line}, column 1: blank {row_kind} ID")
            if name in first_line:
                fail(f"{path}: line {line}: {row_kind} ID {name!r} is also on line {first_line[name]}")
            first_line[name] = line
            values = []
            for position, (column, cell) in enumerate(zip(columns, fields[1:]), start=2):
                value = _cell_value(cell.strip(), n_trials)
                if isinstance(value, str):
                    pair = (f"model {column!r}, item {name!r}" if items_as_rows
                            else f"model {name!r}, item {column!r}")
                    fail(f"{path}: line {line}, column {position} ({pair}): {value}")
                values.append(value)
            rows.append(name)
            data.append(values)
    models, items = (columns, rows) if items_as_rows else (rows, columns)
    if len(models) < 2 or len(items) < 2:
        fail(f"{path}: need at least 2 models and 2 items, found {len(models)} models and {len(items)} items"
             + (" (models are the columns: --items-as-rows)" if items_as_rows else
                " (models are the rows; if they are the columns, add --items-as-rows)"))
    import numpy as np

    counts = np.asarray(data, dtype=np.int64).reshape(len(rows), len(columns))
    if items_as_rows:
        counts = np.ascontiguousarray(counts.T)
    return ResponseMatrix(list(models), list(items), counts, n_trials)
