#!/usr/bin/env python3
"""Summarize benchmarks in the layout of paper Table 1: DDM, Max Gap, Top-5 Sum, size, with marks.

Thin wrapper of ``benchmeasure summarize`` (``benchmeasure/commands/summarize_benchmarks.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("summarize")
