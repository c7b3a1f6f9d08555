"""The prior on the free side of ``calibrate-items`` and ``score-models`` (``--prior NAME``), from the fixed side's fit.

Those commands hold one side of the 1PL fixed (the abilities θ, or the difficulties b) and compute each parameter
of the other side's posterior exactly by quadrature (:mod:`.anchored`). The prior on that free side is the
registered prior's (:data:`benchmeasure.irt.priors.PRIORS`, :meth:`~benchmeasure.irt.priors.Prior.normal`):
the paper's N(0, 1), or under ``hierarchical`` b ~ Normal(μ_b, σ_b) for new items and θ ~ Normal(0, σ_θ) for new
models. The hyperparameters are not the free side's to estimate (one new item says nothing about σ_b): they
belong to the fit that fixed the other side, and :func:`free_side_prior` reads them from that fit's record,
the ``diagnostics.json`` of the fit folder that holds the fixed file (``benchmeasure fit --prior hierarchical``
writes their posterior summaries there). Each is plugged in at its posterior mean, as the fixed side itself is
(its posterior sd is recorded beside it, so a reader sees how far that plug-in could move).

A fit under the paper's prior has no such hyperparameters, and this module refuses to make them up from its
posterior means: those means were shrunk towards 0 by the N(0, 1) prior (the pull the hierarchical prior exists to
remove), so a spread measured on them describes that prior more than the panel, and the fixed side's scale is the
paper model's, not the hierarchical one's; for new models, σ_θ is a property of models, which a difficulty file
does not hold at all. The honest path is the fit the hierarchical prior belongs to (docs/anchored.md).
"""

from __future__ import annotations

import json
import math
import os

from benchmeasure.base.errors import fail
from benchmeasure.irt.priors import DEFAULT, get

FIT_RECORD = "diagnostics.json"
WHAT = {"model": "abilities", "item": "difficulties"}


def free_side_prior(name: str, side: str, fixed_path: str, option: str) -> dict | None:
    """The Normal prior on ``side`` ("item" for ``calibrate-items``, "model" for ``score-models``) under the
    registered prior ``name``, with its hyperparameters from the fit record beside ``fixed_path`` (named by the
    command-line ``option``); None for the paper's prior (the commands' own N(0, 1) path, unchanged).

    Returns ``{"name", "side", "mean", "sd", "from", "hyperparameters"}`` (``from``: the record read;
    ``hyperparameters``: the posterior summaries of those used). One ``error:`` line, exit 2, when the record is
    missing, unreadable, of a fit under another prior, or lacks a usable hyperparameter.
    """
    if name == DEFAULT:
        return None
    prior = get(name)
    needed = [value for value in prior.sides[side] if isinstance(value, str)]
    if not needed:
        mean, sd = prior.normal(side)
        return {"name": name, "side": side, "mean": mean, "sd": sd, "from": None, "hyperparameters": {}}
    record_path = os.path.join(os.path.dirname(os.path.abspath(fixed_path)), FIT_RECORD)
    where = f"--prior {name}"
    if not os.path.isfile(record_path):
        fail(f"{where}: {record_path} not found; {', '.join(needed)} come from the fit folder that holds {option} "
             f"{fixed_path} (benchmeasure fit --prior {name} writes its {FIT_RECORD})")
    try:
        with open(record_path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        fail(f"{where}: {record_path} is not a readable fit record ({exc.__class__.__name__})")
    settings = record.get("settings") if isinstance(record, dict) else None
    if not isinstance(settings, dict):
        fail(f"{where}: {record_path} has no settings; it is not the record of benchmeasure fit")
    fitted = settings.get("prior", DEFAULT)
    if fitted != name:
        fail(f"{where}: {record_path} records a fit under the {fitted} prior, which estimates no "
             f"{', '.join(needed)}; refit with benchmeasure fit --prior {name} (why they are not guessed from its "
             f"{WHAT[other(side)]}: docs/anchored.md)")
    block = record.get("prior")
    summaries = block.get("hyperparameters") if isinstance(block, dict) else None
    summaries = summaries if isinstance(summaries, dict) else {}
    values = {}
    for key in needed:
        entry = summaries.get(key)
        value = entry.get("mean") if isinstance(entry, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            fail(f"{where}: {record_path} has no finite posterior mean of {key} (prior.hyperparameters.{key}.mean)")
        values[key] = float(value)
    mean, sd = prior.normal(side, values)
    if not sd > 0:
        fail(f"{where}: {record_path}: the {side} prior's sd would be {sd:g}; a Normal prior needs sd > 0")
    return {"name": name, "side": side, "mean": mean, "sd": sd, "from": record_path,
            "hyperparameters": {key: summaries[key] for key in needed}}


def other(side: str) -> str:
    """The side held fixed when ``side`` is free."""
    return "item" if side == "model" else "model"


def describe(prior: dict | None, side: str) -> str:
    """The free side's prior in words, for a command's record and its stderr line."""
    symbol = "theta" if side == "model" else "b"
    if prior is None:
        return f"{symbol} ~ Normal(0, 1)"
    text = f"{symbol} ~ Normal({prior['mean']:.4g}, {prior['sd']:.4g}) ({prior['name']}"
    if prior["from"]:
        text += f"; hyperparameters at their posterior means in {prior['from']}"
    return text + ")"
