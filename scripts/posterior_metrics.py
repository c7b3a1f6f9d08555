#!/usr/bin/env python3
"""Posterior 94% intervals of DDM, Max Gap and the Top-k Gap Sum from a fit's saved difficulty draws.

Thin wrapper of ``benchmeasure posterior-metrics`` (``benchmeasure/commands/posterior_metrics.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("posterior-metrics")
