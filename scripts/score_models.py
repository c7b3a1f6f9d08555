#!/usr/bin/env python3
"""Score new models against fixed item difficulties: abilities and predicted full-benchmark accuracy.

Thin wrapper of ``benchmeasure score`` (``benchmeasure/commands/score_models.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("score")
