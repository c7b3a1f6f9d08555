"""Serve a CPU panel (one checkpoint under every panel model's name) with a real vLLM server on loopback.

Runs in ``.venv-benchfill``. Starts vLLM through its module entry point (see
``benchmeasure/serving/cpu_server.py`` for why not the ``vllm`` CLI), waits until
``/v1/models`` answers, prints the base URL, and keeps serving until interrupted
(Ctrl-C or SIGTERM), then stops the server and its engine processes.
"""

from __future__ import annotations

import shlex
import signal
import sys
import threading
from pathlib import Path

from benchmeasure.base.errors import command_parser
from benchmeasure.base.options import PORT, SECONDS
from benchmeasure.serving.cpu_server import plan_server, running_server
from benchmeasure.verifier.panel import load_panel

EXAMPLES = """\
examples:
  benchmeasure serve-cpu-panel --panel verifier/panels/cpu_smollm.toml --dry-run
  MODEL_DIR=$(benchmeasure prepare-cpu-model)
  benchmeasure serve-cpu-panel --panel verifier/panels/cpu_smollm.toml \\
      --model-dir "$MODEL_DIR" --port 8190
  export CPU_PANEL_URL=http://127.0.0.1:8190/v1     # what the panel's models then call
"""


def parse_args(argv):
    parser = command_parser("serve_cpu_panel.py",
                            "Start a real vLLM server on CPU for a panel whose models share one checkpoint.", EXAMPLES)
    parser.add_argument("--panel", required=True, help="panel TOML (e.g. verifier/panels/cpu_smollm.toml)")
    parser.add_argument("--model-dir",
                        help="model folder (default: $BENCHMEASURE_SMOLLM2_DIR, else the panel's serve.path)")
    parser.add_argument("--port", type=PORT, help="port (default: the panel's serve.port)")
    parser.add_argument("--log", type=Path, default=Path("vllm-cpu.log"), help="server log (default: vllm-cpu.log)")
    parser.add_argument("--timeout", type=SECONDS, default=300.0, help="seconds to wait for readiness (default: 300)")
    parser.add_argument("--ready-file", type=Path, help="write the base URL to this file once the server answers")
    parser.add_argument("--dry-run", action="store_true", help="print the environment and command, start nothing")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    plan = plan_server(load_panel(args.panel), python=sys.executable, model_dir=args.model_dir, port=args.port)
    if args.dry_run:
        print(" ".join([*(f"{k}={shlex.quote(v)}" for k, v in plan.env.items()), *map(shlex.quote, plan.argv)]))
        return 0
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        with running_server(plan, args.log, timeout=args.timeout):
            print(plan.url, flush=True)
            print(f"serving {', '.join(plan.names)} at {plan.url} (log: {args.log}); Ctrl-C stops",
                  file=sys.stderr, flush=True)
            if args.ready_file:
                args.ready_file.write_text(plan.url + "\n", encoding="utf-8")
            stop.wait()
    except RuntimeError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    return 0

