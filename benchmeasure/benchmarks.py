"""The released benchmark layout: ``data/benchmarks/<benchmark>/difficulty.csv`` + ``test.jsonl``.

Each benchmark is a folder named after it holding

* ``difficulty.csv`` with ``item_id,b_mean`` — unnormalized 1PL difficulties; in the released
  layout the IDs are the integers 0 … N−1, one row each (the paper's README);
* ``test.jsonl`` — one JSON object per line with an ``item_id`` field (the evaluated item).

When ``test.jsonl`` is present the two must describe the same items: every ID 0 … N−1
exactly once in each file. A folder holding only a ``difficulty.csv`` (for example what
``fit_irt.py`` writes, with an ``item`` column of arbitrary IDs) is accepted as a benchmark
too; its IDs are then only required to be unique.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .difficulty_file import read_difficulty_column
from .errors import fail
from .files import read_jsonl_objects

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


def _integer_ids(ids: list, where: str) -> list:
    """Check that ``ids`` are exactly the integers 0 … N−1 (any order); return them as ints."""
    values = []
    for position, text in enumerate(ids, start=2):
        try:
            values.append(int(str(text).strip()))
        except ValueError:
            fail(f"{where}: line {position}: item_id {text!r} is not an integer (expected 0 … {len(ids) - 1})")
    counts = Counter(values)
    duplicate = next((v for v in values if counts[v] > 1), None)
    if duplicate is not None:
        fail(f"{where}: item_id {duplicate} appears {counts[duplicate]} times")
    outside = sorted(v for v in values if not 0 <= v < len(values))
    if outside:
        missing = sorted(set(range(len(values))) - set(values))
        fail(f"{where}: item IDs must run 0 … {len(values) - 1}; found {outside[0]}, missing {missing[0]}")
    return values


def _read_test_ids(path: Path) -> list:
    return [record["item_id"] for _, record in read_jsonl_objects(path, ("item_id",))]


def load_benchmark(folder: str | os.PathLike) -> Benchmark:
    """Read and cross-check one benchmark folder (module docstring)."""
    folder = Path(folder)
    if not folder.is_dir():
        fail(f"{folder}: no such benchmark folder")
    difficulty_path = folder / DIFFICULTY
    if not difficulty_path.is_file():
        fail(f"{folder}: not a benchmark folder (no {DIFFICULTY})")
    column = read_difficulty_column(difficulty_path, "b_mean")
    counts = Counter(column.item_ids)
    duplicate = next((i for i in column.item_ids if counts[i] > 1), None)
    if duplicate is not None:
        fail(f"{difficulty_path}: item ID {duplicate!r} appears {counts[duplicate]} times")
    test_path = folder / TEST
    test_items = None
    if test_path.is_file():
        ids = _integer_ids(column.item_ids, str(difficulty_path))
        test_ids = _read_test_ids(test_path)
        if len(test_ids) != len(ids):
            fail(f"{folder}: {DIFFICULTY} has {len(ids)} items but {TEST} has {len(test_ids)}")
        _integer_ids(test_ids, str(test_path))
        test_items = len(test_ids)
    return Benchmark(folder.name, str(folder), column.item_ids, column.values, test_items)


def find_benchmarks(paths: list) -> list:
    """Benchmarks named by ``paths``: benchmark folders, ``difficulty.csv`` files, or a folder of folders.

    A folder with its own ``difficulty.csv`` is one benchmark; any other folder is searched
    one level down for benchmark folders (sorted by name) and must hold at least one.
    """
    benchmarks = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            if path.name != DIFFICULTY:
                fail(f"{path}: expected a benchmark folder or a file named {DIFFICULTY}")
            benchmarks.append(load_benchmark(path.parent))
        elif (path / DIFFICULTY).is_file():
            benchmarks.append(load_benchmark(path))
        elif path.is_dir():
            found = sorted(p for p in path.iterdir() if (p / DIFFICULTY).is_file())
            if not found:
                fail(f"{path}: no benchmark folders (no */{DIFFICULTY} inside)")
            benchmarks.extend(load_benchmark(p) for p in found)
        else:
            fail(f"{path}: no such benchmark folder or file")
    names = Counter(b.name for b in benchmarks)
    repeated = next((n for n in names if names[n] > 1), None)
    if repeated is not None:
        fail(f"benchmark {repeated!r} is given more than once")
    return benchmarks
