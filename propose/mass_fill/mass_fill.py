#!/usr/bin/env python3
"""Mass fill: fill a benchmark's difficulty gaps one after another with BenchFill until a target Max Gap or a budget.

Thin wrapper of ``benchmeasure mass-fill`` (``benchmeasure/commands/mass_fill.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[2] / "scripts" / "_bootstrap.py"))["run"]("mass-fill")
