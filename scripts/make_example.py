#!/usr/bin/env python3
"""Regenerate the bundled SIMULATED example benchmark (data/example_simulated/).

Thin wrapper of ``benchmeasure make-example`` (``benchmeasure/commands/make_example.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("make-example")
