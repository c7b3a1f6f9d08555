"""The one strict CSV reader every table input goes through. Standard library only.

Every CSV the project reads (count matrices, graded responses, difficulty files, guessing and
calibration tables, draws, domain lists, ability tables) is a header line followed by rows. The
rules that keep a row from being read wrongly without a word are enforced here, once:

- the header has no blank and no repeated column name (a repeated ``correct`` would otherwise
  silently take the first of the two);
- every required column is present;
- every row has exactly as many fields as the header (an unquoted comma in an ID would otherwise
  shift ``correct`` into another column);
- no required field is blank;
- the file is UTF-8 (a leading byte-order mark is allowed) and well-formed CSV; a name ending in ``.gz``, ``.bz2``
  or ``.xz`` is read through that decompression (:mod:`benchmeasure.base.compressed`).

Each refusal is an :class:`~benchmeasure.base.errors.InputError` naming the file, the line (the line the
row starts on, counting the header as line 1) and the column. Lines whose fields are all blank are skipped.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from benchmeasure.base.compressed import open_input, read_errors
from benchmeasure.base.errors import fail, file_errors

# one cell may be long (an answer text), but not unbounded: csv's default limit is 128 KiB
csv.field_size_limit(64 * 1024 * 1024)


@dataclass
class Table:
    """A CSV file read under the strict rules.

    Attributes
    ----------
    path : str
    header : list of str
        Column names, whitespace stripped.
    rows : list of list of str
        The fields of each non-blank row, exactly ``len(header)`` each, as written (not stripped).
    lines : list of int
        The line each row starts on.
    """

    path: str
    header: list
    rows: list = field(default_factory=list)
    lines: list = field(default_factory=list)

    def index(self, name: str) -> int:
        return self.header.index(name)

    def column(self, name: str, strip: bool = True) -> list:
        """Every row's value of column ``name``."""
        k = self.header.index(name)
        return [row[k].strip() for row in self.rows] if strip else [row[k] for row in self.rows]

    def records(self) -> list:
        """Each row as a ``{column: value}`` dict (values as written), in file order."""
        return [dict(zip(self.header, row)) for row in self.rows]

    def where(self, r: int, column: str | None = None) -> str:
        """``PATH line N`` (and ``, column NAME``) of row ``r``, for error messages."""
        place = f"{self.path}: line {self.lines[r]}"
        return f"{place}, column {column!r}" if column is not None else place


def check_header(path: str, header: list, required: Iterable = (), expected: str = "",
                 label_first: bool = False) -> list:
    """Stripped column names; fail on a blank or repeated name, or a missing required column.

    ``label_first``: the first header cell only labels the row-ID column (a wide table's), so it may be blank.
    """
    names = [name.strip() for name in header]
    hint = f" (expected {expected})" if expected else ""
    seen: dict = {}
    for position, name in enumerate(names, start=1):
        if label_first and position == 1:
            continue
        if not name:
            fail(f"{path}: line 1: header column {position} is blank{hint}")
        if name in seen:
            fail(f"{path}: line 1: column {name!r} appears twice in the header (columns {seen[name]} and "
                 f"{position}); rename or remove one")
        seen[name] = position
    missing = [name for name in required if name not in seen]
    if missing:
        kind = table_kind(names)
        fail(f"{path}: no column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
             f"(columns: {', '.join(_shown(names))}){hint}" + _item_column_hint(missing, seen)
             + (f"; this is {kind}" if kind else ""))
    return names


def _shown(names: list, limit: int = 12) -> list:
    return names if len(names) <= limit else [*names[:limit], f"… {len(names) - limit} more"]


def _item_column_hint(missing: list, seen) -> str:
    """The next step when a table names its item column the other way (``item`` for ``item_id`` or back)."""
    for wanted, present in (("item_id", "item"), ("item", "item_id")):
        if wanted in missing and present in seen:
            return (f"; rename the column {present!r} to {wanted!r} (graded responses, test.jsonl and the released "
                    "benchmarks call the item column item_id; difficulty files take item or item_id)")
    return ""


