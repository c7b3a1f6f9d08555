"""The one way the package runs one of its own subcommands in a child process.

A library module that runs ``python -m benchmeasure SUBCOMMAND`` depends on the commands layer at run
time although it imports nothing from it. Those calls go through :func:`subcommand_argv` with the command
name as a literal, so ``tests/test_layers.py`` sees each of them and checks it against the list of
allowed child commands in ARCHITECTURE.md ("Child processes"). The child imports the package in use
(checkout or installed), whichever interpreter runs it: :func:`subcommand_env` puts that package first on
``PYTHONPATH``.
"""

from __future__ import annotations

import os
import sys

from benchmeasure.base.resources import PACKAGE, import_root


def subcommand_argv(name: str, *args: str, python: str | None = None) -> list[str]:
    """``[python, "-m", "benchmeasure", name, *args]`` (``python`` defaults to this interpreter)."""
    return [python or sys.executable, "-m", PACKAGE, name, *map(str, args)]


def subcommand_env(**extra: str) -> dict[str, str]:
    """This process's environment with the package in use importable in the child, plus ``extra``."""
    path = os.pathsep.join(p for p in (str(import_root()), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
