#!/usr/bin/env python3
"""Grade one response by hand with the pipeline's own graders; prints 1 or 0 on its last line.

Thin wrapper of ``benchmeasure grade`` (``benchmeasure/commands/grade.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("grade")
