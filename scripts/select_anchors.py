#!/usr/bin/env python3
"""Choose k anchor items (stratified, information or random; seeded) from a difficulty file.

Thin wrapper of ``benchmeasure select-anchors`` (``benchmeasure/commands/select_anchors.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("select-anchors")
