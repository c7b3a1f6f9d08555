"""Item and model metadata: per-item tables (``item`` + any columns) and per-model tables (``model`` + dates).

Both are read with the strict CSV reader (:mod:`benchmeasure.base.csv_table`) and joined to a matrix by ID: an ID
in the table that the matrix lacks, or one the matrix has and the table lacks, is an error naming a few of them and
how many there are in all. A covariate column is told apart by its values (:func:`covariate`): ISO dates
(``YYYY-MM-DD``, binned by month), numbers (ordered), or anything else (categories). A column that holds one ISO date
is a date column, and then every value must be one. Standard library only.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from benchmeasure.base.csv_table import duplicate_value, read_table
from benchmeasure.base.errors import fail

ITEM_COLUMNS = ("item", "item_id")
MODEL_DATE_COLUMNS = ("release", "cutoff")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")


def shown_ids(ids: list, limit: int = 5) -> str:
    """``'a', 'b', 'c' and 7 more``: a few IDs and a count."""
    text = ", ".join(repr(i) for i in ids[:limit])
    return text + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def parse_date(text: str, where: str) -> datetime.date:
    """An ISO ``YYYY-MM-DD`` date; anything else fails naming ``where`` and the cell."""
    value = text.strip()
    if not _DATE.fullmatch(value):
        fail(f"{where}: {value[:40]!r} is not a date (expected YYYY-MM-DD)")
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        fail(f"{where}: {value[:40]!r} is not a date (expected YYYY-MM-DD)")


def month_index(day: datetime.date) -> int:
    """Months since year 0: consecutive months differ by 1."""
    return day.year * 12 + day.month - 1


def month_date(index: int) -> str:
    """The first day of month ``index`` (``month_index``) as ``YYYY-MM-01``."""
    return f"{index // 12:04d}-{index % 12 + 1:02d}-01"


@dataclass(frozen=True)
class Covariate:
    """One item column, aligned to the matrix's items.

    kind : ``"date"`` (``order`` = month index), ``"number"`` (``order`` = the value) or ``"category"``
    values : the cells as written (stripped), one per matrix item
    order : float per item (date and number), None for a category
    """

    name: str
    kind: str
    values: list
    order: list | None


def _join(path: str, ids: list, wanted: list, what: str, key: str) -> list:
    """Row index of each of ``wanted`` in ``ids``; fails on an ID on one side only."""
    position = {name: r for r, name in enumerate(ids)}
    unknown = [name for name in ids if name not in set(wanted)]
    if unknown:
        fail(f"{path}: {len(unknown)} {what}(s) are not in the matrix: {shown_ids(unknown)}")
    absent = [name for name in wanted if name not in position]
    if absent:
        fail(f"{path}: {len(absent)} {what}(s) of the matrix have no row (column {key!r}): {shown_ids(absent)}")
    return [position[name] for name in wanted]


def read_item_meta(path: str, items: list) -> dict:
    """``{column: [value per matrix item]}`` of a per-item table (``item`` or ``item_id`` + any columns)."""
    table = read_table(path, nonblank=(), expected="item,<column>,…")
    keys = [name for name in ITEM_COLUMNS if name in table.header]
    if not keys:
        fail(f"{path}: no column 'item' (or 'item_id') naming the items (columns: {', '.join(table.header[:12])})")
    if len(keys) > 1:
        fail(f"{path}: both 'item' and 'item_id' columns; keep one")
    key = keys[0]
    ids = table.column(key)
    for r, name in enumerate(ids):
        if not name:
            fail(f"{table.where(r, key)}: blank")
    repeat = duplicate_value(table, key)
    if repeat is not None:
        fail(f"{table.where(repeat, key)}: item {ids[repeat]!r} appears twice")
    rows = _join(path, ids, list(items), "item", key)
    return {name: [table.rows[r][table.index(name)].strip() for r in rows]
            for name in table.header if name != key}


def covariate(path: str, meta: dict, column: str) -> Covariate:
    """The item column ``column`` as a covariate; a blank cell, or a non-date in a date column, fails."""
    if column not in meta:
        fail(f"{path}: no column {column!r} to group by (columns: {', '.join(meta) or 'none besides item'})")
    values = meta[column]
    blank = [k for k, v in enumerate(values) if not v]
    if blank:
        fail(f"{path}: column {column!r} is blank for {len(blank)} item(s)")
    if any(_DATE.fullmatch(v) for v in values):
        return Covariate(column, "date", values,
                         [float(month_index(parse_date(v, f"{path}: column {column!r}"))) for v in values])
    if all(_NUMBER.fullmatch(v) for v in values):
        numbers = [float(v) for v in values]
        if all(abs(x) < float("inf") for x in numbers):
            return Covariate(column, "number", values, numbers)
    return Covariate(column, "category", values, None)


def read_model_meta(path: str, models: list) -> dict:
    """``{column: [date or None per matrix model]}`` for the date columns ``release`` and ``cutoff`` (blank:
    unknown)."""
    table = read_table(path, required=("model",), nonblank=("model",), expected="model,release,cutoff")
    dated = [name for name in MODEL_DATE_COLUMNS if name in table.header]
    if not dated:
        fail(f"{path}: no column 'release' or 'cutoff' (columns: {', '.join(table.header[:12])})")
    ids = table.column("model")
    repeat = duplicate_value(table, "model")
    if repeat is not None:
        fail(f"{table.where(repeat, 'model')}: model {ids[repeat]!r} appears twice")
    rows = _join(path, ids, list(models), "model", "model")
    out = {}
    for name in dated:
        k = table.index(name)
        out[name] = [parse_date(table.rows[r][k], table.where(r, name)) if table.rows[r][k].strip() else None
                     for r in rows]
    return out
