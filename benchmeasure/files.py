"""Safe output files, the one JSON Lines reader, and the provenance recorded beside results.

Standard library only. Outputs are written to a temporary file in the destination folder and renamed into
place only when complete, so an interrupted or rejected run never leaves a partial
file behind and never clobbers a good one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import platform
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from benchmeasure.errors import fail


def check_output_path(path: str | os.PathLike) -> Path:
    """Fail with an :class:`InputError` unless ``path`` can be written as a file (checked before any work)."""
    target = Path(path)
    if target.is_dir():
        fail(f"{target}: is a folder; give the path of a file to write")
    ancestor = target.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        fail(f"{target}: cannot create the folder {target.parent}: {ancestor} is a file")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        fail(f"{target}: no permission to write in {ancestor}")
    return target


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", newline: str | None = "") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it onto ``path`` if the block succeeds.

    Missing parent folders are created; a path that cannot be written (a folder, a file in the
    way of a parent folder, no permission) is an :class:`InputError`. On any exception the temporary file is removed
    and ``path`` is left as it was.
    """
    target = check_output_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
        kwargs = {} if "b" in mode else {"encoding": "utf-8", "newline": newline}
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | os.PathLike, obj, sort_keys: bool = False, default=None) -> None:
    """Write ``obj`` as indented UTF-8 JSON with a final newline, atomically (see :func:`atomic_write`)."""
    with atomic_write(path) as handle:
        json.dump(obj, handle, indent=2, ensure_ascii=False, sort_keys=sort_keys, default=default)
        handle.write("\n")


def read_jsonl_objects(path: str | os.PathLike, required: tuple = ()) -> list[tuple[int, dict]]:
    """``(line number, object)`` for every non-blank line of a JSON Lines file, in file order.

    Each line must hold one JSON object with every key in ``required``. Anything else is an
    :class:`~benchmeasure.errors.InputError` naming the file and line: ``PATH line N: not
    valid JSON (…)``, ``PATH line N: not a JSON object`` or ``PATH line N: no field 'KEY'``;
    an unreadable or non-UTF-8 file is ``PATH: cannot read (…)`` / ``PATH: not UTF-8 text``.
    Checks beyond these (duplicates, types, an empty file) are the caller's.
    """
    records = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as exc:
                    fail(f"{path} line {number}: not valid JSON ({exc.msg})")
                if not isinstance(record, dict):
                    fail(f"{path} line {number}: not a JSON object")
                for key in required:
                    if key not in record:
                        fail(f"{path} line {number}: no field {key!r}")
                records.append((number, record))
    except OSError as exc:
        fail(f"{path}: cannot read ({exc.strerror or exc})")
    except UnicodeDecodeError:
        fail(f"{path}: not UTF-8 text")
    return records


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def package_versions(names: list[str]) -> dict[str, str | None]:
    """Installed versions of ``names`` (``None`` where a package is absent), plus Python's."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def command_line() -> str:
    """The command that produced an output, for provenance records."""
    return " ".join([Path(sys.executable).name, *sys.argv])
