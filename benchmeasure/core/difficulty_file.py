"""Read one column of item difficulties from a CSV file. Standard library only.

Difficulty files are what ``scripts/fit_irt.py`` writes (``item,b_mean,b_sd,…``) or what
the paper released (``data/benchmarks/<benchmark>/difficulty.csv``: ``item_id,b_mean``).
The item ID column may be called ``item`` or ``item_id``; it is optional for reading
values but, where present, is used to name the offending item in error messages.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field

from benchmeasure.base.csv_table import finite_float, read_table
from benchmeasure.base.errors import fail

ID_COLUMNS = ("item", "item_id")
# the project's convergence rules for a fit (Vehtari et al. 2021), used by the fit and by every reader of one
R_HAT_MAX = 1.01
ESS_BULK_MIN = 400.0

logger = logging.getLogger(__name__)
_checked: set = set()


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
    warn_unconverged(path, table, ids)
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


def _worst(table, ids: list, column: str, pick) -> tuple | None:
    """(value, item) of the worst finite number in ``column`` (blank cells, as a MAP fit writes, are skipped)."""
    if column not in table.header:
        return None
    found = []
    for item, cell in zip(ids, table.column(column)):
        try:
            value = float(cell)
        except ValueError:
            continue
        if value == value and abs(value) != float("inf"):
            found.append((value, item))
    return pick(found) if found else None


def warn_unconverged(path: str, table, ids: list) -> None:
    """Warn, once per file, when a fit's own diagnostics break the project's rules: a difficulty file's ``r_hat``
    above :data:`R_HAT_MAX` or ``ess_bulk`` below :data:`ESS_BULK_MIN`, or divergences in ``diagnostics.json``
    beside it. Metrics of such a fit are computed but not to be trusted; the warning says what to rerun."""
    key = os.path.realpath(path)
    if key in _checked:
        return
    _checked.add(key)
    problems = []
    r_hat = _worst(table, ids, "r_hat", max)
    if r_hat is not None and r_hat[0] > R_HAT_MAX:
        problems.append(f"r_hat {r_hat[0]:.3f} > {R_HAT_MAX} (item {r_hat[1]!r})")
    ess = _worst(table, ids, "ess_bulk", min)
    if ess is not None and ess[0] < ESS_BULK_MIN:
        problems.append(f"ess_bulk {ess[0]:.0f} < {ESS_BULK_MIN:.0f} (item {ess[1]!r})")
    record_path = os.path.join(os.path.dirname(path) or ".", "diagnostics.json")
    if problems or os.path.isfile(record_path):
        try:
            with open(record_path, encoding="utf-8") as handle:
                record = json.load(handle)
        except (OSError, UnicodeDecodeError, ValueError):
            record = None
        divergences = record.get("divergences") if isinstance(record, dict) else None
        if isinstance(divergences, int) and not isinstance(divergences, bool) and divergences > 0:
            problems.append(f"{divergences} divergent transitions ({record_path})")
    if problems:
        logger.warning("%s: the fit fails its own convergence checks (%s); its metrics are not to be trusted: "
                       "refit with more draws (benchmeasure fit … --tune 2000 --draws 2000)", path,
                       "; ".join(problems))


def fit_n_trials(path: str | os.PathLike) -> int | None:
    """Trials per cell (K, ``input.n_trials``) of the fit whose ``diagnostics.json`` sits beside ``path`` (a
    difficulty file or a saved posterior), or None when there is none."""
    folder = os.path.dirname(os.path.abspath(os.fspath(path).rstrip("/")))
    try:
        with open(os.path.join(folder, "diagnostics.json"), encoding="utf-8") as handle:
            value = json.load(handle).get("input", {}).get("n_trials")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


GENERIC_STEMS = {"response_matrix", "matrix", "responses", "counts", "difficulty", "calibration", "m"}


def default_benchmark_name(path: str | os.PathLike) -> str:
    """A benchmark's name from its data file: the file's stem (``chembench.csv`` → chembench), or the folder
    holding it when the stem is a generic one (``aime24/response_matrix.csv`` → aime24)."""
    from benchmeasure.base.compressed import strip_compression

    path = os.path.abspath(strip_compression(path)[0])  # m.csv.gz names the benchmark m, as m.csv does
    stem = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.basename(os.path.dirname(path))
    return folder if (stem in GENERIC_STEMS and folder) else stem


def benchmark_name(path: str | os.PathLike, given: str | None = None) -> str:
    """The name a report shows for the difficulty file ``path``: ``given`` (a ``--name``), else the name the fit
    recorded (``benchmark`` in ``diagnostics.json`` beside the file, from ``benchmeasure fit --name``), else
    :func:`default_benchmark_name` of the file (its folder, as in ``data/benchmarks/<name>/difficulty.csv``)."""
    if given:
        return given
    record_path = os.path.join(os.path.dirname(os.fspath(path)) or ".", "diagnostics.json")
    try:
        with open(record_path, encoding="utf-8") as handle:
            recorded = json.load(handle).get("benchmark")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        recorded = None
    if isinstance(recorded, str) and recorded.strip():
        return recorded.strip()
    return default_benchmark_name(path)
