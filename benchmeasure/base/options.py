"""Numeric command-line options, parsed once, the same way in every command. Standard library only.

``argparse``'s own ``type=int`` / ``type=float`` accept ``nan``, ``inf``, ``-1`` and 10**20-sized
integers, which later turn into a wrong number or a traceback. Every numeric option of every command
uses a type built here instead, so a value outside its range is one ``error:`` line naming the option
(through :class:`benchmeasure.base.errors.ArgumentParser`) before any input is read::

    parser.add_argument("--n-trials", type=N_TRIALS, required=True)
    parser.add_argument("--threshold", type=number(0.0, 1.0), default=0.5)

Ranges are inclusive unless ``open_low``/``open_high`` say otherwise. Integers are plain decimal digits
(no ``1e3``, no ``10**20``, no underscores); numbers are decimal or scientific notation and finite.
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Callable

_INTEGER = re.compile(r"[+-]?[0-9]{1,30}")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")


def _bounds(low, high, open_low: bool = False, open_high: bool = False) -> str:
    left = "(" if open_low else "["
    right = ")" if open_high else "]"
    return f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"


def integer(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a decimal integer in [low, high]."""

    def parse(text: str) -> int:
        stripped = text.strip()
        if not _INTEGER.fullmatch(stripped):
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number (plain digits, e.g. 8)")
        value = int(stripped)
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value if len(stripped) < 40 else stripped[:20] + '…'} is outside "
                                             f"the allowed range {_bounds(low, high)}")
        return value

    parse.__name__ = "integer"
    return parse


