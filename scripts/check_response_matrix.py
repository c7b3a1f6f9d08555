#!/usr/bin/env python3
"""Check a response matrix before fitting IRT (paper Table 5): information and inversion rates.

Thin wrapper of ``benchmeasure check`` (``benchmeasure/commands/check_response_matrix.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("check")
