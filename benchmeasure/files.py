"""Safe output files and the provenance recorded beside results. Standard library only.

Outputs are written to a temporary file in the destination folder and renamed into
place only when complete, so an interrupted or rejected run never leaves a partial
file behind and never clobbers a good one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import platform
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", newline: str | None = "") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it onto ``path`` if the block succeeds.

    Missing parent folders are created. On any exception the temporary file is removed
    and ``path`` is left as it was.
    """
    target = Path(path)
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
