#!/usr/bin/env python3
"""Fit the verifier panel's abilities once from a response matrix and cache them (for online calibration).

Thin wrapper of ``benchmeasure fit-ability`` (``benchmeasure/commands/fit_ability.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("fit-ability")
