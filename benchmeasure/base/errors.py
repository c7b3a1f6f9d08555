"""One way to report bad input: a single line on stderr and exit status 2.

Every command-line front end wraps its ``main`` with :func:`run_cli`. Code that
finds a problem in what the user gave raises :class:`InputError` with a message
that names what is wrong and where (file, line, model, item, ...); ``run_cli``
prints it as ``error: <message>`` and exits with status 2, without a traceback.
Command lines build their parsers with :class:`ArgumentParser`, so a bad flag is
reported the same way. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import os
import sys
from collections.abc import Iterator
from typing import Callable, NoReturn

EXIT_BAD_INPUT = 2
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


class InputError(ValueError):
    """A problem with the user's input, reported as one line and exit status 2."""


def fail(message: str) -> NoReturn:
    """Raise :class:`InputError` with ``message``."""
    raise InputError(message)


@contextlib.contextmanager
def file_errors(path: str | os.PathLike) -> Iterator[None]:
    """Report a text-decoding or CSV-syntax error raised while reading ``path`` as an :class:`InputError`."""
    try:
        yield
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start:exc.start + 1].hex()
        fail(f"{os.fspath(path)}: not UTF-8 text (byte 0x{byte}: {exc.reason}); save it as UTF-8")
    except csv.Error as exc:
        fail(f"{os.fspath(path)}: malformed CSV ({exc})")


_program_name: list[str] = []


def name_next_parser(prog: str) -> None:
    """Give the next :class:`ArgumentParser` built the program name ``prog`` (the command line's dispatcher
    uses it so that ``benchmeasure fit`` and ``scripts/fit_irt.py`` each name themselves in usage lines)."""
    _program_name[:] = [prog]


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors are one ``error:`` line and exit 2 (via :func:`run_cli`)."""

    def __init__(self, *args, **kwargs) -> None:
        if _program_name:
            kwargs["prog"] = _program_name.pop()
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        fail(f"{self.prog}: {message}{self._did_you_mean(message)} (see --help)")

    def _did_you_mean(self, message: str) -> str:
        """``; did you mean 'X'?`` for a mistyped choice (``--from inspct``) or option (``--n-trails``)."""
        import difflib
        import re

        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if choice:
            given, names = choice.group(1), re.findall(r"'([^']*)'", choice.group(2)) or choice.group(2).split(", ")
        else:
            unknown = re.search(r"unrecognized arguments: (\S+)", message)
            if not unknown or not unknown.group(1).startswith("--"):
                return ""
            given = unknown.group(1).split("=")[0]
            names = [flag for flag in self._option_string_actions if flag.startswith("--")]
        close = difflib.get_close_matches(given, names, n=1, cutoff=0.6)
        return f"; did you mean {close[0]!r}?" if close else ""


def command_parser(prog: str | None, description: str | None, epilog: str | None, **kwargs) -> ArgumentParser:
    """A command's :class:`ArgumentParser`: its description, and its examples (``epilog``) printed as written."""
    return ArgumentParser(prog=prog, description=description, epilog=epilog,
                          formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def run_cli(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None) -> NoReturn:
    """Run ``main(argv)`` and exit: 0 on success, 2 with one stderr line on :class:`InputError`, 130 on Ctrl-C."""
    from benchmeasure.base import interrupt

    try:
        interrupt.command_started()
        try:
            code = main(argv)
        finally:
            interrupt.command_ended()  # a Ctrl-C while the outcome is reported ends the process at once
    except InputError as exc:
        message = " ".join(str(exc).split())  # exactly one line
        print(f"error: {message}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        interrupt.exit_interrupted()
    except BrokenPipeError:
        # The reader of stdout went away (e.g. `| head`): the work may be unfinished, so do not report
        # success; exit as a process killed by SIGPIPE would, and keep Python quiet at shutdown.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(128 + 13)
    except OSError as exc:
        if exc.errno not in _DISK_ERRORS:
            raise
        # a full disk, a quota, a read-only file system: the outputs were written atomically, so none is partial
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}cannot write ({exc.strerror or exc}); nothing was written", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    sys.exit(code or 0)
