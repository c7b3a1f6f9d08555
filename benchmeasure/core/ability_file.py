"""Read a table of model abilities (``ability.csv``). Standard library only.

Ability files are what ``scripts/fit_irt.py`` and ``scripts/score_models.py`` write:
``model,theta_mean,…`` — one row per model, θ on the benchmark's logit scale (paper,
Appendix C.3). BenchFill's online calibration and ``scripts/calibrate_items.py`` hold these
abilities fixed. Read through the strict CSV reader (:mod:`benchmeasure.base.csv_table`); a blank
or repeated model, or a value that is not a finite number, is one error naming the line.
"""

from __future__ import annotations

import os

from benchmeasure.base.csv_table import duplicate_value, finite_float, read_table
from benchmeasure.base.errors import fail


def read_ability_table(path: str | os.PathLike, column: str = "theta_mean") -> dict:
    """``{model: θ}`` in file order from the ``model`` and ``column`` columns of ``path``."""
    path = os.fspath(path)
    table = read_table(path, required=("model", column), expected=f"model,{column},… (an ability.csv)")
    repeated = duplicate_value(table, "model")
    if repeated is not None:
        model = table.rows[repeated][table.index("model")].strip()
        fail(f"{table.where(repeated, 'model')}: model {model!r} appears more than once; keep one row per model")
    abilities = {}
    for r, (model, cell) in enumerate(zip(table.column("model"), table.column(column))):
        abilities[model] = finite_float(cell, f"{table.where(r, column)}, model {model!r}:")
    if not abilities:
        fail(f"{path}: no models (expected one row per model under the header)")
    return abilities
