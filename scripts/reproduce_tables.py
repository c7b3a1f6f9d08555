#!/usr/bin/env python3
"""Print each of the paper's tables beside what the local data reproduces, with the differences.

Thin wrapper of ``benchmeasure reproduce`` (``benchmeasure/commands/reproduce_tables.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("reproduce")
