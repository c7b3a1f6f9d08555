#!/usr/bin/env python3
"""IRT robustness analyses of a response matrix (paper Tables 6-10): diagnostics, leave-one-out, BIC, MIRT.

Thin wrapper of ``benchmeasure robustness`` (``benchmeasure/commands/irt_robustness.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("robustness")
