"""Where the package finds files: its own data, and the project folder a user's relative paths mean.

Two kinds of files, one rule each (ARCHITECTURE.md, "Files the package reads"):

* **Package data** — prompt templates, the lmms-eval task files, the paper's reported numbers — ships
  inside the package and is read with :mod:`importlib.resources` (:func:`package_file`), so an installed
  ``benchmeasure`` works from any folder. The documented checkout paths (``propose/prompts/``,
  ``verifier/prompts/``, ``verifier/lmms_task/``, ``data/paper_reported/``) are links to these folders.
* **User files** — data, results, and the user's own run configs and panels — stay where users edit them. A
  relative path in a config or a default argument is resolved by :func:`project_path` against the project
  folder: the checkout the package is imported from when it is one (it holds ``pyproject.toml`` and
  ``propose/``), else the current working directory.
* **Shipped examples** — the run configs of ``propose/configs/``, the panels of ``verifier/panels/`` and the
  scope spaces ``docs/examples/*.yaml`` — are both: the checkout keeps them where the README names them, and the
  package ships an identical copy (``benchmeasure/benchfill/configs/``, ``benchmeasure/verifier/panels/``,
  ``benchmeasure/scope/spaces/``; ``tests/test_package_data.py`` holds the two equal). :func:`example_path`
  finds the one a user names: the path as given, else under the project folder, else the shipped copy of that
  name (``aime24``, ``aime24.toml`` or the checkout path ``propose/configs/aime24.toml`` outside a checkout).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
from pathlib import Path

from benchmeasure.base.errors import fail

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


# kind → (its folder in a checkout, the package folder holding the identical copy, what it is called in messages,
# the files' suffix)
EXAMPLES = {
    "config": ("propose/configs", ("benchfill", "configs"), "BenchFill config", ".toml"),
    "panel": ("verifier/panels", ("verifier", "panels"), "panel config", ".toml"),
    "space": ("docs/examples", ("scope", "spaces"), "parameter space", ".yaml"),
}


def shipped_examples(kind: str) -> list:
    """The names (file stems) of the shipped examples of ``kind`` (``config``, ``panel`` or ``space``), sorted."""
    _, parts, _, suffix = EXAMPLES[kind]
    folder = package_file(*parts)
    return sorted(p.stem for p in folder.glob(f"*{suffix}")) if folder.is_dir() else []


def example_path(value: str | os.PathLike, kind: str, where: str = "") -> Path:
    """The config or panel file ``value`` names (module docstring): the path as given, else under the project
    folder, else the shipped example — by name (``aime24``, ``aime24.toml``) or by its checkout path
    (``propose/configs/aime24.toml``) when no such file exists. Anything else is one error line that lists the
    shipped names (prefixed by ``where``, the config that names the file, when given)."""
    checkout_folder, package_parts, what, suffix = EXAMPLES[kind]
    path = Path(value)
    candidates = [path] if path.is_absolute() else [path, project_path(path)]
    found = next((p for p in candidates if p.is_file()), None)
    if found is not None:
        return found
    text = path.as_posix()
    name = None
    if "/" not in text and text not in ("", ".", ".."):
        name = text if text.endswith(suffix) else f"{text}{suffix}"
    elif not path.is_absolute() and path.parent.as_posix() == checkout_folder:
        name = path.name
    shipped = package_file(*package_parts, name) if name else None
    if shipped is not None and shipped.is_file():
        return shipped
    fail(f"{where + ': ' if where else ''}{value}: {what} not found (give a path, or the name of a shipped one: "
         f"{', '.join(shipped_examples(kind)) or 'none'})")


def missing_input_hint(value: str) -> str:
    """What to do about a config's input file ``value`` that does not exist (the next step, for an error line)."""
    if Path(value).is_absolute():
        return "supply the file, or edit the config's path"
    folder = "the checkout" if checkout() else "the working folder"
    return (f"a config's relative paths are read under {project_root()} ({folder}); supply the file there, or copy "
            "the config, edit its paths and pass the copy with --config")
