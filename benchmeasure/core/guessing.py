"""Per-item guessing floors g (the 1PL's lower asymptote, paper Appendix C.3) from a CSV. Standard library only.

``item_id,guessing``: one row per item, each g in [0, 1) (0.25 for four-choice questions). Used by
``fit_irt.py``, ``irt_robustness.py``, ``score_models.py``, ``calibrate_items.py`` and ``select_anchors.py``.
"""

from __future__ import annotations

import math

from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import fail


def read_guessing_csv(path: str, items: list, source: str = "matrix") -> list:
    """Per-item guessing in the order of ``items`` from ``item_id,guessing``; InputError on any problem.

    Exactly one row per item of ``items`` (the ``source``'s items: a matrix, a difficulty file), any order.
    """
    table = read_table(path, required=("item_id", "guessing"), expected="a header 'item_id,guessing'")
    known = set(items)
    values: dict = {}
    for r, (item, cell) in enumerate(zip(table.column("item_id", strip=False), table.column("guessing"))):
        line = table.lines[r]
        if item not in known:
            fail(f"{path}: line {line}: item {item!r} is not in the {source}")
        if item in values:
            fail(f"{path}: line {line}: item {item!r} appears more than once")
        try:
            g = float(cell)
        except ValueError:
            fail(f"{path}: line {line}, item {item!r}: guessing {cell[:40]!r} is not a number")
        if not (math.isfinite(g) and 0.0 <= g < 1.0):
            fail(f"{path}: line {line}, item {item!r}: guessing {cell[:40]} is outside [0, 1)")
        values[item] = g
    missing = [item for item in items if item not in values]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        fail(f"{path}: no guessing value for {source} item {missing[0]!r}{more}")
    return [values[item] for item in items]


def add_guessing_options(parser, rows_of: str) -> None:
    """``--guessing G`` | ``--guessing-csv CSV`` (mutually exclusive); ``rows_of`` names whose items the CSV lists."""
    from benchmeasure.base.options import GUESSING

    group = parser.add_mutually_exclusive_group()
    group.add_argument("--guessing", type=GUESSING, default=None, metavar="G",
                       help="one guessing floor g in [0, 1) for every item (e.g. 0.25 for four choices; default 0)")
    group.add_argument("--guessing-csv", default=None, metavar="CSV",
                       help=f"per-item guessing: columns item_id,guessing, one row per item of {rows_of}")


def guessing_from_options(args, items: list, source: str):
    """Per-item guessing (a list, in the order of ``items``) from --guessing-csv, else the constant (default 0)."""
    if getattr(args, "guessing_csv", None) is not None:
        return read_guessing_csv(args.guessing_csv, items, source)
    return [args.guessing or 0.0] * len(items)
