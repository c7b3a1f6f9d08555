#!/usr/bin/env python3
"""Serve a CPU panel (one checkpoint under every panel model's name) with a real vLLM server on loopback.

Thin wrapper of ``benchmeasure serve-cpu-panel`` (``benchmeasure/commands/serve_cpu_panel.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("serve-cpu-panel")