# The project's own tables, told apart by their headers, so that a file given where another kind is expected is
# named with the command that takes it (docs/pip_user.md, "Item columns and the project's tables").
def table_kind(names) -> str | None:
    """What a header says a table is, with the commands that take it, or None for none of the project's tables."""
    names = [str(n).strip() for n in names]
    given = set(names)
    if {"item_id", "trial", "correct"} <= given:
        return ("graded responses (model,item_id,trial,correct): make a count matrix with benchmeasure prepare, "
                "then benchmeasure fit writes its difficulty.csv")
    if "b_mean" in given and given & {"item", "item_id"}:
        return ("a difficulty file (item,b_mean,…; what benchmeasure fit writes): give it to diagnose, plot, explore, "
                "score --difficulty or select-anchors, and the count matrix it was fit from to fit or calibrate")
    if {"model", "theta_mean"} <= given:
        return ("an ability file (model,theta_mean,…; what benchmeasure fit writes beside difficulty.csv): give it to "
                "calibrate --abilities")
    if len(names) > 1 and names[0] == "model" and not given & {"b_mean", "theta_mean", "correct"}:
        return ("a count matrix (model,<item>,…): benchmeasure fit MATRIX --n-trials K --output-dir DIR writes its "
                "difficulty.csv")
    return None


@contextlib.contextmanager
def open_table(path: str | os.PathLike, required: Iterable = (), nonblank: Iterable | None = None,
               expected: str = "", label_first: bool = False) -> Iterator[tuple[list, Iterator[tuple[int, list]]]]:
    """Stream a CSV under the strict rules: yields ``(header, rows)`` where rows gives ``(line, fields)``.

    ``required`` columns must exist; ``nonblank`` columns (default: the required ones) must not be blank
    in any row. ``expected`` describes the format for messages (``"model,item_id,trial,correct"``).
    ``label_first``: the first header cell may be blank (see :func:`check_header`).
    """
    path = os.fspath(path)
    required = tuple(required)
    nonblank = required if nonblank is None else tuple(nonblank)
    if os.path.isdir(path):
        fail(f"{path}: is a folder, expected a CSV file")
    with file_errors(path):
        handle = open_input(path)  # plain, or decompressed as its name says (.gz, .bz2, .xz)
        with handle, read_errors(path):
            reader = csv.reader(handle, strict=True)
            raw = next(reader, None)
            while raw == []:  # blank lines before the header
                raw = next(reader, None)
            if raw is None:
                fail(f"{path}: file is empty (expected a header line"
                     + (f": {expected})" if expected else ")"))
            header = check_header(path, raw, required, expected, label_first)
            checks = [(header.index(name), name) for name in nonblank if name in header]
            width = len(header)

            def rows() -> Iterator[tuple[int, list]]:
                previous = reader.line_num
                for fields in reader:
                    start, previous = previous + 1, reader.line_num
                    if not any(cell.strip() for cell in fields):
                        continue  # a blank line (or one of empty fields, as spreadsheets save them)
                    if len(fields) != width:
                        more = " (an unquoted comma inside a field? quote the field)" if len(fields) > width else ""
                        fail(f"{path}: line {start}: {len(fields)} field{'s' if len(fields) != 1 else ''}, "
                             f"the header has {width}{more}")
                    for k, name in checks:
                        if not fields[k].strip():
                            fail(f"{path}: line {start}, column {name!r}: blank")
                    yield start, fields

            yield header, rows()


def read_table(path: str | os.PathLike, required: Iterable = (), nonblank: Iterable | None = None,
               expected: str = "") -> Table:
    """Read a whole CSV under the strict rules (see :func:`open_table`)."""
    with open_table(path, required, nonblank, expected) as (header, rows):
        table = Table(os.fspath(path), header)
        for line, fields in rows:
            table.lines.append(line)
            table.rows.append(fields)
    return table


def duplicate_value(table: Table, column: str) -> int | None:
    """Index of the first row whose ``column`` value (stripped) repeats an earlier row's, or None."""
    seen: set = set()
    k = table.index(column)
    for r, row in enumerate(table.rows):
        value = row[k].strip()
        if value in seen:
            return r
        seen.add(value)
    return None


def finite_float(cell: str, where: str) -> float:
    """``cell`` as a finite float; anything else is one :class:`~benchmeasure.base.errors.InputError` that starts with
    ``where`` (file, line, column, item …) and quotes the cell."""
    text = cell.strip()
    try:
        value = float(text)
    except ValueError:
        fail(f"{where} {text[:40]!r} is not a number")
    if not math.isfinite(value):
        fail(f"{where} {text[:40]!r} is not a finite number")
    return value
