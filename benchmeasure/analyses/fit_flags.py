"""A ``check-fit`` result read back: which items misfit, for the commands that use the flags.

``benchmeasure check-fit FIT_DIR --output-dir DIR`` writes ``DIR/items.csv`` (one row per item: ``item``, the
statistics, ``p_value``, ``q_value``, ``flagged``, ``against_ability``, ``reason``) and ``DIR/check_fit.json`` (the
settings and the SHA-256 of the matrix it checked). ``select-anchors --check-fit`` leaves the misfitting items out
of the anchor candidates and ``browse --check-fit`` shows each listed item's fit; both read the check here, and
both refuse a check of another matrix: items of the check that the benchmark lacks, items of the benchmark the
check lacks, or a recorded matrix hash other than the one the benchmark's fit records (``diagnostics.json``
beside its ``difficulty.csv``, when there is one).

An item *misfits* when the check flagged it (its q-value at most the check's false discovery rate) or found its
success rising as ability falls (``against_ability``); ``flagged`` already includes the latter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from benchmeasure.base.errors import fail

ITEMS_CSV = "items.csv"
RECORD = "check_fit.json"
REQUIRED = ("item", "p_value", "flagged", "against_ability")
_BOOL = {"true": True, "false": False}


@dataclass(frozen=True)
class FitFlags:
    """One check's per-item verdicts: ``rows`` ``{item: {"p_value", "q_value", "flagged", "against_ability",
    "reason"}}`` in file order, where they came from, and what ``check_fit.json`` records (when it is there)."""

    items_csv: str
    record_path: str | None
    rows: dict
    matrix_sha256: str | None
    fdr: float | None

    def misfits(self) -> list:
        """Items the check flagged or found running against ability, in file order."""
        return [item for item, row in self.rows.items() if row["flagged"] or row["against_ability"]]

    def against(self) -> list:
        return [item for item, row in self.rows.items() if row["against_ability"]]

    def label(self, item: str) -> str:
        """A short display of one item's fit: its p-value and, when it misfits, the flag."""
        row = self.rows.get(item)
        if row is None:
            return "-"
        flag = " against" if row["against_ability"] else " flagged" if row["flagged"] else ""
        return f"{row['p_value']:.2g}{flag}"

    def provenance(self) -> dict:
        from benchmeasure.base.files import sha256_file

        return {"items_csv": os.path.abspath(self.items_csv), "items_csv_sha256": sha256_file(self.items_csv),
                "check_fit_json": None if self.record_path is None else os.path.abspath(self.record_path),
                "check_fit_json_sha256": None if self.record_path is None else sha256_file(self.record_path),
                "matrix_sha256": self.matrix_sha256, "fdr": self.fdr, "items": len(self.rows)}


def check_paths(path: str, option: str = "--check-fit") -> tuple[str, str | None]:
    """``(items.csv, check_fit.json or None)`` of a check-fit output folder or of its ``items.csv``; one error line
    when neither is there."""
    path = os.fspath(path)
    if os.path.isdir(path):
        items = os.path.join(path, ITEMS_CSV)
        if not os.path.isfile(items):
            fail(f"{option} {path}: no {ITEMS_CSV} in the folder (write one with benchmeasure check-fit FIT_DIR "
                 f"--output-dir {path})")
    elif os.path.isfile(path):
        items = path
    else:
        fail(f"{option} {path}: no such file or folder (a check-fit output folder or its {ITEMS_CSV})")
    record = os.path.join(os.path.dirname(items) or ".", RECORD)
    return items, record if os.path.isfile(record) else None


