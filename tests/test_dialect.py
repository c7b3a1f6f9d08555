"""One dialect across every subcommand (issue 22): one flag name per idea, old names only as hidden aliases,
optional seeds, and help examples written as `benchmeasure …`.

Each command's parser is captured as its ``main`` builds it (``parse_args`` is intercepted before any input is
read), so the table below is checked against the options users actually see in ``--help``.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import re

import pytest

from benchmeasure.base.options import DIALECT
from benchmeasure.cli import COMMANDS
from conftest import ROOT

# idea → the one visible flag, and the spellings of the same idea that no command may show
IDEAS = {
    "one output file": (DIALECT["one output file"], {"--out", "--output-file", "--outfile", "--out-file", "-o"}),
    "an output folder": (DIALECT["an output folder"], {"--out-dir", "--outdir", "--output-folder", "--out-folder"}),
    "interval mass": (DIALECT["interval mass"], {"--probability", "--level", "--prob", "--ci", "--ci-prob",
                                                 "--credible", "--interval", "--mass", "--hdi"}),
    "trials per model-item pair": (DIALECT["trials per model-item pair"], {"--trials", "--n-trial", "--k-trials",
                                                                           "--repeats", "--num-trials"}),
    "random seed": (DIALECT["random seed"], {"--random-seed", "--rng-seed", "--rng"}),
}
# outputs with a purpose of their own beside the command's main output (each names what it writes)
SECOND_OUTPUTS = {"--responses-out", "--raw-output"}


class _Captured(Exception):
    pass


@functools.cache
def parsers_of(name: str) -> list[argparse.ArgumentParser]:
    """The parser (and sub-parsers) that ``benchmeasure NAME`` builds."""
    module = importlib.import_module(f"benchmeasure.commands.{COMMANDS[name].module}")
    found = []

    def capture(self, args=None, namespace=None):
        found.append(self)
        raise _Captured

    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = capture
    try:
        module.main([])
    except _Captured:
        pass
    finally:
        argparse.ArgumentParser.parse_args = original
    assert found, f"{name}: no parser built"
    out, queue = [], list(found)
    while queue:
        parser = queue.pop()
        out.append(parser)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                queue.extend(action.choices.values())
    return out


def visible_flags(parser) -> list[tuple[str, argparse.Action]]:
    return [(flag, action) for action in parser._actions if action.help != argparse.SUPPRESS
            for flag in action.option_strings]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_flags_follow_the_dialect(name):
    for parser in parsers_of(name):
        flags = visible_flags(parser)
        shown = {flag for flag, _ in flags}
        for idea, (one, others) in IDEAS.items():
            wrong = shown & others
            assert not wrong, f"benchmeasure {name}: {sorted(wrong)} for '{idea}'; the dialect says {one}"
        for flag, _ in flags:
            if re.search(r"(^--out(-|$)|output)", flag):
                assert flag in ("--output", "--output-dir") or flag in SECOND_OUTPUTS, (
                    f"benchmeasure {name}: output flag {flag}; use --output (a file) or --output-dir (a folder)")
        for flag, action in flags:
            if flag == "--seed":
                assert not action.required, f"benchmeasure {name}: --seed must be optional with a documented default"
                assert action.default is not None or "default" in (action.help or ""), (
                    f"benchmeasure {name}: --seed needs a default, or help saying what happens without one")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_hidden_aliases_point_to_a_visible_flag(name):
    for parser in parsers_of(name):
        visible = {action.dest for action in parser._actions if action.help != argparse.SUPPRESS}
        for action in parser._actions:
            if action.help == argparse.SUPPRESS and action.option_strings:
                assert action.dest in visible, f"benchmeasure {name}: hidden {action.option_strings} has no new name"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_examples_are_written_as_benchmeasure(name):
    for parser in parsers_of(name):
        epilog = parser.epilog or ""
        if not epilog:
            continue
        commands = [line.strip() for line in epilog.splitlines()
                    if re.match(r"\s+(\S+=\S+ )*(python|\.venv|benchmeasure|eval |[\w/]+\.py)", line)
                    and not re.match(r"\s+python3? -c ", line)]  # a one-line Python reading an output is no command
        for line in commands:
            assert "benchmeasure " in line and ".py " not in line.split("benchmeasure")[0], (
                f"benchmeasure {name}: example {line!r} should be written as 'benchmeasure …'")
            # a continuation written as a single backslash in a non-raw string joins two lines with a gap
            assert not re.search(r"\S {5,}--", line), f"benchmeasure {name}: example {line!r} lost its line break"


def test_docs_write_commands_as_benchmeasure_first():
    """README.md, SETUP.md and docs/*.md start no command line with a script (`python3 scripts/fit_irt.py …`):
    commands are written `benchmeasure …`, and a script is named beside one only (issue 22)."""
    script_first = re.compile(r"^\s*(?:\.venv-[a-z]+/bin/)?python3? (?:scripts|propose|verifier)/\S+\.py")
    pages = [ROOT / "README.md", ROOT / "SETUP.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [f"{page.name}:{n}: {line.strip()}" for page in pages
             for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
             if script_first.match(line)]
    assert not found, "write these as benchmeasure SUBCOMMAND (benchmeasure --help lists the pairs):\n" + \
        "\n".join(found)
