"""Question generators: ``module:function(config, seed) -> (question, answer[, grader])``.

The module is imported from the current folder or ``PYTHONPATH``. ``answer`` is the reference
answer, graded by the project's math grader (:func:`benchmeasure.grading.grade`) unless the generator
returns a third item, ``grader(response) -> bool`` (its own scorer; reasoning-gym tasks bring theirs).
Built in: ``benchmeasure.scope.arithmetic:arithmetic`` and ``benchmeasure.scope.rg:<task>``.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.grading import grade

SPEC = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*)")


def _import(name: str):
    """Import ``name`` from ``PYTHONPATH``, else from a file in the current folder (``a.b`` → ``a/b.py``)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or name.split(".")[0] != exc.name.split(".")[0]:
            raise
        base = Path.cwd().joinpath(*name.split("."))
        path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if not path.is_file():
            raise
        loader_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        try:
            loader_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module


def load_generator(spec: str):
    """The callable named by ``module:function``; InputError when it cannot be imported or is not callable."""
    match = SPEC.fullmatch(spec or "")
    if not match:
        fail(f"--generator {spec!r}: expected module:function (e.g. benchmeasure.scope.arithmetic:arithmetic)")
    module_name, function = match.groups()
    try:
        module = _import(module_name)
    except ImportError as exc:
        fail(f"--generator {spec!r}: cannot import {module_name} ({exc})")
    except Exception as exc:  # the user's module raised while importing
        fail(f"--generator {spec!r}: importing {module_name} raised {type(exc).__name__}: {exc}")
    try:
        target = getattr(module, function)
    except AttributeError as exc:
        detail = str(exc)  # a module __getattr__ may say why (reasoning-gym: the task names)
        extra = f" ({detail})" if detail and detail != function and "has no attribute" not in detail else ""
        fail(f"--generator {spec!r}: {module_name} has no {function}{extra}")
    except Exception as exc:  # a module __getattr__ refusing the name (an unknown reasoning-gym task)
        fail(f"--generator {spec!r}: {exc}")
    if not callable(target):
        fail(f"--generator {spec!r}: {function} is not callable")
    return target


def generate(function, spec: str, config: dict, seed: int):
    """``(question, grader)`` for one instance; InputError naming the configuration when the generator fails."""
    try:
        produced = function(dict(config), seed)
    except Exception as exc:
        text = " ".join(str(exc).split())[:200]
        fail(f"generator {spec} raised {type(exc).__name__}: {text} (configuration {config}, seed {seed})")
    if not isinstance(produced, tuple) or len(produced) not in (2, 3) or not isinstance(produced[0], str):
        fail(f"generator {spec} must return (question, answer[, grader]) with a text question; got "
             f"{type(produced).__name__} for configuration {config}")
    question, answer = produced[0], produced[1]
    if len(produced) == 3:
        scorer = produced[2]
        if not callable(scorer):
            fail(f"generator {spec}: its third item (the grader) is not callable")
        return question, scorer
    return question, (lambda response: grade("math", response, str(answer)))
