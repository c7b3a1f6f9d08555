#!/usr/bin/env python3
"""The real small-model run on CPU: build the model, serve it with vLLM, run every verifier step, stop.

Thin wrapper of ``benchmeasure cpu-real-run`` (``benchmeasure/commands/cpu_real_run.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("cpu-real-run")
