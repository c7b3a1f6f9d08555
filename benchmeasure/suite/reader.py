"""Read a suite: long-format responses from one or more files, with holes and K per cell.

Each file is CSV (``.gz``, ``.bz2``, ``.xz`` decompressed: :mod:`benchmeasure.base.compressed`) with columns
``model,item_id,correct`` and optionally ``trial`` and
``benchmark`` (other columns ignored):

* ``correct`` is ``0`` or ``1``; an empty ``correct`` records an absent answer (a hole written down);
* without ``trial`` each row is one trial and a (model, item) pair may appear once; with it, a pair has as many
  trials as distinct trial IDs (K per cell: cells may differ);
* without ``benchmark`` every item of the file belongs to one benchmark named after the file
  (``gsm8k.csv.gz`` → ``gsm8k``).

A cell no row names is absent (0 trials). Rejected, with one ``error:`` line naming the file and row: a missing
column, a value of ``correct`` other than 0, 1 or empty, a blank ID, a repeated (model, item, trial), an item
in two benchmarks, a model with no answer at all, a benchmark whose items no model answered.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from benchmeasure.base.errors import fail

REQUIRED = ("model", "item_id", "correct")


@dataclass(frozen=True)
class Suite:
    """Models × items counts of a suite.

    ``counts[j, i]`` correct trials of model j on item i out of ``trials[j, i]`` (0 = absent cell);
    ``item_benchmark[i]`` indexes ``benchmarks`` (in first-seen order).
    """

    models: list
    items: list
    benchmarks: list
    item_benchmark: np.ndarray
    counts: np.ndarray
    trials: np.ndarray

    def benchmark_items(self, name: str) -> np.ndarray:
        return np.flatnonzero(self.item_benchmark == self.benchmarks.index(name))

    def absent_cells(self) -> dict:
        """How many cells are absent: in all, per model and per item."""
        absent = self.trials == 0
        return {"total": int(absent.sum()), "cells": int(absent.size),
                "per_model": dict(zip(self.models, absent.sum(axis=1).tolist())),
                "per_item": dict(zip(self.items, absent.sum(axis=0).tolist()))}


def benchmark_name(path: str) -> str:
    """The benchmark a file without a ``benchmark`` column holds: its name without ``.gz`` (``.bz2``, ``.xz``) and
    ``.csv``."""
    from benchmeasure.base.compressed import strip_compression

    name = os.path.basename(strip_compression(path)[0])
    if name.endswith(".csv"):
        name = name[: -len(".csv")]
    return name or os.path.basename(path)


def _read_frame(path: str):
    """The columns the suite needs, read by the project's one strict CSV reader (plain or compressed): a repeated or
    blank header name, a row with more or fewer fields than the header, a damaged archive, a file that is not UTF-8
    are each one error line naming the file and line (pandas' reader had renamed a second ``correct`` column and
    read a short row as an absent answer). ``line`` holds each row's line number."""
    import pandas as pd

    from benchmeasure.base.csv_table import open_table

    expected = "model,item_id[,trial],correct[,benchmark]"
    with open_table(path, required=REQUIRED, nonblank=(), expected=expected) as (header, rows):
        wanted = [name for name in (*REQUIRED, "trial", "benchmark") if name in header]
        where = [header.index(name) for name in wanted]
        lines, columns = [], [[] for _ in wanted]
        for line, fields in rows:
            lines.append(line)
            for column, k in zip(columns, where):
                column.append(fields[k])
    if not lines:
        fail(f"{path}: no responses (header only?)")
    frame = pd.DataFrame(dict(zip(wanted, columns)), dtype=object)
    frame["line"] = lines
    return frame


