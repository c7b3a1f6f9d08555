"""The package's layer contract (ARCHITECTURE.md), checked by parsing every import of ``benchmeasure``.

A module may import only from its own layer and the layers listed as below it in :data:`MAY_IMPORT`,
whether the import sits at the top of the file or inside a function. A new import that crosses a layer the
wrong way, a ``sys.path`` edit, a ``Path(__file__)`` walk up the tree, or a script run as a subprocess fails
here, and so in CI (``.ci/run`` runs the whole test suite).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "benchmeasure"

# The layers are the package's folders: benchmeasure/<layer>/ holds the layer's modules. Only the command
# line (cli, __main__) and the package root (__init__: the version) sit at the top.
TOP_MODULES = {"__init__": "root", "cli": "cli", "__main__": "cli"}

# layer → the layers it may import (besides itself and the package root). Graders sit low because
# ingestion grades logged responses (harness logs → matrix) as well as the verifier; the IRT layer needs
# no grader.
MAY_IMPORT: dict[str, set[str]] = {
    "root": set(),
    "base": set(),
    "grading": {"base"},
    "core": {"base", "grading"},
    "irt": {"base", "core"},
    "analyses": {"base", "core", "irt"},
    "browse": {"base", "core", "irt", "analyses"},
    "suite": {"base", "core", "irt", "analyses"},
    "verifier": {"base", "core", "grading"},
    "benchfill": {"base", "core", "grading", "irt", "analyses", "verifier"},
    "scope": {"base", "core", "grading", "irt", "analyses", "verifier"},  # beside benchfill
    "explorer": {"base", "core", "grading", "irt", "analyses", "browse", "verifier", "benchfill"},  # reads run folders
    "serving": {"base", "core", "grading", "irt", "analyses", "verifier", "benchfill", "scope"},
    "commands": {"base", "core", "grading", "irt", "analyses", "browse", "suite", "verifier", "benchfill", "scope",
                 "explorer",
                 "serving"},
    "cli": {"base"},  # the command table imports its commands by name only (importlib), so --help is instant
}

# Child processes of the package's own subcommands (base.subcommand.subcommand_argv): (layer, subcommand).
# Each is a run-time dependency on the commands layer; ARCHITECTURE.md ("Child processes") says why.
CHILD_COMMANDS = {("benchfill", "fit"), ("serving", "rollout")}

# files inside the package that are data for another program, not modules of ours
NOT_MODULES = {PACKAGE / "verifier" / "lmms_task" / "benchfill_lmms_utils.py"}


def layer_folders() -> set[str]:
    """The package's layer folders: every top-level folder that is a Python package."""
    return {p.parent.name for p in PACKAGE.glob("*/__init__.py")}


def package_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p not in NOT_MODULES and "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1]) if parts[-1] == "__init__" and len(parts) > 1 else ".".join(parts)


def layer_of(name: str) -> str:
    """The layer of ``name`` (dotted, without the ``benchmeasure.`` prefix): its top folder."""
    top = name.split(".")[0]
    if top in TOP_MODULES and "." not in name:
        return TOP_MODULES[top]
    if top in layer_folders():
        return top
    raise AssertionError(f"benchmeasure.{name} belongs to no layer: put it in one of the layer folders "
                         f"{sorted(layer_folders())} (ARCHITECTURE.md)")


def imports_of(path: Path, here: str | None = None) -> list[tuple[int, str]]:
    """(line, dotted name under benchmeasure) for each import of the package in ``path`` (module ``here``)."""
    here = here or module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "benchmeasure"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["benchmeasure", *package.split(".")] if package and package != "__init__" else ["benchmeasure"]
                base = base[:len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "benchmeasure":
                continue
            if target == "benchmeasure" or not node.module or node.level:
                # "from benchmeasure import x" / "from . import x": x may be a module
                found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, target))
    return [(line, name.removeprefix("benchmeasure").lstrip(".") or "__init__") for line, name in found]


def _resolve(name: str) -> str:
    """``name`` cut back to a module or package that exists (``matrix.read_matrix`` → ``matrix``)."""
    parts = name.split(".")
    while parts:
        candidate = PACKAGE.joinpath(*parts)
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return "__init__"


def test_every_module_is_in_a_layer():
    for path in package_files():
        layer_of(module_name(path))


