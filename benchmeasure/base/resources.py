"""Where the package finds files: its own data, and the project folder a user's relative paths mean.

Two kinds of files, one rule each (ARCHITECTURE.md, "Files the package reads"):

* **Package data** — prompt templates, the lmms-eval task files, the paper's reported numbers — ships
  inside the package and is read with :mod:`importlib.resources` (:func:`package_file`), so an installed
  ``benchmeasure`` works from any folder. The documented checkout paths (``propose/prompts/``,
  ``verifier/prompts/``, ``verifier/lmms_task/``, ``data/paper_reported/``) are links to these folders.
* **User files** — run configs (``propose/configs/*.toml``), panels (``verifier/panels/*.toml``), data,
  results — stay where users edit them. A relative path in a config or a default argument is resolved by
  :func:`project_path` against the project folder: the checkout the package is imported from when it is
  one (it holds ``pyproject.toml`` and ``propose/``), else the current working directory.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
from pathlib import Path

PACKAGE = "benchmeasure"


def package_file(*parts: str) -> Path:
    """A file or folder shipped inside the package (``package_file("benchfill", "templates")``)."""
    root = importlib.resources.files(PACKAGE)
    return Path(str(root.joinpath(*parts)))


def import_root() -> Path:
    """The folder whose ``benchmeasure/`` is the package in use (what ``PYTHONPATH`` needs for a child)."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:  # pragma: no cover - the package is always a regular package
        raise RuntimeError("benchmeasure is not imported from a folder")
    return Path(locations[0]).resolve().parent


def checkout() -> Path | None:
    """The repository checkout holding the package, or None when the package is installed elsewhere."""
    root = import_root()
    return root if (root / "pyproject.toml").is_file() and (root / "propose").is_dir() else None


def project_root() -> Path:
    """The folder relative user paths are resolved against: the checkout, else the working directory."""
    return checkout() or Path.cwd()


def project_path(value: str | os.PathLike) -> Path:
    """``value`` as given when absolute, else under :func:`project_root`."""
    path = Path(value)
    return path if path.is_absolute() else project_root() / path
