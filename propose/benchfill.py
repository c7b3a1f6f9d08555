#!/usr/bin/env python3
"""BenchFill runs: create a run folder, start or resume it, report its progress (paper, Section 4).

Thin wrapper of ``benchmeasure benchfill`` (``benchmeasure/commands/benchfill.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("benchfill")