def test_the_layer_folders_are_the_layers_of_architecture_md():
    """Every folder is a layer with a rule in MAY_IMPORT and a row in ARCHITECTURE.md's table, and back."""
    folders = layer_folders()
    assert folders == set(MAY_IMPORT) - {"root", "cli"}, (folders ^ (set(MAY_IMPORT) - {"root", "cli"}))
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            may = {m.strip(" `") for m in cells[2].split(",")} - {"—", ""}
            rows[cells[0].strip("`/")] = may
    assert set(rows) == folders | {"cli"}, set(rows) ^ (folders | {"cli"})
    for layer, may in rows.items():
        assert may == MAY_IMPORT[layer], (layer, may, MAY_IMPORT[layer])


def test_no_import_crosses_a_layer_the_wrong_way():
    wrong = []
    for path in package_files():
        here = layer_of(module_name(path))
        for line, name in imports_of(path):
            there = layer_of(_resolve(name))
            if there not in (here, "root") and there not in MAY_IMPORT[here]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {here} imports benchmeasure.{name} ({there})")
    assert not wrong, "imports against the layer order (ARCHITECTURE.md):\n" + "\n".join(wrong)


def child_commands(path: Path) -> list[tuple[int, str | None]]:
    """(line, subcommand) of each ``subcommand_argv(...)`` call in ``path`` (None: not a literal name)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "subcommand_argv":
            first = node.args[0] if node.args else None
            found.append((node.lineno, first.value if isinstance(first, ast.Constant) else None))
    return found


def test_child_processes_of_our_own_commands_are_declared():
    """A subcommand run as a child is an upward dependency: it goes through base.subcommand, by literal
    name, and is one of CHILD_COMMANDS; no module builds ``-m benchmeasure`` by hand."""
    seen, wrong = set(), []
    for path in package_files():
        name = module_name(path)
        if name == "base.subcommand":
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"['\"]-m['\"],\s*['\"]benchmeasure['\"]", text):
            wrong.append(f"{path.relative_to(ROOT)}: builds '-m benchmeasure' by hand: use subcommand_argv")
        for line, command in child_commands(path):
            pair = (layer_of(name), command)
            seen.add(pair)
            if pair not in CHILD_COMMANDS:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: runs subcommand {command!r} as a child "
                             "(not in CHILD_COMMANDS / ARCHITECTURE.md)")
    assert not wrong, "\n".join(wrong)
    assert seen == CHILD_COMMANDS  # a declared child that no longer exists is dropped from the list
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for layer, command in CHILD_COMMANDS:
        assert f"`{layer}` runs `benchmeasure {command}`" in text, (layer, command)


def test_commands_do_not_import_each_other():
    """What two commands share is library code, in a library module."""
    wrong = [f"{path.relative_to(ROOT)}:{line}: imports benchmeasure.{name}"
             for path in package_files() if module_name(path).startswith("commands.")
             for line, name in imports_of(path) if _resolve(name).startswith("commands.")]
    assert not wrong, "\n".join(wrong)


SCRIPT_PATH = re.compile(r"(scripts|propose|verifier)/[\w/.-]+\.py")
TREE_FOLDERS = {"scripts", "propose", "verifier"}


def rule_breaks(path: Path) -> list[str]:
    """Lines of ``path`` that edit sys.path, use ``__file__``, or name a script of the checkout to run."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    runs_children = "subprocess" in {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                                     for a in node.names}
    joined = {id(side) for node in ast.walk(tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
              for side in (node.left, node.right)}
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
                and node.value.id == "sys"):
            found.append((node.lineno, "sys.path is not edited in the package"))
        elif isinstance(node, ast.Name) and node.id == "__file__":
            found.append((node.lineno, "no walk up the tree from __file__: use benchmeasure.base.resources"))
        elif (runs_children and isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docstrings
              and (SCRIPT_PATH.fullmatch(node.value) or (node.value in TREE_FOLDERS and id(node) in joined))):
            found.append((node.lineno, "no script of the checkout is run: use python -m benchmeasure SUBCOMMAND"))
    return [f"{path.relative_to(ROOT)}:{line}: {why}" for line, why in sorted(found)]


def test_no_sys_path_edits_tree_walks_or_script_subprocesses():
    """No ``sys.path`` edit, no ``parents[N]`` lookup, no script run as a child, anywhere in the package."""
    found = [line for path in package_files() for line in rule_breaks(path)]
    assert not found, "\n".join(found)


