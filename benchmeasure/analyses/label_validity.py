"""Do fitted difficulties agree with difficulty labels assigned by people? A check real data allows.

On simulated data a fit is checked against the difficulties it was drawn from (``compare.py``);
on a real benchmark there is no truth, but there may be labels: ChemBench's authors tagged some
questions *basic* and some *advanced* (``data/chembench/difficulty_dict.json``). If the 1PL
difficulties of Appendix C.3 measure what people mean by difficulty, items labelled harder should
have larger b. The summary is the AUC, the probability that a randomly chosen harder-labelled item
has a larger fitted difficulty than a randomly chosen easier-labelled one (ties count one half;
0.5 = the labels and the fit are unrelated, 1 = perfectly ordered), with a percentile bootstrap
interval that resamples items within each label (seeded).

Labels files: a JSON object ``{label: [item IDs]}`` (ChemBench's form; IDs may be numbers, matched
as their decimal text) or a CSV with columns ``item`` (or ``item_id``) and ``label``. Every item has
at most one label; every labelled item must be in the difficulty file (fitted items may be unlabelled).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

import numpy as np

from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import fail
from benchmeasure.core.difficulty_file import DifficultyColumn

#: Default interval mass and number of bootstrap resamples.
LEVEL = 0.95
N_BOOT = 2000


def read_labels(path: str | os.PathLike) -> dict:
    """``{item ID: label}`` from a JSON ``{label: [IDs]}`` file or a CSV ``item,label`` file.

    A file whose first non-blank character is ``{`` is read as JSON, anything else as CSV (through the
    strict CSV reader). Rejected, naming the file and the item: invalid JSON, a JSON value that is not an
    object of lists of strings or integers, a blank ID or label, an item with two labels, no labels at all.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        fail(f"{path}: no such file")
    try:
        with open(path, encoding="utf-8-sig") as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:
        fail(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start:exc.start + 1].hex()}); save it as UTF-8")
    except OSError as exc:
        fail(f"{path}: cannot read ({exc.strerror or exc})")
    labels: dict = {}

    def add(item, label: str, where: str) -> None:
        if not item:
            fail(f"{path}: {where}: blank item ID")
        if not label:
            fail(f"{path}: {where}: blank label")
        if item in labels and labels[item] != label:
            fail(f"{path}: {where}: item {item!r} is labelled both {labels[item]!r} and {label!r}")
        if item in labels:
            fail(f"{path}: {where}: item {item!r} is listed twice under {label!r}")
        labels[item] = label

    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            fail(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})")
        if not isinstance(data, dict):
            fail(f"{path}: expected a JSON object {{label: [item IDs]}}")
        for label, items in data.items():
            if not isinstance(items, list):
                fail(f"{path}: label {label!r}: expected a list of item IDs, found {type(items).__name__}")
            for position, item in enumerate(items):
                if isinstance(item, bool) or not isinstance(item, (int, str)):
                    fail(f"{path}: label {label!r}, entry {position}: {item!r} is not an item ID "
                         "(a string or an integer)")
                add(str(item).strip(), label.strip(), f"label {label!r}, entry {position}")
    else:
        table = read_table(path, expected="columns item,label (or a JSON object {label: [item IDs]})")
        id_column = next((name for name in ("item", "item_id") if name in table.header), None)
        if id_column is None or "label" not in table.header:
            fail(f"{path}: expected columns item (or item_id) and label, found {', '.join(table.header)}")
        for r, (item, label) in enumerate(zip(table.column(id_column), table.column("label"))):
            add(item, label, f"line {table.lines[r]}")
    if not labels:
        fail(f"{path}: no labelled items")
    return labels


def auc(lower: np.ndarray, higher: np.ndarray) -> float:
    """P(H > L) + P(H = L)/2 for H drawn from ``higher`` and L from ``lower`` (the Mann–Whitney AUC)."""
    ordered = np.sort(lower)
    below = np.searchsorted(ordered, higher, side="left")
    at_or_below = np.searchsorted(ordered, higher, side="right")
    return float((below + 0.5 * (at_or_below - below)).sum() / (ordered.size * higher.size))


@dataclass(frozen=True)
class LabelGroup:
    """The fitted difficulties of the items carrying one label."""

    label: str
    items: int
    mean_b: float
    median_b: float


@dataclass(frozen=True)
class LabelValidity:
    """How the fitted difficulties order two labels (``easier`` expected below ``harder``)."""

    easier: LabelGroup
    harder: LabelGroup
    auc: float
    auc_low: float
    auc_high: float
    level: float
    n_boot: int
    seed: int
    label_counts: dict      # every label of the file → items with it that are in the difficulty file
    unlabelled_items: int   # items of the difficulty file with no label

    def as_dict(self) -> dict:
        return asdict(self)


def label_validity(difficulty: DifficultyColumn, labels: dict, easier: str, harder: str,
                   n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL,
                   labels_path: str = "labels") -> LabelValidity:
    """AUC of the fitted difficulties for ``harder`` above ``easier``, with a stratified bootstrap interval.

    Each of the ``n_boot`` resamples draws, with replacement, as many items of each label as it has
    (``numpy.random.default_rng(seed)``); the interval is the central ``level`` percentile interval.
    """
    if easier == harder:
        fail(f"--easier and --harder are both {easier!r}; give two different labels")
    values = dict(zip(difficulty.item_ids, difficulty.values))
    if len(values) != len(difficulty.item_ids):
        seen: set = set()
        repeated = next(i for i in difficulty.item_ids if i in seen or seen.add(i))
        fail(f"{difficulty.path}: item {repeated!r} appears more than once")
    missing = [item for item in labels if item not in values]
    if missing:
        fail(f"{labels_path}: {len(missing)} labelled item(s) are not in {difficulty.path}, "
             f"e.g. {missing[0]!r} (labelled {labels[missing[0]]!r})")
    counts: dict = {}
    for label in labels.values():
        counts[label] = counts.get(label, 0) + 1
    groups = {}
    for name, flag in ((easier, "--easier"), (harder, "--harder")):
        if name not in counts:
            fail(f"{labels_path}: no item is labelled {name!r} ({flag}); labels there: "
                 + ", ".join(f"{label!r} ({n})" for label, n in counts.items()))
        if counts[name] < 2:
            fail(f"{labels_path}: only {counts[name]} item labelled {name!r}; an interval needs at least 2")
        groups[name] = np.array([values[item] for item, label in labels.items() if label == name], dtype=float)
    low, high = groups[easier], groups[harder]
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for k in range(n_boot):
        draws[k] = auc(low[rng.integers(0, low.size, low.size)], high[rng.integers(0, high.size, high.size)])
    tail = (1.0 - level) / 2
    lo, hi = np.quantile(draws, [tail, 1.0 - tail])

    def group(name: str, b: np.ndarray) -> LabelGroup:
        return LabelGroup(name, int(b.size), float(b.mean()), float(np.median(b)))

    return LabelValidity(easier=group(easier, low), harder=group(harder, high), auc=auc(low, high),
                         auc_low=float(lo), auc_high=float(hi), level=level, n_boot=n_boot, seed=seed,
                         label_counts=counts, unlabelled_items=len(values) - len(labels))
