"""The model-fit check's outputs, one layout for both writers: ``benchmeasure check-fit`` (``--output-dir DIR``) and
``benchmeasure fit``, which checks every fit it makes (unless ``--no-check-fit``) into ``FIT_DIR/check_fit/``.

A check folder holds ``items.csv``, ``models.csv`` and ``check_fit.json`` (everything, with the settings, the
matrix's and the checked ``difficulty.csv``'s SHA-256 and provenance); ``check-fit`` adds ``item_fit.png``.
``core.fit_check_text`` reads it back for ``diagnose``, ``summarize`` and the explorer.

The check ``fit`` runs is the cheap one: :data:`FIT_CHECK_DRAWS` of the fit's own posterior draws, evenly spaced
over its chains (the draws are in memory, so no normal approximation is needed), or the posterior mode of a MAP fit.
Each item and model p-value averages a tail that is integrated analytically per draw, so a few draws resolve it;
the whole-fit p-values count replicated data sets, one per draw, and resolve 1 / (draws + 1) (the summary line says
"p ≤ 1/(draws + 1)" where none of them reached the observed value).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmeasure.base.files import atomic_write, provenance, sha256_file, write_json
from benchmeasure.core.fit_check_text import CHECK_RECORD, CHECK_TABLES

CHECK_OUTPUTS = (*CHECK_TABLES, CHECK_RECORD)
FIGURE = "item_fit.png"
#: posterior draws of the check ``fit`` runs: about 0.3 s on ChemBench (22 × 2,854), 7 % of the default fit's wall time
FIT_CHECK_DRAWS = 10
PACKAGES = ["numpy", "scipy", "matplotlib"]


def refusal(model: str, observation: str) -> str | None:
    """Why a fit with ``--model`` / ``--observation`` cannot be checked (the check tests the binomial 1PL), or None."""
    if model != "1pl":
        return f"the check tests the 1PL; this fit is the {model.upper()}"
    if observation != "binomial":
        return f"the check tests binomial cells; this fit has {observation} cells"
    return None


def in_process_inputs(result, matrix, matrix_path: str, guessing):
    """:class:`.fit_inputs.FitInputs` of a fit still in memory (``irt.fit.FitResult``): its posterior draws of θ and b
    (chains stacked), or the posterior mode of a MAP fit (no draws, sds 0)."""
    from benchmeasure.analyses.fit_inputs import FitInputs, ParameterTable

    def table(names, mean, sd):
        sd = np.where(np.isfinite(sd), sd, 0.0) if sd is not None else np.zeros(len(names))
        return ParameterTable(list(names), np.asarray(mean, dtype=float), np.asarray(sd, dtype=float))

    theta = table(matrix.models, result.theta_mean, result.theta_sd)
    b = table(matrix.items, result.b_mean, result.b_sd)
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (len(matrix.items),)).copy()
    if result.posterior is None:
        return FitInputs(matrix, matrix_path, theta, b, g, None,
                         "posterior mode only (a MAP fit): the check conditions on the fitted point")
    from benchmeasure.irt.draws import Draws

    draws = Draws.of(result.posterior)
    samples = tuple(_stacked(draws, var, dim, names) for var, dim, names in
                    (("theta", "model", matrix.models), ("b", "item", matrix.items)))
    chains, per_chain = draws.shape
    return FitInputs(matrix, matrix_path, theta, b, g, None,
                     f"posterior draws of this fit, evenly spaced over its {chains} chains × {per_chain} draws",
                     samples=samples)


def _stacked(draws, var: str, dim: str, names: list) -> np.ndarray:
    """``var``'s draws as (chains × draws, len(names)), columns in ``names``' order."""
    values = draws.values(var)
    flat = values.reshape(-1, values.shape[-1])
    labels = [str(x) for x in draws.coords.get(dim, names)]
    if labels == [str(x) for x in names]:
        return flat
    index = {name: k for k, name in enumerate(labels)}
    return flat[:, [index[str(name)] for name in names]]


def check_record(check, inputs, *, fit_dir, difficulty: str | os.PathLike, matrix_sha256: str,
                 posterior_used: bool, seconds: float, rows: bool = True) -> dict:
    """``check_fit.json``: the summary, the whole-fit checks, every item and model row (``rows``; else the tables
    are only in ``items.csv`` and ``models.csv``), the settings, the inputs (the matrix and the ``difficulty.csv``
    checked, each with its SHA-256) and provenance."""
    m = inputs.matrix
    tables = {"items": check.items, "models": check.models} if rows else {"rows": "in items.csv and models.csv"}
    return {
        "summary": check.summary(),
        "whole_fit": check.whole,
        "flagged_items": [row["item"] for row in check.flagged_items()],
        "flagged_models": [row["model"] for row in check.flagged_models()],
        **tables,
        "settings": {**check.settings, "posterior_used": posterior_used},
        "input": {"fit_dir": os.path.abspath(fit_dir), "matrix": os.path.abspath(inputs.matrix_path),
                  "sha256": matrix_sha256, "difficulty_sha256": sha256_file(difficulty), "models": len(m.models),
                  "items": len(m.items), "n_trials": m.n_trials, "absent_cells": int(m.counts.size - m.present_cells)},
        "check_time_s": round(seconds, 3),
        **provenance(PACKAGES),
    }


def write_check(folder: Path, check, record: dict, inputs=None) -> None:
    """Write the check folder's tables and record (and, given ``inputs``, the figure :data:`FIGURE`), each atomically;
    inside ``base.files.all_or_nothing`` (or a staging folder) all of them or none."""
    from benchmeasure.analyses.model_fit import ITEM_COLUMNS, MODEL_COLUMNS

    folder = Path(folder)
    _write_csv(folder / "items.csv", ITEM_COLUMNS, check.items)
    _write_csv(folder / "models.csv", MODEL_COLUMNS, check.models)
    if inputs is not None:
        from benchmeasure.analyses.fit_plots import plot_item_fit

        plot_item_fit(check, inputs, folder / FIGURE)
    write_json(folder / CHECK_RECORD, record)


def _write_csv(path: Path, columns: list, rows: list) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row[c]) for c in columns])


def _cell(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@dataclass
class FolderCheck:
    """The check ``fit`` ran (:func:`fit_folder_check`): its summary line, the seconds it took, and ``write(check
    folder, staging folder)``, which ``irt.fit_folder.write_fit_folder`` calls once the fit's own files are in the
    staging folder (the record hashes that ``difficulty.csv``); or, with ``skipped`` set, why there is none."""

    summary: str
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    write: object = None
    skipped: str | None = None


def fit_folder_check(result, matrix, matrix_path: str, guessing, *, matrix_sha256: str, seed: int,
                     draws: int = FIT_CHECK_DRAWS) -> FolderCheck:
    """Check the fit in memory on ``draws`` of its posterior draws (:func:`in_process_inputs`). A check that came out
    with a non-finite number is not stored (``skipped`` names the entry), so a fit never fails for its check."""
    import time

    from benchmeasure.analyses.model_fit import run_check
    from benchmeasure.base.files import nonfinite_entry

    start, cpu = time.perf_counter(), time.process_time()
    inputs = in_process_inputs(result, matrix, matrix_path, guessing)
    check = run_check(inputs, draws=draws, seed=seed)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    bad = nonfinite_entry({"items": check.items, "models": check.models, "whole_fit": check.whole})
    if bad is not None:
        why = f"the check gave a non-finite {bad}; run benchmeasure check-fit on the fit folder for details"
        return FolderCheck(f"model fit: not checked ({why})", seconds, cpu, skipped=why)

    def write(folder: Path, staging: Path) -> None:
        record = check_record(check, inputs, fit_dir=staging.parent, difficulty=staging / "difficulty.csv",
                              matrix_sha256=matrix_sha256, posterior_used=result.posterior is not None,
                              seconds=seconds, rows=False)   # the rows once, in the CSVs: a fit writes fast
        write_check(folder, check, record)

    return FolderCheck(check.summary(), seconds, cpu, write)
