"""Named registries of extensions: graders, log formats, strategies, observation models, routes, modes (table below).

Every place that used to switch on a string (``if kind == "math": …``) asks a registry instead, so adding
an extension is one module plus one registry entry (ARCHITECTURE.md, "Adding an extension"). A registry
maps a name to an entry object (a frozen dataclass of the extension's protocol, defined beside the
registry that holds it). Entries are checked when registered; a callable field may be given lazily as a
``"module:object"`` string that is imported on first use, so that listing names stays cheap (the command
line's ``choices`` and ``--help`` import no grader, sampler or reader).

    from benchmeasure.grading.registry import GRADERS, Grader
    GRADERS.register(Grader(name="exact", grade="mypkg.exact:grade", options=()))
    GRADERS["exact"].grade(response, reference)

**One idiom: a decorator beside the code.** A registry knows its entry type and the modules that hold its
built-in entries; each of those modules registers its entry with :meth:`Registry.add` on the function (or
class) the entry is about, so the entry's declaration stands beside its code::

    ROUTES = Registry("fit route", GROUPS["route"], entry=Route,
                      builtins=("benchmeasure.irt.routes.collapsed", ...))

    # benchmeasure/irt/routes/collapsed.py
    @ROUTES.add("collapsed", summary="...", refusals={...})
    def run(matrix, plan, progress): ...

The entry type names the field the decorated object fills in its ``DECORATES`` class attribute (``"run"``,
``"grade"``…); a tuple there means the decorated object is a class or module whose attributes of those names
fill the fields (a strategy's ``plan``, ``prompt``…). The built-in modules are imported the first time the
registry is read, in the order given, before the entry points of other packages; a module that must stay cheap
to import (the command line's ``choices`` and ``--help`` read registries) keeps its heavy imports inside its
functions.

A registry is ordered (registration order) and refuses a second entry under a taken name unless
``replace=True``; :meth:`Registry.unregister` removes one (tests registering a toy entry use it).

**Extensions from other installed packages.** A registry made with an entry-point ``group`` also holds the
entries that installed packages declare under that group (``[project.entry-points."benchmeasure.graders"]``
in their ``pyproject.toml``): each entry point names a module whose ``@REGISTRY.add`` decorators register its
entries when it is imported (the idiom above), an entry object, a list of them, or a function returning either.
They are loaded the first time the registry is read (so the command line's choices, ``--help`` and every
child process that BenchFill starts see them), after the built-in entries; one that fails to load, or takes a
built-in's name, is skipped with a warning naming it. The groups are :data:`GROUPS`.

**The registries** (registry — where it and its entry type live — its entry-point group):

========================================  =====================================  ===================================
registry (command-line choice)            module                                 entry-point group
========================================  =====================================  ===================================
``GRADERS`` (``grade --kind``)            ``benchmeasure.grading.registry``      ``benchmeasure.graders``
``FORMATS`` (``prepare --from``)          ``benchmeasure.core.harness.formats``  ``benchmeasure.log_formats``
``STRATEGIES`` (BenchFill: all run)       ``benchmeasure.benchfill.strategies``  ``benchmeasure.strategies``
``OBSERVATIONS`` (``fit --observation``)  ``benchmeasure.irt.observation``       ``benchmeasure.observation_models``
``ROUTES`` (``fit --route``)              ``benchmeasure.irt.routes``            ``benchmeasure.routes``
``STRATEGIES`` (``scope --strategy``)     ``benchmeasure.scope.strategies``      ``benchmeasure.scope_strategies``
``UTILITIES`` (``scope --utility``)       ``benchmeasure.scope.utility``         ``benchmeasure.scope_utilities``
``STRATEGIES`` (``select-anchors``)       ``benchmeasure.analyses.anchors``      ``benchmeasure.anchor_strategies``
``MODES`` (``browse query --mode``)       ``benchmeasure.browse.fusion``         ``benchmeasure.browse_modes``
``ROUTES`` (``fit-suite --route``)        ``benchmeasure.suite.mirt``            none (written against that module)
========================================  =====================================  ===================================

**An entry's options on the command line.** An entry that declares ``options`` (a grader's keyword options, a
scope or anchor strategy's settings: a tuple of names, or a dict of name → argparse type) gets them from the
repeatable ``--option KEY=VALUE`` of the command that picks it (``grade``, ``scope``, ``select-anchors``); the
parsing and the check (an undeclared key is one ``error:`` line naming it and the accepted ones, exit 2) are
:func:`benchmeasure.base.options.key_value` and :func:`benchmeasure.base.options.entry_options`.
"""

from __future__ import annotations

import importlib
import logging
import types
from collections.abc import Iterator

from benchmeasure.base.errors import fail

log = logging.getLogger(__name__)

