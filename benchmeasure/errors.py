"""One way to report bad input: a single line on stderr and exit status 2.

Every command-line front end wraps its ``main`` with :func:`run_cli`. Code that
finds a problem in what the user gave raises :class:`InputError` with a message
that names what is wrong and where (file, line, model, item, ...); ``run_cli``
prints it as ``error: <message>`` and exits with status 2, without a traceback.
Standard library only.
"""

from __future__ import annotations

import sys
from typing import Callable, NoReturn

EXIT_BAD_INPUT = 2


class InputError(ValueError):
    """A problem with the user's input, reported as one line and exit status 2."""


def fail(message: str) -> NoReturn:
    """Raise :class:`InputError` with ``message``."""
    raise InputError(message)


def run_cli(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None) -> NoReturn:
    """Run ``main(argv)`` and exit: 0 on success, 2 with one stderr line on :class:`InputError`."""
    try:
        code = main(argv)
    except InputError as exc:
        message = " ".join(str(exc).split())  # exactly one line
        print(f"error: {message}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(code or 0)
