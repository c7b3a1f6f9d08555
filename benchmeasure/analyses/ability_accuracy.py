"""Each model's fitted ability beside its raw accuracy on the same matrix.

The 1PL of Appendix C.3 places models on the same logit scale as item difficulties; a model's raw
accuracy is its share of correct responses. With every model answering every item, the number
correct is a sufficient statistic for θ in the 1PL, so the two order the models the same way up to
posterior noise; the table shows what the fit adds: how far apart models are on the difficulty scale
(a step in accuracy near 50 % is a smaller step in θ than the same step near 0 % or 100 %), and how
uncertain each θ is.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from benchmeasure.analyses.compare import spearman
from benchmeasure.base.csv_table import finite_float, read_table
from benchmeasure.base.errors import fail
from benchmeasure.core.matrix import ResponseMatrix


@dataclass(frozen=True)
class ModelRow:
    model: str
    theta_mean: float
    theta_sd: float
    correct: int
    responses: int
    accuracy: float


def read_abilities(path: str | os.PathLike) -> dict:
    """``{model: (theta_mean, theta_sd)}`` from ``fit_irt.py``'s ``ability.csv``; values must be finite."""
    path = os.fspath(path)
    table = read_table(path, required=("model", "theta_mean", "theta_sd"),
                       expected="benchmeasure fit's ability.csv: model,theta_mean,theta_sd,…")
    abilities: dict = {}
    for r, row in enumerate(table.rows):
        model = row[table.index("model")].strip()
        if model in abilities:
            fail(f"{table.where(r, 'model')}: model {model!r} appears twice")
        abilities[model] = tuple(finite_float(row[table.index(column)], f"{table.where(r, column)}:")
                                 for column in ("theta_mean", "theta_sd"))
    if not abilities:
        fail(f"{path}: no models")
    return abilities


def ability_accuracy(abilities: dict, matrix: ResponseMatrix, abilities_path: str = "abilities",
                     matrix_path: str = "matrix") -> tuple[list, float | None]:
    """Rows (highest ability first) and the Spearman correlation of θ with accuracy.

    The correlation is None when it is undefined (fewer than 3 models, or all θ or all accuracies equal).
    The ability file and the matrix must hold the same models.
    """
    missing = [m for m in matrix.models if m not in abilities]
    if missing:
        fail(f"{abilities_path}: model {missing[0]!r} of {matrix_path} is not there")
    extra = [m for m in abilities if m not in set(matrix.models)]
    if extra:
        fail(f"{matrix_path}: model {extra[0]!r} of {abilities_path} is not there")
    n_items = matrix.shape[1]
    rows = []
    for model, counts in zip(matrix.models, matrix.counts):
        correct = int(counts.sum())
        responses = n_items * matrix.n_trials
        rows.append(ModelRow(model, *abilities[model], correct, responses, correct / responses))
    rows.sort(key=lambda row: -row.theta_mean)
    theta, accuracy = [row.theta_mean for row in rows], [row.accuracy for row in rows]
    if len(rows) < 3 or len(set(theta)) < 2 or len(set(accuracy)) < 2:
        return rows, None
    return rows, spearman(theta, accuracy)


def as_dicts(rows: list) -> list:
    return [asdict(row) for row in rows]
