#!/usr/bin/env python3
"""Growing Pains on a suite: benchmarks arrive in order, held-out models answer only anchors.

Thin wrapper of ``benchmeasure chain`` (``benchmeasure/commands/chain.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("chain")
