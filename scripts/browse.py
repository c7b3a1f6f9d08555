#!/usr/bin/env python3
"""Find the items that test a use case across benchmarks, and show whether they measure it (BenchBrowser).

Thin wrapper of ``benchmeasure browse`` (``benchmeasure/commands/browse.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("browse")
