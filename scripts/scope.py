#!/usr/bin/env python3
"""Search a dynamic benchmark for configurations a model reliably fails, with certified bounds.

Thin wrapper of ``benchmeasure scope`` (``benchmeasure/commands/scope.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("scope")
