"""What a model-fit check reads from a fit folder: the fitted parameters' means and sds, the response matrix the
fit saw (its SHA-256 checked against ``diagnostics.json``), the guessing floor, and posterior draws of θ and b.

The draws are the fit's own (``posterior.zarr``, written by ``benchmeasure fit --save-posterior``) when the folder
has them, else independent normal draws from each θ's and b's posterior mean and sd in ``ability.csv`` and
``difficulty.csv`` (an approximation that drops the posterior correlations; the check says which it used). A MAP fit
(no sds) gives the posterior mode as one point.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from benchmeasure.base.csv_table import duplicate_value, read_table
from benchmeasure.base.errors import fail


@dataclass(frozen=True)
class ParameterTable:
    """One side of a fit: ``names`` in file order, posterior ``mean`` and ``sd`` (0 where the file has none)."""

    names: list
    mean: np.ndarray
    sd: np.ndarray


def read_parameter_table(path: str | os.PathLike, id_column: str, mean_column: str, sd_column: str) -> ParameterTable:
    """``difficulty.csv`` (``item,b_mean,b_sd``) or ``ability.csv`` (``model,theta_mean,theta_sd``) of a fit folder.

    A blank sd (a MAP fit) reads as 0; a blank or non-finite mean, a negative sd, a blank or repeated ID is one
    error naming the line."""
    path = os.fspath(path)
    table = read_table(path, required=(id_column, mean_column), expected=f"{id_column},{mean_column},{sd_column},…")
    repeated = duplicate_value(table, id_column)
    if repeated is not None:
        fail(f"{table.where(repeated, id_column)}: {id_column} {table.rows[repeated][table.index(id_column)]!r} "
             "appears more than once")
    names = table.column(id_column)
    has_sd = sd_column in table.header
    means, sds = [], []
    for r, name in enumerate(names):
        if not name:
            fail(f"{table.where(r, id_column)}: blank {id_column}")
        mean = _number(table.rows[r][table.index(mean_column)], table.where(r, mean_column), blank=None)
        sd = _number(table.rows[r][table.index(sd_column)], table.where(r, sd_column), blank=0.0) if has_sd else 0.0
        if sd < 0:
            fail(f"{table.where(r, sd_column)}: a standard deviation cannot be negative ({sd:g})")
        means.append(mean)
        sds.append(sd)
    if not names:
        fail(f"{path}: no rows under the header")
    return ParameterTable(names, np.asarray(means, dtype=float), np.asarray(sds, dtype=float))


def _number(cell: str, where: str, blank) -> float:
    text = cell.strip()
    if not text:
        if blank is None:
            fail(f"{where}: empty cell (a number is needed)")
        return blank
    try:
        value = float(text)
    except ValueError:
        fail(f"{where}: {text[:40]!r} is not a number")
    if not math.isfinite(value):
        fail(f"{where}: {text[:40]!r} is not a finite number")
    return value


@dataclass(frozen=True)
class FitInputs:
    """Everything a check needs, aligned with the matrix's models and items."""

    matrix: object              # core.matrix.ResponseMatrix
    matrix_path: str
    theta: ParameterTable
    b: ParameterTable
    guessing: np.ndarray        # (N,)
    posterior: str | None       # the posterior.zarr used, or None (normal approximation)
    draws_note: str
    samples: tuple | None = None  # in-memory draws (theta (D, M), b (D, N)) instead of a posterior file


def recorded_matrix(diagnostics: dict, given: str | None, folder: str) -> str:
    """The matrix path: ``given`` (``--matrix``), else the one ``diagnostics.json`` records; its SHA-256 must be
    the recorded one."""
    from benchmeasure.base.files import sha256_file

    source = diagnostics["input"]
    path = given if given is not None else source.get("path")
    if not isinstance(path, str) or not path:
        fail(f"{folder}/diagnostics.json records no matrix path; give the matrix with --matrix PATH")
    if not os.path.isfile(path):
        fail(f"{path}: no such matrix (the one {folder}/diagnostics.json records); give it with --matrix PATH"
             if given is None else f"{path}: no such file")
    if sha256_file(path) != source["sha256"]:
        fail(f"{path}: not the matrix this fit saw (its SHA-256 differs from the one recorded in "
             f"{folder}/diagnostics.json); give the fitted matrix with --matrix PATH")
    return path


def align(table: ParameterTable, names: list, what: str, path: str) -> ParameterTable:
    """``table`` reordered to ``names`` (the matrix's); every name must be there, and nothing else."""
    index = {name: k for k, name in enumerate(table.names)}
    missing = [name for name in names if name not in index]
    if missing or len(index) != len(names):
        extra = [name for name in table.names if name not in set(names)]
        which = (f"{what} {missing[0]!r} of the matrix is missing" if missing
                 else f"{what} {extra[0]!r} is not in the matrix")
        fail(f"{path}: {which}; the fit folder and the matrix must be the same fit's")
    order = np.asarray([index[name] for name in names], dtype=np.int64)
    return ParameterTable(list(names), table.mean[order], table.sd[order])


