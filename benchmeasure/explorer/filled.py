"""Read a finished gap-filling folder for the explorer: a BenchFill run or a mass-fill output.

Both folder kinds are written by :mod:`benchmeasure.benchfill` (``runner.write_outputs`` and
``mass_fill.write_outputs``); this module only reads them, with the standard library:

* a **BenchFill run** (``run_experiment.sh`` / ``propose/benchfill.py``): ``config.json``,
  ``summary.json`` and ``new_item_records.csv`` — one selected item per filled gap (paper,
  Section 4 and Table 2; the baseline's items are not shown);
* a **mass-fill output** (``propose/mass_fill/mass_fill.py``, marked by ``mass_fill.json``):
  ``config.json``, ``mass_fill_summary.json`` and ``mass_fill_records.csv`` — every inserted
  item in insertion order.

The original benchmark is the run's own calibration table and item pool, named in
``config.json`` (read by :class:`benchmeasure.benchfill.run_folder.RunFolder`) with their SHA-256 at
``init``; a file that is gone or changed since is an
error, since the "before" curve would no longer be the one the run filled. New items keep the
z of their online calibration on the original min–max scale; like Table 2
(:func:`benchmeasure.benchfill.summary.reduction`) a value outside [0, 1] is clipped to the
boundary for the "after" measure.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from benchmeasure.base.csv_table import finite_float, read_table
from benchmeasure.base.errors import fail, file_errors
from benchmeasure.base.files import RENAMED_FIELDS, file_in_folder, sha256_file
from benchmeasure.benchfill.gaps import SeedSet, load_seed_set
from benchmeasure.benchfill.records import Annotation
from benchmeasure.benchfill.run_folder import CONFIG, RunFolder
from benchmeasure.benchfill.strategies import STRATEGIES
from benchmeasure.benchfill.summary import reduction
from benchmeasure.core.metrics import diagnose

RUN_SUMMARY = "summary.json"
RUN_RECORDS = STRATEGIES["benchfill"].records_file  # the paper's method's selected items (new_item_records.csv)
MASS_SUMMARY, MASS_RECORDS = "mass_fill_summary.json", "mass_fill_records.csv"
BENCHFILL_RUN, MASS_FILL = "BenchFill run", "mass fill"
RECORD_FLOATS = ("left", "right", "target", "b_mean", "z")


@dataclass(frozen=True)
class NewItem:
    """One item a filling folder added, with where it was aimed and what it was rewritten from.

    Attributes
    ----------
    item_id : str
        The child's ID (``benchfill-g1-r2-p0-c3``); ``label`` is the mass-fill ``fill_id`` when there is one.
    step : int
        The gap's rank (BenchFill run) or the mass-fill step.
    left, right, target : float
        The targeted gap and its midpoint z* (paper, Section 4).
    z, b_mean : float
        The item's calibrated difficulty, normalized on the original scale and raw.
    parent_id : str
    parent_z : float or None
        The parent's z when it is an original item or an annotated child of the run.
    question : str
    lineage : str
        ``ancestor > … > item``.
    """

    item_id: str
    label: str
    step: int
    left: float
    right: float
    target: float
    z: float
    b_mean: float
    parent_id: str
    parent_z: float | None
    question: str
    lineage: str

    @property
    def deviation(self) -> float:
        return abs(self.z - self.target)


@dataclass(frozen=True)
class Target:
    """One targeted gap [left, right] with target z* (``step`` = gap rank or mass-fill step)."""

    step: int
    left: float
    right: float
    target: float


@dataclass(frozen=True)
class FilledRun:
    """A finished filling folder, with the original benchmark it started from.

    Attributes
    ----------
    kind : str
        :data:`BENCHFILL_RUN` or :data:`MASS_FILL`.
    folder : str
    benchmark : benchmeasure.benchfill.gaps.SeedSet
        The original items (calibration joined with the pool, z on its min–max scale).
    calibration, calibration_sha256 : str
        The calibration table the run started from, and its SHA-256.
    items : list of NewItem
    targets : list of Target
        Every gap the folder aimed at (filled or not), in order.
    reported : dict
        The folder's own summary figures, as written there.
    inputs : dict
        Every file read, ``{path: sha256}``.
    """

    kind: str
    folder: str
    benchmark: SeedSet
    calibration: str
    calibration_sha256: str
    items: list
    targets: list
    reported: dict
    inputs: dict

    def z_before(self) -> list:
        return self.benchmark.z_values()

    def z_after(self) -> list:
        """Originals plus new items, each new z clipped to [0, 1] (as Table 2 does)."""
        return self.z_before() + [min(1.0, max(0.0, item.z)) for item in self.items]

    def top3_reduction(self) -> float:
        """Top-3 Gap Sum reduction (%) from the original benchmark (paper, Table 2)."""
        return reduction(self.z_before(), [item.z for item in self.items], 3)

    def target_deviation(self) -> float | None:
        """Mean |z − z*| over the new items (Table 2's target deviation); None when none was added."""
        return sum(item.deviation for item in self.items) / len(self.items) if self.items else None

    def metrics(self, top_k: int = 5) -> dict:
        """DDM, Max Gap and Top-k Gap Sum before and after (:func:`benchmeasure.core.metrics.diagnose`)."""
        return {label: diagnose(z, top_k=top_k, normalized=True, where=f"{self.folder} ({label})")
                for label, z in (("before", self.z_before()), ("after", self.z_after()))}


def _read_json(path: Path) -> dict:
    if not path.is_file():
        fail(f"{path.parent}: no {path.name}; is the run finished? (run it to completion first)")
    with file_errors(path):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            fail(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})")
    if not isinstance(record, dict):
        fail(f"{path}: expected a JSON object")
    return record


