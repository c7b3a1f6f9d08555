#!/usr/bin/env python3
"""Test whether a model improved between two runs on a benchmark (paper Table 12).

Thin wrapper of ``benchmeasure detect`` (``benchmeasure/commands/detect_improvement.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("detect")
