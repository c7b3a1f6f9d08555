#!/usr/bin/env python3
"""Fit the Bayesian 1PL IRT model (paper, Appendix C.3) to a count matrix.

Thin wrapper of ``benchmeasure fit`` (``benchmeasure/commands/fit_irt.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("fit")
