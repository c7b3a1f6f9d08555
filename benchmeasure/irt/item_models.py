"""The item-response model of a fixed item side (``score-models --model``): a small registry, :data:`ITEM_MODELS`.

``score-models`` holds every item's parameters at what a fit wrote in its ``difficulty.csv`` and computes each new
model's ability exactly (:mod:`.anchored`). Which model those parameters belong to is the table's to say: a fit
under ``fit --model 2pl`` writes each item's slope beside its difficulty (``a_mean``, ``a_sd``; docs/irt.md), a 1PL
fit writes none. An :class:`ItemModel` entry declares the column that marks its tables (``slope``; None: every
slope is 1) and the posterior variable of its slopes' draws (``draws``), and scores one model (``score``):

* ``1pl`` (the paper's): p = g + (1 − g)·σ(θ − b); :func:`benchmeasure.irt.anchored.score_model`, exactly as before
  this registry existed.
* ``2pl``: p = g + (1 − g)·σ(a(θ − b)) with each item's a from the table's ``a_mean`` (and, with
  ``--difficulty-draws``, from the posterior's ``a`` paired with its ``b``); :mod:`.anchored_slopes`.

:func:`table_model` reads the model off a table's header; :func:`chosen_model` checks the command line's ``--model``
against it. A mixture is refused, not honoured (docs/anchored.md): a 2PL table's b are the locations of items whose
slopes differ, and scoring them with every slope 1 (or a 1PL table's b with slopes made up) is a model no fit
computed, whose abilities sit on no fit's scale. Nothing else switches on the names: a new entry (one module, one
decorator, its module in ``builtins``) is chosen by its ``slope`` column.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from benchmeasure.base.errors import fail
from benchmeasure.base.registry import Registry, lazy

AUTO = "auto"


@dataclass(frozen=True)
class ItemModel:
    """One item-response model of fixed items (module docstring).

    ``score(counts, answered, fixed, n_trials, guessing, prob, model, trials, prior) -> ModelScore``: one model's
    ability against the :class:`FixedItems` ``fixed``; ``calibrate(counts, abilities, n_trials, guessing, reference,
    prob, item, trials, prior) -> (ItemCalibration, extra)``: one new item against fixed abilities, ``extra`` the
    values of ``columns``, the columns it adds to ``calibrate-items``' output; ``slope``: the difficulty-file column
    of the slopes' posterior means (None: every slope is 1); ``draws``: the posterior variable of the slopes' draws.
    """

    DECORATES: ClassVar[str] = "score"

    name: str
    score: object
    slope: str | None = None
    draws: str | None = None
    calibrate: object = None
    columns: tuple = ()
    summary: str = ""

    def __post_init__(self):
        object.__setattr__(self, "score", lazy(self.score))
        object.__setattr__(self, "calibrate", lazy(self.calibrate))


@dataclass(frozen=True)
class FixedItems:
    """Every item of a benchmark as a fit left it: ``items``, ``b`` (N,), ``a`` (N,) or None (every slope 1), and
    posterior draws ``b_draws`` / ``a_draws`` (S, N), paired, or None (the posterior means plugged in)."""

    items: list
    b: object
    a: object = None
    b_draws: object = None
    a_draws: object = None


ITEM_MODELS = Registry("item-response model", entry=ItemModel, builtins=("benchmeasure.irt.item_models",))


def calibrate_1pl(counts, abilities, n_trials, guessing, reference, prob, item, trials=None, prior=None):
    from benchmeasure.irt.anchored import calibrate_item

    return calibrate_item(counts, abilities, n_trials, guessing, reference, prob, item, trials=trials,
                          prior=prior), ()


@ITEM_MODELS.add("1pl", calibrate=calibrate_1pl, summary="p = g + (1 - g)·σ(θ - b), every slope 1 (the paper's)")
def score_1pl(counts, answered, fixed, n_trials, guessing, prob, model, trials=None, prior=None):
    from benchmeasure.irt.anchored import score_model

    return score_model(counts, answered, fixed.b, n_trials, guessing, fixed.b_draws, prob, model, trials=trials,
                       prior=prior)


@ITEM_MODELS.add("2pl", slope="a_mean", draws="a", columns=("a_mean", "a_sd"),
                 calibrate="benchmeasure.irt.anchored_slopes:calibrate_item",
                 summary="p = g + (1 - g)·σ(a(θ - b)), each item's slope a from fit --model 2pl")
def score_2pl(counts, answered, fixed, n_trials, guessing, prob, model, trials=None, prior=None):
    from benchmeasure.irt.anchored_slopes import score_model

    return score_model(counts, answered, fixed.b, fixed.a, n_trials, guessing, fixed.b_draws, fixed.a_draws, prob,
                       model, trials=trials, prior=prior)


def choices() -> list:
    """What ``--model`` accepts: ``auto`` (the table's model), then every registered model."""
    return [AUTO, *ITEM_MODELS]


def table_model(path: str) -> ItemModel:
    """The model of the difficulty file ``path``: the first entry whose ``slope`` column its header has, else the
    entry with no slope column (the 1PL)."""
    from benchmeasure.base.csv_table import open_table

    with open_table(path, expected="a header with item (or item_id) and b_mean") as (header, _):
        columns = set(header)
    entries = [ITEM_MODELS[name] for name in ITEM_MODELS]
    marked = [entry for entry in entries if entry.slope is not None and entry.slope in columns]
    return marked[0] if marked else next(entry for entry in entries if entry.slope is None)


def chosen_model(choice: str, path: str) -> ItemModel:
    """The model to score under: the table's, which ``choice`` (``--model``) must name unless it is ``auto``."""
    found = table_model(path)
    if choice == AUTO or choice == found.name:
        return found
    wanted = ITEM_MODELS.get(choice, "--model")
    if found.slope is not None:
        fail(f"--model {choice}: {os.fspath(path)} has the column {found.slope}, the slopes of a {found.name} fit, "
             f"whose b are the locations of items of unequal slopes; scoring them under the {choice} is a model no "
             f"fit computed (use --model {found.name} or {AUTO}, or the difficulty.csv of a {choice} fit; "
             "docs/anchored.md)")
    fail(f"--model {choice}: {os.fspath(path)} has no column {wanted.slope}, so it is not a table of a {choice} fit "
         f"(benchmeasure fit --model {choice} writes one); use --model {found.name} or {AUTO} (docs/anchored.md)")


def read_slopes(model: ItemModel, path: str, items: list):
    """The slopes of ``items`` from the difficulty file ``path`` as an array, or None for a model without slopes;
    one ``error:`` line for a blank, non-finite or non-positive slope."""
    if model.slope is None:
        return None
    import numpy as np

    from benchmeasure.core.difficulty_file import read_item_difficulties

    ids, values = read_item_difficulties(path, model.slope)
    position = {item: k for k, item in enumerate(ids)}
    slopes = np.asarray([values[position[item]] for item in items], dtype=float)
    bad = np.flatnonzero(~(slopes > 0))
    if bad.size:
        fail(f"{os.fspath(path)}: item {items[bad[0]]!r}: {model.slope} is {slopes[bad[0]]:g}; a slope must be "
             f"positive (fit --model {model.name} writes a > 0)")
    return slopes


def ability_model(choice: str, path: str) -> ItemModel:
    """The model of the fit that wrote the ability file ``path`` (``calibrate-items --abilities``), which ``choice``
    must name unless it is ``auto``: the ``item_model`` that ``score-models`` records in ``path``.json, else the
    ``model`` of the ``diagnostics.json`` beside ``path`` (``fit --model 2pl`` records it; a 1PL fit records none),
    else unknown: ``auto`` is then the 1PL and another ``--model`` is taken at its word."""
    import json

    found, where = None, None
    folder_record = os.path.join(os.path.dirname(os.path.abspath(path)), "diagnostics.json")
    for record_path, read in ((f"{os.fspath(path)}.json", lambda r: r.get("settings", {}).get("item_model", "1pl")),
                              (folder_record, lambda r: r.get("model", "1pl"))):
        try:
            with open(record_path, encoding="utf-8") as handle:
                record = json.load(handle)
            found, where = str(read(record)), record_path
            break
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue
    if found is not None and found not in ITEM_MODELS:
        found = None   # a record of something else: no model recorded
    if choice == AUTO:
        return ITEM_MODELS[found or next(name for name in ITEM_MODELS if ITEM_MODELS[name].slope is None)]
    if found is not None and found != choice:
        fail(f"--model {choice}: the abilities {os.fspath(path)} come from a {found} fit ({where}); new items "
             f"calibrated under the {choice} against them would sit on no fit's scale (use --model {found} or "
             f"{AUTO}; docs/anchored.md)")
    return ITEM_MODELS.get(choice, "--model")