# the entry-point group of each kind of extension (ARCHITECTURE.md, "Adding an extension")
GROUPS = {
    "grader": "benchmeasure.graders",
    "log format": "benchmeasure.log_formats",
    "strategy": "benchmeasure.strategies",
    "observation model": "benchmeasure.observation_models",
    "route": "benchmeasure.routes",
    # issue 53: the name tables that became registries (fit-suite routes have none: see the table above)
    "scope strategy": "benchmeasure.scope_strategies",
    "scope utility": "benchmeasure.scope_utilities",
    "anchor strategy": "benchmeasure.anchor_strategies",
    "browse mode": "benchmeasure.browse_modes",
}


def resolve(target):
    """``target`` itself, or the object a ``"module:object"`` string names (imported now)."""
    if not isinstance(target, str):
        return target
    module, _, name = target.partition(":")
    if not module or not name:
        raise ValueError(f"a lazy registry target is written 'module:object', got {target!r}")
    value = importlib.import_module(module)
    for part in name.split("."):
        value = getattr(value, part)
    return value


class Lazy:
    """A callable that imports its ``"module:object"`` target on first call (and then calls it)."""

    __slots__ = ("_value", "target")

    def __init__(self, target):
        self.target = target
        self._value = None if isinstance(target, str) else target

    def __call__(self, *args, **kwargs):
        if self._value is None:
            self._value = resolve(self.target)
        return self._value(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Lazy({self.target!r})"


def lazy(target):
    """``None`` stays ``None``; anything else becomes a :class:`Lazy` (a callable or a ``"module:object"``)."""
    if target is None or isinstance(target, Lazy):
        return target
    return Lazy(target)


class Registry:
    """Entries of one kind of extension, keyed by their ``name`` attribute."""

    def __init__(self, kind: str, group: str | None = None, *, entry=None, builtins: tuple = ()):
        self.kind = kind
        self.group = group
        self.entry_type = entry
        self.builtins = tuple(builtins)
        self._entries: dict = {}
        self._origin: dict = {}   # name -> the module whose decorator registered it
        self._outside_loaded = group is None and not self.builtins

    def add(self, name: str, **fields):
        """A decorator that registers ``entry(name=name, <DECORATES>=the decorated object, **fields)``.

        Returns the decorated object unchanged, so the function or class stays usable under its own name.
        """
        if self.entry_type is None:
            raise TypeError(f"the {self.kind} registry has no entry type: register entries with register()")
        target = self.entry_type.DECORATES

        def decorate(obj):
            if isinstance(target, str):
                values = {target: obj}
            else:
                values = {field: getattr(obj, field) for field in target if hasattr(obj, field)}
            self.register(self.entry_type(name=name, **values, **fields))
            self._origin[name] = getattr(obj, "__module__", None)
            return obj

        return decorate

    def _load_outside(self) -> None:
        """Import the built-in modules, then register the entries installed packages declare under
        :attr:`group` (once, on first read)."""
        if self._outside_loaded:
            return
        self._outside_loaded = True
        for module in self.builtins:
            importlib.import_module(module)
        # the built-ins in the order of `builtins`, whatever imported one of them first; then the rest as registered
        rank = {module: i for i, module in enumerate(self.builtins)}
        order = sorted(self._entries, key=lambda n: rank.get(self._origin.get(n), len(rank)))
        self._entries = {name: self._entries[name] for name in order}
        if self.group is None:
            return
        from importlib.metadata import entry_points

        for point in sorted(entry_points(group=self.group), key=lambda p: p.name):
            source = f"{point.name} = {point.value!r}" + (f" of {point.dist.name}" if point.dist else "")
            try:
                found = point.load()
                if isinstance(found, types.ModuleType):
                    continue   # a module: its decorators registered its entries when it was imported
                if callable(found) and not hasattr(found, "name"):
                    found = found()
                for entry in found if isinstance(found, (list, tuple)) else [found]:
                    if getattr(entry, "name", None) in self._entries:
                        log.warning("%s %r from %s is already registered; the extension's entry is skipped",
                                    self.kind, entry.name, source)
                        continue
                    self.register(entry)
            except Exception as exc:
                log.warning("the %s extension %s could not be loaded (%s: %s); skipped", self.kind, source,
                            type(exc).__name__, exc)

    def register(self, entry, *, replace: bool = False):
        """Add ``entry`` (it must have a non-empty string ``name``); returns it, so it can decorate."""
        name = getattr(entry, "name", None)
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} entry needs a non-empty string name, got {name!r}")
        if name in self._entries and not replace:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    def get(self, name: str, what: str | None = None):
        """The entry called ``name``; InputError naming the choices when there is none."""
        self._load_outside()
        if name not in self._entries:
            fail(f"unknown {what or self.kind} {name!r} (choose from {', '.join(self._entries)})")
        return self._entries[name]

    def __getitem__(self, name: str):
        self._load_outside()
        return self._entries[name]

    def __contains__(self, name) -> bool:
        self._load_outside()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._load_outside()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._load_outside()
        return len(self._entries)

    def names(self) -> tuple:
        self._load_outside()
        return tuple(self._entries)

    def entries(self) -> list:
        self._load_outside()
        return list(self._entries.values())
