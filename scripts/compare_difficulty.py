#!/usr/bin/env python3
"""Compare estimated difficulties with reference ones (e.g. the simulated example's truth).

Thin wrapper of ``benchmeasure compare`` (``benchmeasure/commands/compare_difficulty.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("compare")
