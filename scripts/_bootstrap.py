"""The one bootstrap of the thin wrappers in ``scripts/``, ``propose/`` and ``verifier/``.

A wrapper runs this file by path (``runpy.run_path``, so it works under ``python3 -I``) and calls
``run("<subcommand>")``. When the package is not installed, the checkout that holds this file is put
first on ``sys.path``; then the wrapper's arguments go to ``benchmeasure <subcommand>`` with the
wrapper's own file name as the program name in usage and error lines.
"""

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def run(command: str) -> None:
    if sys._getframe(1).f_globals.get("__name__") == "__mp_main__":
        # a child started with the "spawn" method (the math grader's SymPy worker) re-runs the
        # parent's main file, the wrapper, under this name before its own target: the command
        # must not run again there
        return
    if str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))
    from benchmeasure.cli import main

    sys.exit(main([command, *sys.argv[1:]], prog=Path(sys.argv[0]).name))