def read_suite(paths: list, item_benchmarks: dict | None = None) -> Suite:
    """Read long responses from ``paths`` into one :class:`Suite`.

    ``item_benchmarks`` (item → benchmark) names the benchmark of items whose file has no ``benchmark``
    column; a ``benchmark`` column takes precedence only where it agrees (disagreement is an error).
    """
    import pandas as pd

    parts = []
    for path in map(os.fspath, paths):
        frame = _read_frame(path)
        # names are read as every other table reader reads them, surrounding whitespace stripped (str.strip: the
        # Unicode line breaks too): a suite item "q1\u2028" was kept as written here, so fit-suite wrote two
        # items that its own difficulty.csv then read back as one ("appears more than once")
        for column in ("model", "item_id", "trial", "benchmark"):
            if column in frame.columns:
                frame[column] = frame[column].str.strip()
        part = pd.DataFrame({"model": frame["model"], "item_id": frame["item_id"], "correct": frame["correct"]})
        part["trial"] = frame["trial"] if "trial" in frame.columns else "0"
        if "benchmark" in frame.columns:
            part["benchmark"] = frame["benchmark"]
        elif item_benchmarks is not None:
            part["benchmark"] = frame["item_id"].map(item_benchmarks).fillna("")
            unnamed = np.flatnonzero(part["benchmark"].to_numpy() == "")
            if unnamed.size:
                fail(f"{path}: line {frame['line'].iat[unnamed[0]]}: item {frame['item_id'].iat[unnamed[0]]!r} has no "
                     "benchmark in the item→benchmark file")
        else:
            part["benchmark"] = benchmark_name(path)
        part["file"] = path
        part["row"] = frame["line"].to_numpy()
        parts.append(part)
    rows = pd.concat(parts, ignore_index=True)

    def where(r: int) -> str:
        return f"{rows['file'].iat[r]}: line {rows['row'].iat[r]}"

    for column in ("model", "item_id", "trial", "benchmark"):
        blank = np.flatnonzero(rows[column].str.strip().to_numpy() == "")
        if blank.size:
            fail(f"{where(int(blank[0]))}: blank {column}")
    correct = rows["correct"].to_numpy()
    bad = np.flatnonzero(~np.isin(correct, ["0", "1", ""]))
    if bad.size:
        r = int(bad[0])
        fail(f"{where(r)}: correct is {str(correct[r])[:20]!r}, expected 0, 1 or empty (absent)")

    model_codes, models = pd.factorize(rows["model"], sort=False)
    item_codes, items = pd.factorize(rows["item_id"], sort=False)
    bench_codes, benchmarks = pd.factorize(rows["benchmark"], sort=False)
    trial_codes, trials_seen = pd.factorize(rows["trial"], sort=False)
    n_models, n_items = len(models), len(items)

    # an item belongs to exactly one benchmark
    first_bench = np.full(n_items, -1, dtype=np.int64)
    order = np.argsort(item_codes, kind="stable")
    first_bench[item_codes[order[::-1]]] = bench_codes[order[::-1]]  # the first row of each item wins
    clash = np.flatnonzero(bench_codes != first_bench[item_codes])
    if clash.size:
        r = int(clash[0])
        fail(f"{where(r)}: item {items[item_codes[r]]!r} is in benchmark {benchmarks[bench_codes[r]]!r} here "
             f"and in {benchmarks[first_bench[item_codes[r]]]!r} earlier: an item belongs to one benchmark")

    cell = model_codes.astype(np.int64) * n_items + item_codes
    key = cell * len(trials_seen) + trial_codes
    order = np.argsort(key, kind="stable")
    same = np.flatnonzero(key[order][1:] == key[order][:-1])
    if same.size:
        r = int(order[same + 1].min())
        fail(f"{where(r)}: repeated response for model {models[model_codes[r]]!r}, item "
             f"{items[item_codes[r]]!r}, trial {rows['trial'].iat[r]!r}")
    present = correct != ""
    size = n_models * n_items
    trials = np.bincount(cell[present], minlength=size).reshape(n_models, n_items).astype(np.int32)
    counts = np.bincount(cell[present], weights=(correct[present] == "1"),
                         minlength=size).reshape(n_models, n_items).astype(np.int32)
    silent = np.flatnonzero(trials.sum(axis=1) == 0)
    if silent.size:
        fail(f"{rows['file'].iat[int(np.flatnonzero(model_codes == silent[0])[0])]}: model "
             f"{models[silent[0]]!r} has no answers at all (every row of it has an empty correct)")
    unanswered = np.flatnonzero(trials.sum(axis=0) == 0)
    item_benchmark = first_bench
    for k, name in enumerate(benchmarks):
        if np.all(np.isin(np.flatnonzero(item_benchmark == k), unanswered)):
            fail(f"{', '.join(map(os.fspath, paths))}: benchmark {name!r}: no model answered any of its items")
    return Suite([str(m) for m in models], [str(i) for i in items], [str(b) for b in benchmarks],
                 item_benchmark, counts, trials)


def read_item_benchmarks(path: str) -> dict:
    """An item→benchmark file: CSV with columns ``item_id`` (or ``item``) and ``benchmark``."""
    from benchmeasure.base.csv_table import read_table

    table = read_table(path, expected="item_id,benchmark")
    header = table.header
    item_column = "item_id" if "item_id" in header else "item" if "item" in header else None
    if item_column is None or "benchmark" not in header:
        fail(f"{path}: expected columns item_id (or item) and benchmark, found {','.join(header)}")
    at, bt = header.index(item_column), header.index("benchmark")
    mapping: dict = {}
    for line, row in zip(table.lines, table.rows):
        item, bench = row[at].strip(), row[bt].strip()  # stripped, as the suite's own names are
        if not item or not bench:
            fail(f"{path}: line {line}: blank {item_column if not item.strip() else 'benchmark'}")
        if mapping.get(item, bench) != bench:
            fail(f"{path}: line {line}: item {item!r} is in benchmark {bench!r} and {mapping[item]!r}: an item "
                 "belongs to one benchmark")
        mapping[item] = bench
    return mapping


def suite_from_matrix(path: str, n_trials: int, item_benchmarks: dict | None = None) -> Suite:
    """A count matrix (blank = absent, companion ``.trials.csv`` for K per cell) as a suite; its items belong to
    the benchmarks ``item_benchmarks`` names, or all to one benchmark named after the file."""
    from benchmeasure.core.matrix_holes import read_counts_and_trials

    models, items, counts, trials = read_counts_and_trials(path, n_trials)
    if item_benchmarks is None:
        names = [benchmark_name(path)] * len(items)
    else:
        unnamed = [item for item in items if item not in item_benchmarks]
        if unnamed:
            fail(f"{path}: item {unnamed[0]!r} has no benchmark in the item→benchmark file")
        names = [item_benchmarks[item] for item in items]
    benchmarks = list(dict.fromkeys(names))
    code = np.array([benchmarks.index(name) for name in names], dtype=np.int64)
    return Suite(list(models), list(items), benchmarks, code, np.asarray(counts, dtype=np.int32),
                 np.asarray(trials, dtype=np.int32))
