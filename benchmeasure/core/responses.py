"""Graded responses (one row per model, item and trial) → the count matrix.

The long format is the one the paper's README asks users to collect::

    model,item_id,trial,correct
    model-a,q0,0,1

Every (model, item) pair must have exactly ``n_trials`` rows with distinct trial IDs,
every model must answer every item that any model answered, and ``correct`` is 0 or 1.
:func:`assemble_matrix` enforces these rules for any source of rows — the CSV reader
here, and the evaluation-harness log readers — so every source rejects bad input with
the same messages, each naming the model, item, trial and where the row came from.

Work is vectorized over integer codes, so 20 million rows fit in a few GB and well
under a minute (``bench/bench_prepare_matrix.py``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable

import numpy as np

from benchmeasure.base.csv_table import open_table
from benchmeasure.base.errors import InputError, fail
from benchmeasure.core.matrix import ResponseMatrix, check_n_trials

if TYPE_CHECKING:   # pandas is imported where it is used: `prepare --help` needs none of it
    import pandas as pd

COLUMNS = ("model", "item_id", "trial", "correct")


def _first_seen_order(codes: np.ndarray) -> np.ndarray:
    """Category indices that occur in ``codes``, sorted by the row where each first appears."""
    used, first_row = np.unique(codes, return_index=True)
    return used[np.argsort(first_row, kind="stable")]


def _recode(codes: np.ndarray, names: list, order: np.ndarray) -> tuple[np.ndarray, list]:
    """Renumber ``codes`` so that code k is the k-th name in first-seen order."""
    remap = np.full(len(names), -1, dtype=np.int64)
    remap[order] = np.arange(order.size)
    return remap[codes], [names[k] for k in order]


def assemble_matrix(model_codes: np.ndarray, model_names: list, item_codes: np.ndarray, item_names: list,
                    trial_codes: np.ndarray, trial_names: list, correct: np.ndarray, n_trials: int,
                    locate: Callable[[int], str], allow_missing: bool = False) -> ResponseMatrix:
    """Validate long-format responses given as integer codes and count correct trials per cell.

    Parameters
    ----------
    model_codes, item_codes, trial_codes : ndarray of int, shape (R,)
        Row r's model is ``model_names[model_codes[r]]``, and so on. Names may be in any
        order; the matrix lists models and items in the order they first appear.
    correct : ndarray of int, shape (R,)
        0 or 1 per row (the caller has already rejected other values).
    n_trials : int
        Required number of rows (distinct trials) per (model, item) pair.
    locate : callable
        ``locate(r)`` describes where row r came from (``"responses.csv line 7"``).
    allow_missing : bool
        Keep absent cells and cells with 1 … ``n_trials`` trials (the matrix's ``trials``).

    Returns
    -------
    ResponseMatrix
        Counts of shape (models, items).

    Raises
    ------
    InputError
        On a blank model or item ID, a duplicate (model, item, trial), a pair with a
        trial count other than ``n_trials``, or a model missing an item another model has.
    """
    check_n_trials(n_trials)
    rows = model_codes.size
    if rows == 0:
        fail(f"{locate(-1)}: no responses (header only?)")
    for kind, codes, names in (("model", model_codes, model_names), ("item", item_codes, item_names),
                               ("trial", trial_codes, trial_names)):
        blank = [k for k, name in enumerate(names) if not str(name).strip()]
        if blank:
            r = int(np.flatnonzero(np.isin(codes, blank))[0])
            fail(f"{locate(r)}: blank {kind} ID")

    model_order = _first_seen_order(model_codes)
    item_order = _first_seen_order(item_codes)
    m, models = _recode(model_codes, model_names, model_order)
    i, items = _recode(item_codes, item_names, item_order)
    n_models, n_items = len(models), len(items)
    pair = m * n_items + i

    def describe(r: int) -> str:
        return f"model {model_names[model_codes[r]]!r}, item {item_names[item_codes[r]]!r}"

    key = pair * len(trial_names) + trial_codes
    order = np.argsort(key, kind="stable")
    same = np.flatnonzero(key[order][1:] == key[order][:-1])
    if same.size:
        firsts, seconds = order[same], order[same + 1]
        k = int(np.argmin(seconds))  # report the duplicate that appears earliest in the input
        r, earlier = int(seconds[k]), int(firsts[k])
        fail(f"{locate(r)}: duplicate response for {describe(r)}, trial {trial_names[trial_codes[r]]!r} "
             f"(already at {locate(earlier)})")

    per_pair = np.bincount(pair, minlength=n_models * n_items)
    wrong = np.flatnonzero((per_pair[pair] > n_trials) | ((per_pair[pair] != n_trials) & (not allow_missing)))
    if wrong.size:
        r = int(wrong[0])
        got = int(per_pair[pair[r]])
        fail(f"{locate(r)}: {describe(r)} has {got} trial{'s' if got != 1 else ''}, expected --n-trials {n_trials}"
             + ("" if got > n_trials else " (--allow-missing accepts fewer)"))
    missing = np.flatnonzero(per_pair == 0)
    if missing.size and not allow_missing:
        j, k = divmod(int(missing[0]), n_items)
        holder = models[int(np.flatnonzero(per_pair.reshape(n_models, n_items)[:, k])[0])]
        fail(f"{locate(-1)}: model {models[j]!r} has no responses for item {items[k]!r} "
             f"(model {holder!r} has {n_trials}); --allow-missing keeps absent cells")

    counts = np.bincount(pair, weights=correct, minlength=n_models * n_items)
    trials = None if (per_pair == n_trials).all() else per_pair.reshape(n_models, n_items).astype(np.int64)
    return ResponseMatrix(models, items, counts.reshape(n_models, n_items).astype(np.int64), n_trials, trials)


def factorize(values) -> tuple[np.ndarray, list]:
    """Codes and names of a sequence of IDs, names in first-seen order (for small inputs)."""
    import pandas as pd

    codes, uniques = pd.factorize(pd.Series(values, dtype="object").astype(str), sort=False)
    return codes.astype(np.int64), list(uniques)


def _read_header(path: str) -> list:
    """The header, checked by the strict reader's rules (no blank or repeated name, the four columns present)."""
    with open_table(path, required=COLUMNS, nonblank=(), expected=",".join(COLUMNS)) as (header, _):
        return header


class _Coder:
    """Assigns stable integer codes to string IDs across chunks of a large file."""

    def __init__(self) -> None:
        self.index: dict = {}
        self.names: list = []

    def encode(self, values: pd.Series) -> np.ndarray:
        import pandas as pd

        local, uniques = pd.factorize(values, sort=False)
        mapping = np.empty(len(uniques), dtype=np.int64)
        for k, name in enumerate(uniques):
            code = self.index.get(name)
            if code is None:
                code = self.index[name] = len(self.names)
                self.names.append(name)
            mapping[k] = code
        return mapping[local]


def read_responses_csv(path: str | os.PathLike, n_trials: int, allow_missing: bool = False) -> ResponseMatrix:
    """Read a ``model,item_id,trial,correct`` CSV (other columns ignored) into a count matrix, fast.

    PyArrow's streaming CSV reader parses blocks of the file in parallel (it refuses a row whose field count
    differs from the header's), each ID column is encoded to integers as it goes, so memory stays a few bytes
    per row (``bench/bench_prepare_matrix.py``). IDs are kept as strings (``007`` stays ``007``), with their
    surrounding whitespace stripped as every reader of the matrix strips it.

    Whenever this route finds anything wrong, the file is read again by the standard-library reader
    (:func:`benchmeasure.core.response_counts.count_responses`, the same rules), which names the exact line and
    column — or, where the two disagree (a line of empty fields, which that reader skips), gives the matrix.
    """
    path = os.fspath(path)
    check_n_trials(n_trials)
    try:
        return _read_arrow(path, n_trials, allow_missing)
    except InputError:
        from benchmeasure.core.response_counts import count_responses

        table = count_responses(path, n_trials, allow_missing)
        shape = (len(table.models), len(table.items))
        counts = np.asarray(table.counts, dtype=np.int64).reshape(shape)
        trials = None if table.trials is None else np.asarray(table.trials, dtype=np.int64).reshape(shape)
        return ResponseMatrix(table.models, table.items, counts, n_trials, trials)


def _read_arrow(path: str, n_trials: int, allow_missing: bool = False) -> ResponseMatrix:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    header = _read_header(path)
    coders = {name: _Coder() for name in ("model", "item_id", "trial")}
    parts: dict = {name: [] for name in (*coders, "correct")}
    from benchmeasure.base.compressed import compression, open_input, read_errors

    # a compressed name is decompressed by the project's one opener (PyArrow would guess from the suffix alone)
    source = path if compression(path) is None else open_input(path, text=False)
    try:
        reader = pacsv.open_csv(
            source, read_options=pacsv.ReadOptions(block_size=64 << 20),
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(column_types={name: pa.string() for name in header},
                                                 include_columns=list(COLUMNS), strings_can_be_null=False))
        for batch in reader:
            chunk = {name: batch.column(name).to_pandas() for name in COLUMNS}
            correct = chunk["correct"]
            if not correct.isin(("0", "1")).all():
                fail(f"{path}: a value of correct is not 0 or 1")
            for name in ("model", "item_id", "trial"):
                if (chunk[name].str.strip() == "").any():
                    fail(f"{path}: a blank {name}")
            parts["correct"].append((correct.to_numpy() == "1").astype(np.int8))
            for name, coder in coders.items():   # IDs stripped, as the matrix readers strip them
                parts[name].append(coder.encode(chunk[name].str.strip()))
    except (pa.ArrowInvalid, pa.ArrowException) as exc:
        fail(f"{path}: malformed CSV ({' '.join(str(exc).split())[:200]})")
    except InputError:
        raise
    except Exception as exc:  # a damaged archive surfaces here from inside PyArrow's reads
        with read_errors(path):
            raise exc
        raise
    finally:
        if source is not path:
            source.close()
    joined = {name: (np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64))
              for name, arrays in parts.items()}

    def locate(r: int) -> str:
        return path if r < 0 else f"{path} data row {r + 1}"

    return assemble_matrix(joined["model"], coders["model"].names, joined["item_id"], coders["item_id"].names,
                           joined["trial"], coders["trial"].names, joined["correct"], n_trials, locate,
                           allow_missing)