def read_fit_inputs(folder: str, diagnostics: dict, posterior: str | None, *, matrix: str | None = None,
                    n_trials: int | None = None, allow_missing: bool = False) -> FitInputs:
    """Read the fit folder's parameters, the matrix (hash-checked) and the guessing floor; refuse what the check
    does not model (another observation model)."""
    from benchmeasure.core.matrix import read_matrix, read_matrix_allowing_holes

    settings = diagnostics.get("settings") or {}
    observation = settings.get("observation")
    if observation not in (None, "binomial") and not (isinstance(observation, dict)
                                                       and observation.get("name") in (None, "binomial")):
        fail(f"{folder}: fitted with another observation model ({observation}); check-fit checks the binomial 1PL")
    if settings.get("model", "1pl") != "1pl":
        fail(f"{folder}: fitted with --model {settings['model']}; check-fit checks the binomial 1PL")
    recorded_k = diagnostics["input"].get("n_trials")
    if n_trials is not None and isinstance(recorded_k, int) and n_trials != recorded_k:
        fail(f"--n-trials {n_trials}: the fit in {folder} was made with --n-trials {recorded_k}")
    k = n_trials if n_trials is not None else recorded_k
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        fail(f"{folder}/diagnostics.json records no number of trials; give --n-trials K")
    path = recorded_matrix(diagnostics, matrix, folder)
    holes = allow_missing or "--allow-missing" in str(diagnostics.get("command", ""))
    counts = read_matrix_allowing_holes(path, k) if holes else read_matrix(path, k)
    theta = align(read_parameter_table(os.path.join(folder, "ability.csv"), "model", "theta_mean", "theta_sd"),
                  counts.models, "model", os.path.join(folder, "ability.csv"))
    b = align(read_parameter_table(os.path.join(folder, "difficulty.csv"), "item", "b_mean", "b_sd"),
              counts.items, "item", os.path.join(folder, "difficulty.csv"))
    guessing = settings.get("guessing", 0.0)
    if isinstance(guessing, dict):
        from benchmeasure.core.guessing import read_guessing_csv

        csv_path = guessing.get("per_item_csv")
        if not isinstance(csv_path, str) or not os.path.isfile(csv_path):
            fail(f"{folder}/diagnostics.json: the per-item guessing file {csv_path} is missing")
        g = np.asarray(read_guessing_csv(csv_path, counts.items), dtype=float)
    else:
        g = np.full(len(counts.items), float(guessing or 0.0))
    if posterior is not None:
        note = f"posterior draws from {posterior}"
    elif (theta.sd > 0).any():
        note = ("normal approximation: independent draws from each θ's and b's posterior mean and sd in ability.csv "
                "and difficulty.csv (no posterior.zarr in the fit folder; fit with --save-posterior for the real "
                "draws)")
    else:
        note = "posterior mode only (a MAP fit): the check conditions on the fitted point, no parameter uncertainty"
    return FitInputs(counts, path, theta, b, g, posterior, note)


def draw_batches(inputs: FitInputs, draws: int, seed: int, batch: int = 8):
    """Yield ``(theta, b)`` arrays of shape (B, M) and (B, N), ``draws`` in all (at most the posterior's)."""
    m = inputs.matrix
    if inputs.samples is not None:
        theta, b = inputs.samples
        pick = np.unique(np.linspace(0, theta.shape[0] - 1, min(draws, theta.shape[0])).round().astype(np.int64))
        for start in range(0, len(pick), batch):
            rows = pick[start:start + batch]
            yield np.asarray(theta[rows], dtype=float), np.asarray(b[rows], dtype=float)
        return
    if inputs.posterior is not None:
        from benchmeasure.analyses.posterior_metrics import read_posterior_b

        models, theta = read_posterior_b(inputs.posterior, "theta")
        items, b = read_posterior_b(inputs.posterior, "b")
        theta = _columns(theta, [str(x) for x in models], m.models, "model", inputs.posterior)
        b = _columns(b, [str(x) for x in items], m.items, "item", inputs.posterior)
        pick = np.unique(np.linspace(0, theta.shape[0] - 1, min(draws, theta.shape[0])).round().astype(np.int64))
        for start in range(0, len(pick), batch):
            rows = pick[start:start + batch]
            yield np.asarray(theta[rows], dtype=float), np.asarray(b[rows], dtype=float)
        return
    if not (inputs.theta.sd > 0).any() and not (inputs.b.sd > 0).any():
        # a MAP fit: the one point, repeated so that the whole-fit checks get ``draws`` replicated data sets
        for start in range(0, draws, batch):
            size = min(batch, draws - start)
            yield np.repeat(inputs.theta.mean[None, :], size, axis=0), np.repeat(inputs.b.mean[None, :], size, axis=0)
        return
    rng = np.random.default_rng(seed)
    for start in range(0, draws, batch):
        size = min(batch, draws - start)
        yield (inputs.theta.mean + inputs.theta.sd * rng.standard_normal((size, len(m.models))),
               inputs.b.mean + inputs.b.sd * rng.standard_normal((size, len(m.items))))


def _columns(values: np.ndarray, names: list, wanted: list, what: str, path: str) -> np.ndarray:
    index = {name: k for k, name in enumerate(names)}
    missing = [name for name in wanted if name not in index]
    if missing:
        fail(f"{path}: no draws for {what} {missing[0]!r}; the posterior is not this fit's")
    return values[:, [index[name] for name in wanted]]
