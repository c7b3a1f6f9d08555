#!/usr/bin/env python3
"""Print a panel model's settings for the serving scripts (stdlib only; Python >= 3.11 for tomllib).

Thin wrapper of ``benchmeasure panel-settings`` (``benchmeasure/commands/panel_settings.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("panel-settings")
