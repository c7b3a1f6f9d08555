#!/usr/bin/env python3
"""Drift and contamination by item date (or any item covariate), difficulty-adjusted, with calibrated alarms.

Thin wrapper of ``benchmeasure drift`` (``benchmeasure/commands/drift.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("drift")