def test_entry_points_edit_sys_path_only_through_the_bootstrap():
    """Wrappers and benchmarks reach the package through scripts/_bootstrap.py, the one sys.path edit."""
    files = [p for folder in ("scripts", "propose", "verifier", "bench") for p in (ROOT / folder).rglob("*.py")
             if p != ROOT / "scripts" / "_bootstrap.py" and not p.resolve().is_relative_to(PACKAGE)]
    assert len(files) > 30
    found = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in files
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
             and node.value.id == "sys"]
    assert not found, "sys.path edited outside scripts/_bootstrap.py:\n" + "\n".join(found)


def test_the_contract_catches_what_it_forbids(tmp_path):
    """The checkers themselves: an analyses module importing the verifier, a parents[2] lookup, a script run."""
    bad = PACKAGE / "analyses" / "compare.py"
    source = bad.read_text(encoding="utf-8") + (
        "\nfrom benchmeasure.verifier.base import Candidate  # noqa\n"
        "ROOT = Path(__file__).resolve().parents[2]\n"
        "import subprocess\nsubprocess.run(['python3', 'scripts/fit_irt.py'])\n")
    (tmp_path / "analyses").mkdir()
    copy = tmp_path / "analyses" / "compare.py"
    copy.write_text(source, encoding="utf-8")
    names = [name for _, name in imports_of(copy, here="analyses.compare")]
    assert "verifier.base" in names
    assert layer_of(_resolve("verifier.base")) not in MAY_IMPORT[layer_of("analyses.compare")]
    original = PACKAGE
    try:
        globals()["PACKAGE"] = tmp_path  # rule_breaks names lines relative to ROOT
        globals()["ROOT"] = tmp_path
        found = rule_breaks(copy)
    finally:
        globals()["PACKAGE"] = original
        globals()["ROOT"] = original.parent
    assert any("__file__" in line for line in found) and any("python -m benchmeasure" in line for line in found)


# ---------------------------------------------------------------------------------------------
# no import circle and no long module anywhere in the package (issue 53); a circle across layers is already a
# layer break (above), so each layer is checked on its own

ACYCLIC_LAYERS = tuple(sorted(layer_folders()))
MAX_LINES = 500


def module_edges(path: Path) -> set[str]:
    """The package's modules that ``path`` imports, at its top or inside a function: ``from a.b import c`` counts
    as an import of the module a.b.c when there is one, else of a.b (a package means its ``__init__``)."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    modules = {module_name(p) for p in package_files()}
    edges = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.split(".")[0] == "benchmeasure"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(["benchmeasure", *parts, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "benchmeasure":
                continue
            names = [f"{target}.{a.name}" for a in node.names]
            names = [name if name.removeprefix("benchmeasure.") in modules else target for name in names]
        else:
            continue
        edges.update(_resolve(name.removeprefix("benchmeasure").lstrip(".")) for name in names)
    edges.discard(here)
    return edges


def import_circles(layer: str) -> list[list[str]]:
    """The import circles among ``layer``'s modules (strongly connected groups of two or more), each sorted."""
    graph = {module_name(p): {m for m in module_edges(p) if m.split(".")[0] == layer}
             for p in package_files() if module_name(p).split(".")[0] == layer}
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


@pytest.mark.parametrize("layer", ACYCLIC_LAYERS)
def test_no_import_circle(layer):
    """Following imports (function-level ones too) from any module of the layer never leads back to it."""
    circles = import_circles(layer)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


@pytest.mark.parametrize("layer", ACYCLIC_LAYERS)
def test_no_module_over_max_lines(layer):
    """A module longer than MAX_LINES is split into parts (as irt/routes/gibbs/ is)."""
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in package_files() if module_name(p).split(".")[0] == layer
            for n in [len(p.read_text(encoding="utf-8").splitlines())] if n > MAX_LINES]
    assert not long, f"modules over {MAX_LINES} lines:\n" + "\n".join(long)


def test_the_circle_check_finds_a_circle(tmp_path, monkeypatch):
    """The checker itself: two modules importing each other, one of them inside a function, are a circle."""
    (tmp_path / "irt").mkdir()
    (tmp_path / "irt" / "__init__.py").write_text("")
    (tmp_path / "irt" / "a.py").write_text("from benchmeasure.irt.b import f\n")
    (tmp_path / "irt" / "b.py").write_text("def f():\n    from benchmeasure.irt import a\n")
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path)
    assert import_circles("irt") == [["irt.a", "irt.b"]]
