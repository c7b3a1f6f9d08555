"""The released benchmark layout: ``data/benchmarks/<benchmark>/difficulty.csv`` + ``test.jsonl``.

Each benchmark is a folder named after it holding

* ``difficulty.csv`` with ``item_id,b_mean`` — unnormalized 1PL difficulties; in the released
  layout the IDs are the integers 0 … N−1, one row each (the paper's README);
* ``test.jsonl`` — one JSON object per line with an ``item_id`` field (the evaluated item).

A ``difficulty.csv`` whose ID column is ``item_id`` (the released layout) must list every ID
0 … N−1 exactly once, with or without a ``test.jsonl``; when ``test.jsonl`` is present it must
list the same IDs (0 … N−1 exactly once, as many records as difficulty rows), whatever the
difficulty file's ID column is called. A folder holding only a ``difficulty.csv`` with an
``item`` column of arbitrary IDs (what ``fit_irt.py`` writes) is accepted as a benchmark too;
its IDs are then only required to be unique. The first problem found is named: the file, the
line, and the first out-of-range ID and the first missing one.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.base.files import file_in_folder, read_jsonl_objects
from benchmeasure.core.difficulty_file import read_difficulty_column

DIFFICULTY = "difficulty.csv"
TEST = "test.jsonl"


@dataclass(frozen=True)
class Benchmark:
    """One benchmark's difficulties.

    Attributes
    ----------
    name : str
        The folder name (``AIME24``).
    folder : str
    item_ids : list of str, length N
    difficulties : list of float, length N
        ``b_mean`` per item, unnormalized, in file order.
    test_items : int or None
        Number of records in ``test.jsonl`` (None when the folder has none).
    """

    name: str
    folder: str
    item_ids: list
    difficulties: list
    test_items: int | None


def _integer_ids(ids: list, lines: list, where: str) -> list:
    """Check that ``ids`` (found on ``lines`` of ``where``) are the integers 0 … N−1 in any order; return them."""
    last = len(ids) - 1
    values = []
    for text, line in zip(ids, lines):
        try:
            values.append(int(str(text).strip()))
        except ValueError:
            fail(f"{where}: line {line}: item_id {text!r} is not an integer (expected 0 … {last}): in the released "
                 "layout item_id is the item's row index into test.jsonl; a difficulty file naming its items "
                 "otherwise calls the column 'item' (as benchmeasure fit writes it): rename the column")
    seen = {}
    for value, line in zip(values, lines):
        if value in seen:
            fail(f"{where}: line {line}: item_id {value} appears {Counter(values)[value]} times "
                 f"(first on line {seen[value]})")
        seen[value] = line
    outside = next(((v, line) for v, line in zip(values, lines) if not 0 <= v <= last), None)
    if outside is not None:
        missing = min(set(range(len(values))) - set(values))
        fail(f"{where}: item IDs must run 0 … {last}; found {outside[0]}, missing {missing} "
             f"({outside[0]} is on line {outside[1]})")
    return values


def load_benchmark(folder: str | os.PathLike) -> Benchmark:
    """Read and cross-check one benchmark folder (module docstring)."""
    folder = Path(folder)
    difficulty_path = file_in_folder(folder, DIFFICULTY, "benchmark folder", "a benchmark folder")
    column = read_difficulty_column(difficulty_path, "b_mean")
    id_name, lines = column.id_column, column.lines
    counts = Counter(column.item_ids)
    duplicate = next((i for i in column.item_ids if counts[i] > 1), None)
    if duplicate is not None and id_name != "item_id":
        fail(f"{difficulty_path}: item ID {duplicate!r} appears {counts[duplicate]} times")
    test_path = folder / TEST
    if id_name == "item_id" or test_path.is_file():
        _integer_ids(column.item_ids, lines, str(difficulty_path))
    test_items = None
    if test_path.is_file():
        records = read_jsonl_objects(test_path, ("item_id",))
        if len(records) != len(column.item_ids):
            fail(f"{folder}: {DIFFICULTY} has {len(column.item_ids)} items but {TEST} has {len(records)}")
        _integer_ids([r["item_id"] for _, r in records], [n for n, _ in records], str(test_path))
        test_items = len(records)
    return Benchmark(folder.name, str(folder), column.item_ids, column.values, test_items)


def skipped_warning(folder) -> str:
    """The one stderr line for a subfolder skipped while scanning a parent folder."""
    return f"warning: {folder}: skipped, not a benchmark folder (no {DIFFICULTY})"


def find_benchmarks(paths: list, skipped: list | None = None) -> list:
    """Benchmarks named by ``paths``: benchmark folders, ``difficulty.csv`` files, or a folder of folders.

    A folder with its own ``difficulty.csv`` is one benchmark; any other folder is searched
    one level down for benchmark folders (sorted by name) and must hold at least one. Each
    subfolder there without a ``difficulty.csv`` is skipped with one ``warning:`` line on stderr
    (:func:`skipped_warning`), printed once all benchmarks have loaded, so a rejected call prints
    none. Pass a list as ``skipped`` to receive those folders instead and print the warnings
    yourself, for instance only once the rest of the run has succeeded.
    """
    benchmarks, passed = [], skipped
    skipped = [] if passed is None else passed
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            if path.name != DIFFICULTY:
                fail(f"{path}: expected a benchmark folder or a file named {DIFFICULTY}")
            benchmarks.append(load_benchmark(path.parent))
        elif (path / DIFFICULTY).is_file():
            benchmarks.append(load_benchmark(path))
        elif path.is_dir():
            folders = sorted(p for p in path.iterdir() if p.is_dir())
            found = [p for p in folders if (p / DIFFICULTY).is_file()]
            if not found:
                fail(f"{path}: no benchmark folders (no */{DIFFICULTY} inside)")
            skipped.extend(p for p in folders if p not in found)
            benchmarks.extend(load_benchmark(p) for p in found)
        else:
            fail(f"{path}: no such benchmark folder or file")
    names = Counter(b.name for b in benchmarks)
    repeated = next((n for n in names if names[n] > 1), None)
    if repeated is not None:
        fail(f"benchmark {repeated!r} is given more than once")
    if passed is None:  # only once everything loaded, so a rejected call prints its one error line alone
        for folder in skipped:
            print(skipped_warning(folder), file=sys.stderr)
    return benchmarks
