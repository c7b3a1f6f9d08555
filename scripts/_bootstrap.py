"""The one bootstrap of the thin wrappers in ``scripts/``, ``propose/`` and ``verifier/``.

A wrapper runs this file by path (``runpy.run_path``, so it works under ``python3 -I``) and calls
``run("<subcommand>")``: the checkout that holds this file is put first on ``sys.path``
(:func:`use_checkout`), then the wrapper's arguments go to ``benchmeasure <subcommand>`` with the
wrapper's own file name as the program name in usage and error lines. The benchmarks in ``bench/`` call
:func:`use_checkout` alone, to import the checkout's package.
"""

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def use_checkout() -> Path:
    """Put the checkout holding this file first on ``sys.path`` (once); return it."""
    if str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))
    return CHECKOUT


def run(command: str) -> None:
    if sys._getframe(1).f_globals.get("__name__") == "__mp_main__":
        # a child started with the "spawn" method (the math grader's SymPy worker) re-runs the
        # parent's main file, the wrapper, under this name before its own target: the command
        # must not run again there
        return
    use_checkout()
    from benchmeasure.base.interrupt import exit_on_interrupt

    exit_on_interrupt()  # Ctrl-C while the package imports: exit 130 at once, not a traceback
    from benchmeasure.cli import main

    sys.exit(main([command, *sys.argv[1:]], prog=Path(sys.argv[0]).name))
