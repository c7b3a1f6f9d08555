#!/usr/bin/env python3
"""Turn graded responses (one row per model, item and trial) into a model × item count matrix.

Thin wrapper of ``benchmeasure prepare`` (``benchmeasure/commands/prepare_response_matrix.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("prepare")