def _field(record: dict, where: str, *keys):
    value = record
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            fail(f"{where}: no {'.'.join(keys)}")
        value = value[key]
    return value


def read_records(path: Path, id_column: str) -> list:
    """The rows of a records CSV (``new_item_records.csv`` / ``mass_fill_records.csv``), checked."""
    if not path.is_file():
        fail(f"{path.parent}: no {path.name}; is the run finished? (run it to completion first)")
    needed = ("gap", "item_id", "parent_id", "question", "lineage", *RECORD_FLOATS, id_column)
    rows = []
    gap_ends = ("left", "right")  # z_L, z_R in folders written before the rename (CHANGELOG.md)
    table = read_table(path, required=tuple(c for c in dict.fromkeys(needed) if c not in gap_ends),
                       nonblank=("gap", "item_id"))
    table.header = [RENAMED_FIELDS.get(c, c) for c in table.header]
    missing = [c for c in gap_ends if c not in table.header]
    if missing:
        fail(f"{path}: no column {missing[0]!r} (columns: {', '.join(table.header)})")
    for r, row in enumerate(table.records()):
        where = f"{path}: line {table.lines[r]}"
        values = {c: finite_float(row.get(c) or "", f"{where}: {c}") for c in RECORD_FLOATS}
        try:
            step = int(row["gap"])
        except ValueError:
            fail(f"{where}: gap {row['gap'][:40]!r} is not an integer")
        rows.append({**row, **values, "gap": step})
    return rows


def read_filled(folder) -> FilledRun:
    """Read a finished BenchFill run or mass-fill folder (module docstring)."""
    folder = Path(folder)
    config_path = file_in_folder(folder, CONFIG, "run folder", "a BenchFill run or mass-fill folder")
    run = RunFolder.open(folder)  # the one reader of config.json
    files = {entry.label: entry for entry in run.inputs}
    for label in ("calibration", "pool"):
        if label not in files:
            fail(f"{config_path}: damaged, no {label} input recorded")
        files[label].check_unchanged(folder)  # the "before" curve must be the benchmark the run filled
    calibration, pool = files["calibration"].path, files["pool"].path
    calibration_sha, pool_sha = files["calibration"].sha256, files["pool"].sha256
    settings = run.config.benchmark
    with file_errors(calibration):
        benchmark = load_seed_set(settings.name, calibration, pool, settings.question_field, settings.answer_field)
    mass = run.is_mass_fill
    kind = MASS_FILL if mass else BENCHFILL_RUN
    summary_path = folder / (MASS_SUMMARY if mass else RUN_SUMMARY)
    records_path = folder / (MASS_RECORDS if mass else RUN_RECORDS)
    summary = _read_json(summary_path)
    rows = read_records(records_path, "fill_id" if mass else "item_id")
    known = {item.item_id: item.z for item in benchmark.items}
    for event in run.events():
        if isinstance(event, Annotation) and event.z is not None:
            known.setdefault(event.item_id, event.z)
    items = [NewItem(row["item_id"], row["fill_id"] if mass else row["item_id"], row["gap"], row["left"], row["right"],
                     row["target"], row["z"], row["b_mean"], row["parent_id"], known.get(row["parent_id"]),
                     row["question"], row["lineage"]) for row in rows]
    reported = _reported(summary, summary_path, mass)
    targets = _targets(summary, summary_path, mass)
    inputs = {str(calibration): calibration_sha, str(pool): pool_sha, str(config_path): sha256_file(config_path),
              str(summary_path): sha256_file(summary_path), str(records_path): sha256_file(records_path)}
    return FilledRun(kind, str(folder), benchmark, str(calibration), calibration_sha, items, targets, reported, inputs)


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        fail(f"{where}: {value!r} is not a finite number")
    return float(value)


def _targets(summary: dict, path: Path, mass: bool) -> list:
    """The gaps the folder aimed at: a run's ``targets``, or every mass-fill step (inserted or missed)."""
    entries = _field(summary, str(path), "steps" if mass else "targets")
    if not isinstance(entries, list):
        fail(f"{path}: {'steps' if mass else 'targets'} is not a list")
    targets = []
    for index, entry in enumerate(entries, start=1):
        where = f"{path}: {'steps' if mass else 'targets'} entry {index}"
        if not isinstance(entry, dict):
            fail(f"{where}: not an object")
        step = _field(entry, where, "step" if mass else "gap")
        if isinstance(step, bool) or not isinstance(step, int):
            fail(f"{where}: {step!r} is not an integer")
        entry = {RENAMED_FIELDS.get(k, k): v for k, v in entry.items()}  # z_L, z_R in folders written before the rename
        targets.append(Target(step, *(_number(_field(entry, where, key), f"{where} {key}")
                                      for key in ("left", "right", "target"))))
    return targets


def _reported(summary: dict, path: Path, mass: bool) -> dict:
    """The folder's own headline figures (shown beside ours, which must agree)."""
    where = str(path)
    def number(*keys, optional=False):
        value = _field(summary, where, *keys)
        return None if optional and value is None else _number(value, f"{where}: {'.'.join(keys)}")

    if mass:
        return {"max_gap_before": number("before", "max_gap"), "max_gap_after": number("after", "max_gap"),
                "items_added": number("items_added"), "stop_reason": str(_field(summary, where, "stop_reason"))}
    return {"top3_gap_sum_reduction": number("benchfill", "top3_gap_sum_reduction"),
            "target_deviation": number("benchfill", "target_deviation", optional=True),
            "gaps_filled": number("benchfill", "gaps_filled"), "gaps": number("benchfill", "gaps")}
