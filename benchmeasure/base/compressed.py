"""The one reader and writer of compressed files: a name's suffix says the format. Standard library only.

A path ending in ``.gz``, ``.bz2`` or ``.xz`` is gzip, bzip2 or xz; any other path is plain. Every reader of a
table or JSON Lines file opens it with :func:`open_input` inside :func:`read_errors`, and every writer goes
through :func:`benchmeasure.base.files.atomic_write`, which compresses with :func:`compressing`; so a ``.gz``
output is compressed, and every reader reads what every writer writes (``tests/test_compressed_files.py``).

Refused with one :class:`~benchmeasure.base.errors.InputError` naming the file: a damaged or truncated archive
(a corrupt deflate block, a bad CRC, a cut file); a file whose name promises a compression its bytes do not
have, or whose bytes are compressed under a plain name; a suffix of another compression (``.zip``, ``.zst`` …),
which the project neither reads nor writes.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import stat
import zlib
from collections.abc import Iterator
from typing import IO

from benchmeasure.base.errors import fail

#: suffix → (format name, the first bytes of such a file)
FORMATS = {".gz": ("gzip", b"\x1f\x8b"), ".bz2": ("bzip2", b"BZh"), ".xz": ("xz", b"\xfd7zXZ\x00")}
#: suffixes of compressions the project does not read or write
OTHER = (".zip", ".zst", ".zstd", ".lz4", ".lz", ".lzma", ".7z", ".tgz", ".tar", ".z", ".br", ".sz", ".snappy")
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error, lzma.LZMAError)


def compression(path: str | os.PathLike) -> str | None:
    """The compression suffix of ``path`` (``.gz``, ``.bz2``, ``.xz``) or None; another compression's suffix is
    an :class:`~benchmeasure.base.errors.InputError`."""
    name = os.fspath(path)
    lower = name.lower()
    for suffix in FORMATS:
        if lower.endswith(suffix):
            return suffix
    for suffix in OTHER:
        if lower.endswith(suffix):
            fail(f"{name}: {suffix} files are not read or written here; use a plain file or one ending in "
                 f"{', '.join(FORMATS)}")
    return None


def strip_compression(path: str | os.PathLike) -> tuple[str, str]:
    """``('x/m.csv', '.gz')`` for ``x/m.csv.gz``; ``(path, '')`` for a plain path."""
    name = os.fspath(path)
    suffix = compression(name)
    return (name[: -len(suffix)], name[-len(suffix):]) if suffix else (name, "")


def _sniff(path: str) -> str | None:
    """The compression suffix whose magic bytes start the file, or None (and None, unread, for a pipe or device:
    its first bytes could not be read twice)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        return None
    with open(path, "rb") as handle:
        head = handle.read(10)
    if head[:3] == b"BZh":  # text may start so too: a bzip2 header is BZh, a block size digit, then a block marker
        return ".bz2" if head[3:4].isdigit() and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90") else None
    return next((suffix for suffix, (_, magic) in FORMATS.items() if head.startswith(magic)), None)


def open_input(path: str | os.PathLike, text: bool = True, encoding: str = "utf-8-sig",
               newline: str | None = "") -> IO:
    """Open an input file for reading, decompressing as its name says. Checks first that it exists, is a file
    and that its bytes are what its name promises. Wrap the reading in :func:`read_errors`."""
    name = os.fspath(path)
    suffix = compression(name)
    if not os.path.exists(name):
        fail(f"{name}: no such file")
    if os.path.isdir(name):
        fail(f"{name}: is a folder, expected a file")
    try:
        found = _sniff(name)
        if suffix is not None and found != suffix and stat.S_ISREG(os.stat(name).st_mode):
            fail(f"{name}: not a {FORMATS[suffix][0]} file, though its name ends in {suffix} "
                 f"(its first bytes are no {FORMATS[suffix][0]} header); rename it, or compress it")
        if suffix is None and found is not None:
            fail(f"{name}: is {FORMATS[found][0]}-compressed, but its name does not end in {found}; "
                 f"rename it to {os.path.basename(name)}{found}")
        if suffix is None:
            return open(name, encoding=encoding, newline=newline) if text else open(name, "rb")
        opener = _OPENERS[suffix]
        return opener(name, "rt", encoding=encoding, newline=newline) if text else opener(name, "rb")
    except OSError as exc:
        fail(f"{name}: cannot read ({exc.strerror or exc})")


@contextlib.contextmanager
def read_errors(path: str | os.PathLike) -> Iterator[None]:
    """A damaged archive or a file that is not UTF-8, met while reading ``path``, as one error line."""
    name = os.fspath(path)
    suffix = compression(name)
    try:
        yield
    except _ERRORS as exc:
        kind = FORMATS[suffix][0] if suffix else "compressed"
        fail(f"{name}: not a readable {kind} file (damaged or cut short: {' '.join(str(exc).split())[:120]}); "
             "give the plain file or a complete archive")
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start:exc.start + 1].hex()
        fail(f"{name}: not UTF-8 text (byte 0x{byte}: {exc.reason}); save it as UTF-8")
    except OSError as exc:
        if suffix is not None and exc.errno is None:  # bz2: "Invalid data stream"
            fail(f"{name}: not a readable {FORMATS[suffix][0]} file ({exc}); give the plain file or a complete "
                 "archive")
        raise


def read_bytes(path: str | os.PathLike) -> bytes:
    """The whole (decompressed) content of ``path``."""
    with read_errors(path), open_input(path, text=False) as handle:
        return handle.read()


def compressing(raw: IO[bytes], path: str | os.PathLike) -> IO[bytes]:
    """A binary writer that compresses into ``raw`` as ``path``'s name says (``raw`` itself for a plain name).
    Closing it finishes the archive and leaves ``raw`` open. Output is reproducible (no time stamp, no name)."""
    suffix = compression(path)
    if suffix == ".gz":
        return gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)
    if suffix == ".bz2":
        return bz2.BZ2File(raw, "wb")
    if suffix == ".xz":
        return lzma.LZMAFile(raw, "wb")
    return raw


def text_writer(binary: IO[bytes], newline: str | None = "") -> io.TextIOWrapper:
    return io.TextIOWrapper(binary, encoding="utf-8", newline=newline)
