#!/usr/bin/env python3
"""Start, wait for and stop model servers recorded by PID file (the process handling of setup_server.sh).

Thin wrapper of ``benchmeasure serve`` (``benchmeasure/commands/serve.py``).
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "_bootstrap.py"))["run"]("serve")
