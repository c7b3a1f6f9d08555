#!/usr/bin/env python3
"""Roll out candidate items on every panel model and write graded response rows.

Thin wrapper of ``benchmeasure rollout`` (``benchmeasure/commands/run_rollout.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("rollout")
