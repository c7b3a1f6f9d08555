"""The panel's abilities θ, fit once from the supplied response matrix and cached.

Online calibration holds each verifier model's ability fixed at its posterior mean from the
joint 1PL fit of the benchmark's response matrix (paper, Appendix C.3). That fit is
``benchmeasure fit`` (``scripts/fit_irt.py``; NUTS via PyMC/nutpie), which needs the IRT
environment (``.venv-irt``, Python >= 3.12), while the BenchFill loop may run in another
environment (``.venv-benchfill``, Python 3.11). So the fit runs as ``python -m benchmeasure fit``
with the IRT interpreter — ``$BENCHMEASURE_IRT_PYTHON`` if set, else the checkout's ``.venv-irt/bin/python``
— and its ``ability.csv`` (``model,theta_mean,…``) is read back. The fit dies with the process that
started it (:mod:`benchmeasure.base.lifetime`: Linux's parent-death signal, and on every system the fit's own
check of its parent each second), so a ``kill -9`` of ``run`` during the first-use fit leaves no fit running.

The cache is keyed by the matrix file's SHA-256, its trial count and guessing, in
``<cache>/<key>/`` (``ability.csv``, ``difficulty.csv``, ``diagnostics.json`` as ``fit_irt.py``
writes them); a second run on the same matrix reads the cache and starts no fit.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.base.files import sha256_file
from benchmeasure.base.lifetime import PARENT_PID_ENV, die_with_parent
from benchmeasure.base.resources import project_path
from benchmeasure.base.subcommand import subcommand_argv, subcommand_env
from benchmeasure.core.ability_file import read_ability_table

log = logging.getLogger(__name__)


def irt_python() -> str:
    """The interpreter of the IRT environment."""
    chosen = os.environ.get("BENCHMEASURE_IRT_PYTHON")
    if chosen:
        return chosen
    venv = project_path(".venv-irt/bin/python")
    if venv.exists():
        return str(venv)
    if sys.version_info >= (3, 12):
        return sys.executable
    fail("no IRT environment: create it with 'bash scripts/setup_env.sh irt' or set BENCHMEASURE_IRT_PYTHON")


def cache_key(matrix: str | os.PathLike, n_trials: int, guessing: float, allow_missing: bool = False) -> str:
    text = f"{sha256_file(matrix)}|K={n_trials}|g={guessing!r}"
    if allow_missing:  # the trials file is part of the input
        from benchmeasure.core.matrix_holes import trials_path

        companion = trials_path(matrix)
        text += f"|holes|{sha256_file(companion) if os.path.isfile(companion) else '-'}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def read_abilities(path: str | os.PathLike) -> dict:
    """``{model: theta_mean}`` from an ``ability.csv`` (:func:`benchmeasure.core.ability_file.read_ability_table`)."""
    return read_ability_table(path)


def fit_abilities(matrix: str | os.PathLike, n_trials: int, cache_dir: str | os.PathLike, guessing: float = 0.0,
                  seed: int = 0, extra_args: tuple = (), allow_missing: bool = False) -> tuple:
    """Abilities for ``matrix``, from the cache or from one ``fit_irt.py`` run.

    Returns
    -------
    (dict, Path)
        ``{model: θ}`` and the cache folder holding the fit's outputs.
    """
    matrix = Path(matrix)
    if not matrix.is_file():
        fail(f"{matrix}: response matrix not found")
    folder = Path(cache_dir) / cache_key(matrix, n_trials, guessing, allow_missing)
    ability = folder / "ability.csv"
    if ability.is_file():
        return read_abilities(ability), folder
    # The checks fit_irt.py would make on this input, made here first: bad input is then one
    # error line, not a progress line followed by the subprocess's error.
    # (the matrix readers bring NumPy, imported here: a command that only reads or refuses a run folder never needs it)
    from benchmeasure.core.matrix import read_matrix, read_matrix_allowing_holes

    if allow_missing:  # absent cells and K per cell: the fit's masked likelihood
        read_matrix_allowing_holes(matrix, n_trials)
        extra_args = (*extra_args, "--allow-missing")
    else:
        read_matrix(matrix, n_trials)
    if not 0 <= seed < 2**32:
        fail(f"seed must be in [0, 2^32), got {seed}")
    staging = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    command = subcommand_argv("fit", str(matrix), "--n-trials", str(n_trials), "--output-dir", str(staging),
                              "--seed", str(seed), *extra_args, python=irt_python())
    if guessing:
        command += ["--guessing", str(guessing)]
    log.info("fitting panel abilities once from %s (cached in %s)", matrix, folder)
    # the package in use, importable by the IRT interpreter whether or not it is installed there
    fit = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=subcommand_env(**{PARENT_PID_ENV: str(os.getpid())}),
                           preexec_fn=die_with_parent(os.getpid()))
    try:
        _, stderr = fit.communicate()
    except BaseException:  # interrupted (Ctrl-C, a cancelled run): the fit goes with us
        fit.kill()
        fit.wait()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    done = subprocess.CompletedProcess(command, fit.returncode, "", stderr)
    if done.returncode != 0 or not (staging / "ability.csv").is_file():
        shutil.rmtree(staging, ignore_errors=True)
        last = (done.stderr.strip().splitlines() or ["no message"])[-1].removeprefix("error: ")
        fail(f"ability fit of {matrix} failed (exit {done.returncode}): {last}")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(staging, folder)
    return read_abilities(ability), folder
