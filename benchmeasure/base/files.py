"""Safe output files, the one JSON Lines reader, and the provenance recorded beside results.

Standard library only. Outputs are written to a temporary file in the destination folder and renamed into
place only when complete, so an interrupted or rejected run never leaves a partial
file behind and never clobbers a good one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from benchmeasure.base.compressed import compressing, compression, open_input, read_errors, text_writer
from benchmeasure.base.errors import InputError, fail
from benchmeasure.base.interrupt import held


def _describe_kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _identity(path: str | os.PathLike) -> tuple | None:
    """``(device, inode)`` of what ``path`` names after following symlinks, or None when nothing is there."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def _check_creatable(target, folder: Path, what: str) -> None:
    """Fail (naming ``target``) unless ``folder`` exists or can be made: its nearest existing ancestor is a folder we
    may write in."""
    ancestor = folder
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        fail(f"{target}: cannot create {what}: {ancestor} is a file")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        fail(f"{target}: no permission to write in {ancestor}")


def check_output_path(path: str | os.PathLike, inputs: Iterable = ()) -> Path:
    """Fail with an :class:`InputError` unless ``path`` can be written as a file (checked before any work).

    Symlinks are followed: the file they name is what will be written. Refused: a folder; an existing
    thing that is not a regular file (``/dev/stdout``, a named pipe, a socket); the same file as any of
    ``inputs`` (writing it would destroy the input); a parent that is a file or cannot be written.
    """
    if not os.fspath(path):
        fail("an output path is empty (''); give the path of a file to write")
    compression(path)  # a suffix of a compression not written here (.zip, .zst …) is refused before any work
    target = Path(path)
    try:
        info = os.stat(target)  # follows symlinks: /dev/stdout is the device or pipe it names
    except (FileNotFoundError, NotADirectoryError):
        info = None  # (a file in the way of a parent folder is reported below)
    except OSError as exc:
        fail(f"{target}: cannot check this output path ({exc.strerror or exc})")
    if info is not None and stat.S_ISDIR(info.st_mode):
        fail(f"{target}: is a folder; give the path of a file to write")
    if info is not None and not stat.S_ISREG(info.st_mode):
        fail(f"{target}: exists and is {_describe_kind(info.st_mode)}; give the path of a regular file to write")
    if info is not None:
        for source in inputs:
            if source is not None and _identity(source) == (info.st_dev, info.st_ino):
                fail(f"{target}: is the input {os.fspath(source)}; writing it would overwrite the input, "
                     "choose another output path")
    real = Path(os.path.realpath(target))
    _check_creatable(target, real.parent, f"the folder {real.parent}")
    return target


def check_output_folder(path: str | os.PathLike, inputs: Iterable = (), files: Iterable = ()) -> Path:
    """Fail unless ``path`` is, or can be created as, a writable folder; check each of its ``files`` too.

    ``files`` are the names the command will write inside the folder: each is checked with
    :func:`check_output_path` against ``inputs`` (so ``fit_irt.py out/difficulty.csv --output-dir out``
    is refused before the fit, not discovered after it).
    """
    if not os.fspath(path):
        fail("an output folder is empty (''); give a folder for the outputs ('.' for this one)")
    target = Path(path)
    real = Path(os.path.realpath(target))
    if real.exists() and not real.is_dir():
        fail(f"{target}: exists and is not a folder; give a folder for the outputs")
    _check_creatable(target, real, "this folder")
    for name in files:
        check_output_path(target / name, inputs)
    return target


def plan_outputs(files: Iterable = (), inputs: Iterable = (), folders: Iterable = ()) -> None:
    """Check every output of a command before any input is read or any output written.

    ``files`` are output file paths (None entries are skipped), ``folders`` are ``(folder, names)`` pairs
    for outputs written inside a folder. Each is checked against every input (see :func:`check_output_path`
    and :func:`check_output_folder`), and no two outputs may be the same file.
    """
    inputs = [source for source in inputs if source is not None]
    seen: dict = {}
    paths = [Path(f) for f in files if f is not None]
    for folder, names in folders:
        if folder is None:
            continue
        check_output_folder(folder, inputs, names)
        paths.extend(Path(folder) / name for name in names)
    for path in paths:
        check_output_path(path, inputs)
        key = os.path.realpath(path)
        if key in seen:
            fail(f"{path}: named twice as an output (also as {seen[key]}); give each output its own path")
        seen[key] = path
    # the whole tree at once: no output file may be a folder on the way to another output (a benchmark named
    # like an output file would make one output the parent of another), nor a folder on the way to an input
    folder_keys = {os.path.realpath(folder): folder for folder, _ in folders if folder is not None}
    for key, path in seen.items():
        for parent in Path(key).parents:
            holder = seen.get(str(parent))
            if holder is not None:
                fail(f"{holder}: is an output file and also the folder of the output {path}; rename one of them "
                     "(a benchmark, a --name or an output path)")
        if key in folder_keys:
            fail(f"{path}: is an output file and also the output folder {folder_keys[key]}; rename one of them "
                 "(a benchmark named like an output file?)")
    for source in inputs:
        real = Path(os.path.realpath(source))
        for parent in real.parents:
            if str(parent) in seen:
                fail(f"{seen[str(parent)]}: is an output file, but the input {os.fspath(source)} lies inside it")


