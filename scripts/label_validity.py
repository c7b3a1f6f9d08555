#!/usr/bin/env python3
"""Check fitted difficulties against difficulty labels people assigned (and abilities against accuracy).

Thin wrapper of ``benchmeasure label-validity`` (``benchmeasure/commands/label_validity.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("label-validity")
