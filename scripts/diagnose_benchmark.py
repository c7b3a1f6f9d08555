#!/usr/bin/env python3
"""Diagnose a benchmark's difficulty measure: DDM, Max Gap and the Top-k Gap Sum.

Thin wrapper of ``benchmeasure diagnose`` (``benchmeasure/commands/diagnose_benchmark.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("diagnose")