_staged: list | None = None
_created: list = []  # folders made by atomic_write inside all_or_nothing, removed (when empty) if the block fails


def make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing ancestors; return the ones created, deepest first."""
    missing = []
    ancestor = folder
    while not ancestor.exists() and ancestor != ancestor.parent:
        missing.append(ancestor)
        ancestor = ancestor.parent
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def remove_empty_folders(folders: list) -> None:
    """Remove the folders a failed command created, deepest first, each only when empty."""
    for folder in sorted(set(folders), key=lambda f: len(Path(f).parts), reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


@contextlib.contextmanager
def all_or_nothing() -> Iterator[None]:
    """Every :func:`atomic_write` inside the block is renamed into place only when the whole block succeeds.

    A command with several outputs wraps its writing in this block, so a failure while writing the
    second (a full disk, an unwritable path) leaves none of them behind and every old file as it was.
    """
    global _staged
    if _staged is not None:  # nested: the outer block decides
        yield
        return
    _staged = staged = []
    _created.clear()
    try:
        yield
    except BaseException:
        _staged = None
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        remove_empty_folders(_created)
        _created.clear()
        raise
    _staged = None
    try:
        with held():  # a Ctrl-C among the renames waits for the last one: all of them, or (before) none
            for tmp, target in staged:
                os.replace(tmp, target)
    except OSError as exc:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        remove_empty_folders(_created)
        _created.clear()
        fail(f"{exc.filename or 'output'}: cannot write ({exc.strerror or exc})")
    _created.clear()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", newline: str | None = "") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it onto ``path`` if the block succeeds.

    A name ending in ``.gz``, ``.bz2`` or ``.xz`` is written compressed so (:mod:`benchmeasure.base.compressed`).
    Missing parent folders are created; a path that cannot be written (a folder, a device or pipe, a file in
    the way of a parent folder, no permission) is an :class:`InputError`, and so is a full disk or any other
    error while writing. A symlink is written through (the file it names is replaced, the link stays). On
    any exception the temporary file is removed and ``path`` is left as it was. Inside
    :func:`all_or_nothing` the rename waits for the end of that block.
    """
    shown = check_output_path(path)
    target = Path(os.path.realpath(shown))
    tmp = None
    created: list = []
    try:
        created = make_parents(target.parent)
        if _staged is not None:
            _created.extend(created)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
        if compression(target) is None:
            kwargs = {} if "b" in mode else {"encoding": "utf-8", "newline": newline}
            with os.fdopen(fd, mode, **kwargs) as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
        else:  # a name that promises a compression gets it (.gz, .bz2, .xz)
            with os.fdopen(fd, "wb") as raw:
                stream = compressing(raw, target)
                handle = stream if "b" in mode else text_writer(stream, newline)
                try:
                    yield handle
                finally:
                    handle.close()  # finishes the archive; raw stays open
                raw.flush()
                os.fsync(raw.fileno())
        if _staged is not None:
            _staged.append((tmp, target))
        else:
            os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if _staged is None:
            remove_empty_folders(created)
        if isinstance(exc, BrokenPipeError) or exc.filename not in (None, tmp, str(target), str(target.parent)):
            raise  # not a failure of this output (an input the block was reading, say)
        fail(f"{shown}: cannot write ({exc.strerror or exc})")
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if _staged is None:
            remove_empty_folders(created)
        raise


def nonfinite_entry(obj, where: str = "") -> str | None:
    """The key path (``a.b[3]``) of the first NaN or infinite float inside ``obj``, or None when all are finite."""
    if isinstance(obj, float):
        return None if math.isfinite(obj) else (where or "the value")
    if isinstance(obj, dict):
        entries = ((f"{where}.{key}" if where else str(key), value) for key, value in obj.items())
    elif isinstance(obj, (list, tuple)):
        entries = ((f"{where}[{k}]", value) for k, value in enumerate(obj))
    else:
        return None
    for name, value in entries:
        found = nonfinite_entry(value, name)
        if found is not None:
            return found
    return None


def check_finite(obj, what: str) -> None:
    """Fail naming ``what`` and the entry when ``obj`` holds a NaN or infinity (no such number is a result)."""
    found = nonfinite_entry(obj)
    if found is not None:
        fail(f"{what}: {found} is not a finite number; refusing to report it as a result")


def result_json(obj, what: str = "result", indent: int | None = 2) -> str:
    """``obj`` as JSON text for stdout; a NaN or infinity anywhere is an :class:`InputError` naming it."""
    check_finite(obj, what)
    return json.dumps(obj, indent=indent, allow_nan=False)


