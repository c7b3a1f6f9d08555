"""Where compiled kernels live between processes, and how a damaged entry is rebuilt.

Every Numba kernel of the package is compiled with ``cache=True``: the first process that needs it compiles it
(the sampler's log densities, about 20 s in all on a 2-core machine) and writes the machine code to the
**kernel cache**; later processes load it in milliseconds. The cache is a folder per package version and
Python version,

    $BENCHMEASURE_CACHE_DIR/kernels/<version>-py<major><minor>-<source digest>/
                                        (default ~/.cache/benchmeasure/…, or $XDG_CACHE_HOME/benchmeasure/…)

the digest covering the source of every kernel module (:func:`source_digest`), inside which Numba keys each
entry by its source file's stamp, the function's signature and the CPU, so an edited kernel is recompiled and a
stale one is never loaded, also when the edit is in another file that the kernel calls. A user who sets
``NUMBA_CACHE_DIR`` keeps it.

Kernel modules import Numba from here (``from benchmeasure.base.kernel_cache import numba``), so the folder
is chosen before any kernel is decorated. Concurrency: Numba writes every entry to a temporary file and renames
it into place, so two processes that compile at once both succeed and one of the identical entries wins
(``tests/test_compiled_density.py`` starts two fits at once on an empty cache). Damage: an entry that
cannot be read (a truncated or garbled file) is dropped and compiled afresh, with a warning, never fatal.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

from benchmeasure import __version__

log = logging.getLogger(__name__)


def cache_root() -> Path:
    """The package's user cache folder (also holds the converted CPU model of the real-model tests)."""
    explicit = os.environ.get("BENCHMEASURE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "benchmeasure"


def source_digest(root: Path | None = None) -> str:
    """12 hex digits of the source of every kernel module under ``root`` (default: this package).

    Numba checks only the stamp of a kernel's own file, so a kernel that calls one in another file (the suite's
    likelihood calls the collapsed route's) would be loaded stale after that other file changed; a folder per
    digest of all of them makes every edit to any kernel source a fresh folder."""
    import hashlib

    from benchmeasure.base.resources import package_file

    root = package_file() if root is None else Path(root)
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if b"numba" in text:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + text + b"\0")
    return digest.hexdigest()[:12]


def kernel_dir() -> Path:
    """This package version's kernel folder (what ``NUMBA_CACHE_DIR`` is set to unless the user set it): one per
    package version, Python version and kernel source (:func:`source_digest`)."""
    return (cache_root() / "kernels"
            / f"{__version__}-py{sys.version_info[0]}{sys.version_info[1]}-{source_digest()}")


def configure() -> Path:
    """Point Numba's cache at :func:`kernel_dir` (before any kernel module is imported); returns the folder."""
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if not chosen:
        chosen = str(kernel_dir())
        os.environ["NUMBA_CACHE_DIR"] = chosen
    if "numba" in sys.modules:   # already imported: its config read the environment then
        sys.modules["numba"].config.CACHE_DIR = chosen
    return Path(chosen)


def is_warm(function) -> bool:
    """Whether the cache folder of ``function``'s source file (Numba keeps one per source folder) holds an
    index for that file's kernels: a checkout and an installed copy of the package have separate entries."""
    from numba.core.caching import UserProvidedCacheLocator

    source = function.__code__.co_filename
    locator = UserProvidedCacheLocator.from_function(function, source)
    if locator is None:
        return False
    folder = Path(locator.get_cache_path())
    return folder.is_dir() and any(folder.glob(f"{Path(source).stem}.*.nbi"))


def timed_build(build, what: str, function):
    """``build()``; says on the log, before and after, when the kernels of ``function``'s module are compiled
    rather than loaded."""
    cold = not is_warm(function)
    if cold:
        log.info("note: compiling %s once for this package version (about 20 s on 2 cores; later runs load it "
                 "from %s)", what, os.environ.get("NUMBA_CACHE_DIR") or kernel_dir())
    start = time.perf_counter()
    result = build()
    if cold:
        log.info("note: compiled %s in %.1f s", what, time.perf_counter() - start)
    return result


def _install_guard(caching) -> None:
    """A cache entry that cannot be read or written is dropped and compiled afresh, never fatal."""
    if getattr(caching.Cache, "_benchmeasure_guarded", False):
        return
    load, save = caching.Cache.load_overload, caching.Cache.save_overload

    def load_overload(self, sig, target_context):
        try:
            return load(self, sig, target_context)
        except Exception as exc:
            _drop(self, exc)
            return None

    def save_overload(self, sig, data):
        try:
            save(self, sig, data)
        except Exception as exc:
            _drop(self, exc)

    caching.Cache.load_overload = load_overload
    caching.Cache.save_overload = save_overload
    caching.Cache._benchmeasure_guarded = True


def _drop(cache, exc: Exception) -> None:
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    log.warning("note: a kernel cache entry could not be used (%s: %s); compiling it afresh",
                type(exc).__name__, (str(exc).splitlines() or [""])[0][:200])
    if index:
        try:
            os.unlink(index)
        except OSError:
            pass


configure()
import numba  # noqa: E402, F401 - kernel modules import numba from here, after the folder is chosen
from numba.core import caching  # noqa: E402

_install_guard(caching)
