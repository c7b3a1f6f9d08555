"""The harness log-format registry: one :class:`Format` entry per ``prepare --from NAME``.

An entry holds the reader, the package that writes the format (named in the provenance record), the
reader options it takes (``--metric``, ``--filter``…, refused for formats that do not take them) and the
hint printed when a log holds one response per document but ``--n-trials`` asks for more.

Each reader module registers its formats beside its code, decorating the ``read(path, options)`` function
(:meth:`benchmeasure.base.registry.Registry.add`)::

    @FORMATS.add("evalscope", package="evalscope", options=("metric",), repeats_hint=" (run evalscope with ...)")
    def read_evalscope(path, options):
        return read_evalscope_log(path, options.metric)

The reader modules are imported when the registry is first read, in the order of ``builtins`` (which is the
order of ``prepare --from``'s choices), then the formats of other packages (entry-point group
``benchmeasure.log_formats``, whose entries may give ``read`` as a lazy ``"module:function"`` string; ARCHITECTURE.md,
"Adding an extension"). This module imports nothing but :mod:`benchmeasure.base.registry`, so a plugin can import
:class:`Format` without NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from benchmeasure.base.registry import GROUPS, Registry, lazy


@dataclass(frozen=True)
class ReadOptions:
    """Reader settings given on the command line (each applies to some formats only)."""

    filter_name: str | None = None
    metric: str | None = None
    scorer: str | None = None
    partial: str | None = None
    perturbation: str | None = None


#: ReadOptions field → the command-line flag that sets it, in the order prepare names them when misused
OPTION_FLAGS = {"metric": "--metric", "filter_name": "--filter", "scorer": "--scorer", "partial": "--partial",
                "perturbation": "--perturbation"}


@dataclass(frozen=True)
class Format:
    """A log format: ``read(path, options) -> HarnessLog``, the writing package, its options, its repeat hint."""

    name: str
    read: object
    package: str
    options: tuple = ()
    repeats_hint: str = ""

    DECORATES: ClassVar[str] = "read"   # FORMATS.add(...) decorates the reader

    def __post_init__(self):
        object.__setattr__(self, "read", lazy(self.read))
        unknown = set(self.options) - set(OPTION_FLAGS)
        if unknown:
            raise ValueError(f"format {self.name!r}: unknown reader option {sorted(unknown)[0]!r}")


FORMATS = Registry("harness", GROUPS["log format"], entry=Format,
                   builtins=tuple(f"benchmeasure.core.harness.{m}" for m in ("lm_eval", "lighteval", "inspect_log",
                                                                            "evalscope", "helm", "opencompass")))
