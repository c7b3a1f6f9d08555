#!/usr/bin/env python3
"""Plot benchmark difficulty ECDFs with the largest gaps shaded (paper Figures 3, 5 and 6).

Thin wrapper of ``benchmeasure plot`` (``benchmeasure/commands/plot_difficulty.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("plot")