def number(low: float | None = None, high: float | None = None, *, open_low: bool = False,
           open_high: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite decimal number in the range (NaN and infinities are refused)."""

    def parse(text: str) -> float:
        stripped = text.strip()
        if not _NUMBER.fullmatch(stripped):
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a finite number")
        value = float(stripped)
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a finite number")
        if ((low is not None and (value < low or (open_low and value == low)))
                or (high is not None and (value > high or (open_high and value == high)))):
            raise argparse.ArgumentTypeError(f"{value:g} is outside the allowed range "
                                             f"{_bounds(low, high, open_low, open_high)}")
        return value

    parse.__name__ = "number"
    return parse


#: Trials per model–item pair (the binomial size K): at least 1; more than a million is not a benchmark.
N_TRIALS = integer(1, 1_000_000)
#: A random seed: what NumPy's and the samplers' generators accept everywhere.
SEED = integer(0, 2**32 - 1)
#: A count of top gaps to sum (Table 1's top-5).
TOP_K = integer(1, 1_000_000)
#: A probability strictly between 0 and 1 (interval mass, significance level, target acceptance).
OPEN_PROBABILITY = number(0.0, 1.0, open_low=True, open_high=True)
#: Seconds to wait for something: positive and at most a day.
SECONDS = number(0.0, 86_400.0, open_low=True)
#: A guessing floor g in [0, 1).
GUESSING = number(0.0, 1.0, open_high=True)
#: A TCP port.
PORT = integer(1, 65_535)
#: NUTS chains: R-hat compares chains, so at least 2 (the paper runs 4).
CHAINS = integer(2, 256)
#: Warm-up iterations per chain.
TUNE = integer(0, 10_000_000)
#: Posterior draws per chain: R-hat and ESS need a few; at most ten million.
DRAWS = integer(4, 10_000_000)


# ------------------------------------------------------------------------------------------
# one flag name per idea (docs/dialect.md); the old names stay for a release as hidden aliases

#: The dialect: the one flag name of each idea that several commands share.
DIALECT = {
    "one output file": "--output",
    "an output folder": "--output-dir",
    "interval mass": "--hdi-prob",
    "trials per model-item pair": "--n-trials",
    "random seed": "--seed",
}


class _DeprecatedAlias(argparse.Action):
    """An old flag name: stores into the new option's destination and warns once that the name is going."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        import logging

        logging.getLogger("benchmeasure").warning("%s is deprecated and will be removed in a later release; use %s",
                                                  option_string, self.new)
        setattr(namespace, self.dest, values)
        setattr(namespace, f"_alias_{self.dest}", True)


def add_alias(container, old: str, new_action: argparse.Action) -> None:
    """Accept ``old`` as a hidden, deprecated spelling of ``new_action`` (returned by ``add_argument``).

    The alias takes the same type, choices and metavar, does not appear in ``--help``, and warns when used.
    A required new option stays satisfied through the alias: declare it ``required=False`` and call
    :func:`require` after parsing.
    """
    container.add_argument(old, dest=new_action.dest, type=new_action.type, choices=new_action.choices,
                           metavar=new_action.metavar, nargs=new_action.nargs, default=argparse.SUPPRESS,
                           help=argparse.SUPPRESS, action=_DeprecatedAlias, new=new_action.option_strings[0])


def require(parser: argparse.ArgumentParser, args: argparse.Namespace, flag: str) -> None:
    """The usage error argparse gives for a missing required option, for one that also has an alias."""
    if getattr(args, flag.lstrip("-").replace("-", "_"), None) is None:
        parser.error(f"the following arguments are required: {flag}")


# ------------------------------------------------------------------------------------------
# an extension's own options: --option KEY=VALUE, checked against the options its registry entry declares


def key_value(text: str) -> tuple[str, object]:
    """An argparse type: ``KEY=VALUE`` → ``(KEY, value)``; the value is a JSON scalar (``3``, ``0.5``, ``true``,
    ``null``, ``"x"``) when it parses as one, else the text as written (``--option mode=strict``)."""
    import json

    key, equals, raw = text.partition("=")
    key = key.strip()
    if not equals or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not KEY=VALUE (e.g. tolerance=0.01)")
    try:
        value = json.loads(raw)
    except ValueError:
        return key, raw
    if isinstance(value, float) and not math.isfinite(value):   # json reads NaN and Infinity
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: {raw} is not a finite number")
    return key, value if value is None or isinstance(value, (bool, int, float, str)) else raw


def add_entry_options(parser, what: str) -> None:
    """Add the repeatable ``--option KEY=VALUE`` that sets an option declared by the chosen ``what`` (a registry
    entry: a grader, a strategy…); read it back with :func:`entry_options`."""
    parser.add_argument("--option", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                        help=f"an option of the {what} (repeatable; VALUE a JSON number, true/false, null or text); "
                             f"the {what}'s declared options only")


def entry_options(pairs, accepted, owner: str) -> dict:
    """``{key: value}`` of ``--option`` pairs; InputError (one line, exit 2) for a key that ``owner`` (e.g.
    ``"the math grader"``) does not declare in ``accepted``, or for one given twice.

    ``accepted`` is the entry's ``options``: a tuple of names, or a dict mapping each name to an argparse type
    (:func:`integer`, :func:`number`…) that checks and converts its value (None: taken as given).
    """
    import json

    from benchmeasure.base.errors import fail

    checks = dict(accepted) if isinstance(accepted, dict) else dict.fromkeys(accepted)
    options: dict = {}
    for key, value in pairs or ():
        if key not in checks:
            fail(f"--option {key}: not an option of {owner} (accepted: {', '.join(checks) or 'none'})")
        if key in options:
            fail(f"--option {key}: given twice")
        if checks[key] is not None:   # a declared type: an argparse type of this module, e.g. integer(1, 100)
            try:
                value = checks[key](json.dumps(value) if not isinstance(value, str) else value)
            except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
                fail(f"--option {key}: {exc}")
        options[key] = value
    return options
# options several commands share: one flag, type and action each; the help says what this command does with it

def add_hdi_prob(parser, help: str, default: float | None = 0.94, metavar: str | None = "P") -> argparse.Action:
    """``--hdi-prob P``: the mass of the command's intervals, in (0, 1); returns the action (for :func:`add_alias`)."""
    return parser.add_argument("--hdi-prob", type=OPEN_PROBABILITY, default=default, metavar=metavar, help=help)


def add_allow_missing(parser, help: str) -> None:
    """``--allow-missing``: accept absent cells and K per cell (docs/suites.md)."""
    parser.add_argument("--allow-missing", action="store_true", help=help)


def add_quiet(parser, help: str = "no progress lines") -> None:
    """``--quiet``: print less (``help`` says what is left out)."""
    parser.add_argument("--quiet", action="store_true", help=help)
