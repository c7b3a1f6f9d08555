#!/usr/bin/env python3
"""Calibrate new items against fixed model abilities: each item's difficulty on the existing scale.

Thin wrapper of ``benchmeasure calibrate`` (``benchmeasure/commands/calibrate_items.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("calibrate")