def write_json(path: str | os.PathLike, obj, sort_keys: bool = False, default=None) -> None:
    """Write ``obj`` as indented UTF-8 JSON with a final newline, atomically (see :func:`atomic_write`).

    A NaN or infinity anywhere in ``obj`` is an :class:`InputError` naming its key (JSON has no such numbers,
    and none is a result); nothing is written then.
    """
    if default is not None:
        obj = json.loads(json.dumps(obj, default=default))
    check_finite(obj, os.fspath(path))
    with atomic_write(path) as handle:
        json.dump(obj, handle, indent=2, ensure_ascii=False, sort_keys=sort_keys, allow_nan=False)
        handle.write("\n")


def write_report(files: dict, json_path: str | os.PathLike, record) -> None:
    """Write ``files`` ({path: text, or a function that writes to the open file}) and then ``record`` as JSON at
    ``json_path``: all of them or, on an error, none (:func:`all_or_nothing`)."""
    with all_or_nothing():
        for path, content in files.items():
            with atomic_write(path) as handle:
                if callable(content):
                    content(handle)
                else:
                    handle.write(content)
        write_json(json_path, record)


#: Output field names that were renamed (old → current; CHANGELOG.md). Files written before the rename keep
#: the old spelling; readers pass what they read through :func:`current_names`.
RENAMED_FIELDS = {"max_rhat": "max_r_hat", "top5_sum": "top5_gap_sum",  # robustness.json, summaries
                  "z_L": "left", "z_R": "right"}  # BenchFill journals, records CSVs and summaries


def current_names(obj):
    """``obj`` with every key named in :data:`RENAMED_FIELDS` spelled the current way, in nested dicts too."""
    if isinstance(obj, dict):
        return {RENAMED_FIELDS.get(k, k): current_names(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [current_names(v) for v in obj]
    return obj


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def file_in_folder(folder: Path, name: str, kind: str, what: str) -> Path:
    """``folder``/``name``; fails ``FOLDER: no such KIND`` unless ``folder`` is a folder, and ``FOLDER: not WHAT
    (no NAME)`` unless it holds that file."""
    if not folder.is_dir():
        fail(f"{folder}: no such {kind}")
    if not (folder / name).is_file():
        fail(f"{folder}: not {what} (no {name})")
    return folder / name


def read_json(path: str | os.PathLike, what: str = "JSON file"):
    """The content of a strict JSON file: a missing file, a folder, a file that is not UTF-8 or not JSON, and
    a NaN, Infinity or overflowing number (no such number is a result) are each one error line naming ``path``
    and ``what`` it should be."""
    name = os.fspath(path)
    try:
        with read_errors(name), open_input(name) as handle:  # utf-8-sig: a leading BOM is dropped
            return json.load(handle, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        fail(f"{name}: not a {what} (not valid JSON: {exc.msg}, line {exc.lineno})")
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        fail(f"{name}: not a {what} ({exc}; a result is a finite number)")


def read_jsonl_objects(path: str | os.PathLike, required: tuple = ()) -> list[tuple[int, dict]]:
    """``(line number, object)`` for every non-blank line of a JSON Lines file, in file order.

    Each line must hold one JSON object with every key in ``required``. Anything else is an
    :class:`~benchmeasure.base.errors.InputError` naming the file and line: ``PATH line N: not
    valid JSON (…)``, ``PATH line N: not a JSON object`` or ``PATH line N: no field 'KEY'``;
    an unreadable or non-UTF-8 file is ``PATH: cannot read (…)`` / ``PATH: not UTF-8 text``.
    Checks beyond these (duplicates, types, an empty file) are the caller's.
    """
    records = []
    try:
        # lines end at '\n' only: a text may hold U+2028, U+2029, U+0085 or a form feed raw (JSON allows them),
        # which str.splitlines() would break a record at; a .gz/.bz2/.xz name is decompressed
        # a UTF-8 byte-order mark at the start is dropped, as the CSV reader does (it made line 1 "not valid JSON")
        with read_errors(path), open_input(path, encoding="utf-8-sig", newline="\n") as handle:
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
    """Hex SHA-256 of a file's bytes; a path that is not a readable file is one error line (an input is checked
    before it is hashed)."""
    digest = hashlib.sha256()
    if not os.path.exists(path):
        fail(f"{os.fspath(path)}: no such file")
    if os.path.isdir(path):
        fail(f"{os.fspath(path)}: is a folder, expected a file")
    try:
        with open(path, "rb") as handle:
            while block := handle.read(chunk):
                digest.update(block)
    except OSError as exc:
        fail(f"{os.fspath(path)}: cannot read ({exc.strerror or exc})")
    return digest.hexdigest()


def package_versions(names: list[str]) -> dict[str, str | None]:
    """Installed versions of ``names`` (``None`` where a package is absent), plus Python's."""
    import importlib.metadata  # here, not at the top: its import (≈ 40 ms) would slow every command's start

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


def provenance(packages: list[str]) -> dict:
    """A record's ``command`` and ``package_versions`` entries, in that order (``{**provenance([...])}``)."""
    return {"command": command_line(), "package_versions": package_versions(packages)}
