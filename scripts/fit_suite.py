#!/usr/bin/env python3
"""Fit a suite (holes allowed) on one scale: per-benchmark difficulties, metrics and abilities.

Thin wrapper of ``benchmeasure fit-suite`` (``benchmeasure/commands/fit_suite.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("fit-suite")
