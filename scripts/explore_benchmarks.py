#!/usr/bin/env python3
"""Write the benchmark explorer: one self-contained HTML page of benchmarks' difficulty measures.

Thin wrapper of ``benchmeasure explore`` (``benchmeasure/commands/explore_benchmarks.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("explore")