def read_check_fit(path: str, option: str = "--check-fit") -> FitFlags:
    """The check at ``path`` (a check-fit output folder or its ``items.csv``), with ``check_fit.json`` when it lies
    beside the CSV. A missing column, a repeated or blank item, a p-value outside [0, 1], a flag other than
    true/false, or a ``check_fit.json`` that is not one is one error line naming the file and line."""
    from benchmeasure.base.csv_table import duplicate_value, finite_float, read_table
    from benchmeasure.base.files import read_json

    items_csv, record_path = check_paths(path, option)
    table = read_table(items_csv, required=REQUIRED,
                       expected="item,…,p_value,q_value,flagged,against_ability,reason (check-fit's items.csv)")
    repeated = duplicate_value(table, "item")
    if repeated is not None:
        fail(f"{table.where(repeated, 'item')}: item {table.rows[repeated][table.index('item')].strip()!r} appears "
             "more than once")
    has = set(table.header)
    rows = {}
    for r, record in enumerate(table.records()):
        item = record["item"].strip()
        if not item:
            fail(f"{table.where(r, 'item')}: blank item")
        p = finite_float(record["p_value"], f"{table.where(r, 'p_value')}:")
        if not 0.0 <= p <= 1.0:
            fail(f"{table.where(r, 'p_value')}: a p-value is in [0, 1], found {p:g}")
        q = None
        if "q_value" in has and record["q_value"].strip():
            q = finite_float(record["q_value"], f"{table.where(r, 'q_value')}:")
        flags = {}
        for column in ("flagged", "against_ability"):
            value = record[column].strip().lower()
            if value not in _BOOL:
                fail(f"{table.where(r, column)}: expected true or false, found {record[column][:20]!r}")
            flags[column] = _BOOL[value]
        rows[item] = {"p_value": p, "q_value": q, **flags,
                      "reason": record.get("reason", "").strip() if "reason" in has else ""}
    if not rows:
        fail(f"{items_csv}: no rows under the header")
    sha = fdr = None
    if record_path is not None:
        data = read_json(record_path, "check_fit.json of benchmeasure check-fit")
        source = data.get("input") if isinstance(data, dict) else None
        settings = data.get("settings") if isinstance(data, dict) else None
        if not isinstance(source, dict) or not isinstance(source.get("sha256"), str) or not isinstance(settings,
                                                                                                        dict):
            fail(f"{record_path}: not a check_fit.json of benchmeasure check-fit (no input.sha256 or settings)")
        sha = source["sha256"]
        fdr = settings.get("fdr") if isinstance(settings.get("fdr"), (int, float)) else None
        counted = source.get("items")
        if isinstance(counted, int) and counted != len(rows):
            fail(f"{record_path}: records a check of {counted} items, but {items_csv} has {len(rows)}; the two files "
                 "are from different checks")
    return FitFlags(items_csv, record_path, rows, sha, fdr)


def fit_matrix_sha256(difficulty_path: str) -> tuple[str | None, str | None]:
    """``(SHA-256 of the matrix, diagnostics.json)`` that the fit beside ``difficulty_path`` records, or
    ``(None, None)`` when the difficulty file has no ``diagnostics.json`` of ``benchmeasure fit`` beside it."""
    import json

    path = os.path.join(os.path.dirname(os.fspath(difficulty_path)) or ".", "diagnostics.json")
    if not os.path.isfile(path):
        return None, None
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError):
        return None, None   # not a fit's record: nothing to compare
    source = data.get("input") if isinstance(data, dict) else None
    sha = source.get("sha256") if isinstance(source, dict) else None
    return (sha, path) if isinstance(sha, str) else (None, None)


def check_matches(flags: FitFlags, items: list, what: str, matrix_sha256: str | None = None,
                  matrix_record: str | None = None, option: str = "--check-fit", required: list | None = None) -> None:
    """One error line unless ``flags`` is a check of the benchmark whose items are ``items`` (``what`` names it):
    every item of the check among ``items``, every item of ``required`` (default: ``items``) in the check, and the
    matrix hash its fit records (``matrix_sha256`` from ``matrix_record``) when both sides record one."""
    where = flags.record_path or flags.items_csv
    if matrix_sha256 is not None and flags.matrix_sha256 is not None and matrix_sha256 != flags.matrix_sha256:
        fail(f"{option} {where}: a check of another matrix (SHA-256 {flags.matrix_sha256[:12]}…, while "
             f"{matrix_record} records {matrix_sha256[:12]}…); run check-fit on this benchmark's fit")
    known = set(items)
    foreign = [item for item in flags.rows if item not in known]
    if foreign:
        fail(f"{option} {flags.items_csv}: {len(foreign)} item(s) of the check are not in {what} (first: "
             f"{foreign[0]!r}); a check of another matrix?")
    missing = [item for item in (items if required is None else required) if item not in flags.rows]
    if missing:
        fail(f"{option} {flags.items_csv}: {len(missing)} item(s) of {what} are not in the check (first: "
             f"{missing[0]!r}); a check of another matrix?")
