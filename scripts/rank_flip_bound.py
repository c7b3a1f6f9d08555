#!/usr/bin/env python3
"""Theorem 2.1: bound the distortion of a model comparison by L·W1 and say if a rank flip is possible.

Thin wrapper of ``benchmeasure rank-flip`` (``benchmeasure/commands/rank_flip_bound.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("rank-flip")
