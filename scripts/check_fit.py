#!/usr/bin/env python3
"""Does the 1PL fit this benchmark? Item, model and whole-fit checks of a fit folder.

Thin wrapper of ``benchmeasure check-fit`` (``benchmeasure/commands/check_fit.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("check-fit")
