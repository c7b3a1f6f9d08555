"""The real small-model run on CPU: build the model, serve it with vLLM, run every verifier step, stop.

Runs in ``.venv-benchfill`` (``bash scripts/setup_env.sh benchfill``); see
``docs/cpu_real_run.md`` and ``benchmeasure/serving/cpu_run.py``. Writes
``WORKDIR/report.json``, ``rows_direct.csv``, ``rows_lmms.csv``, the lmms-eval task, logs and
samples under ``WORKDIR/lmms/``, ``verifier/run_rollout.py``'s rows with each backend under
``WORKDIR/cli/``, and the server log ``WORKDIR/vllm.log``.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

from benchmeasure.base.errors import command_parser
from benchmeasure.base.options import N_TRIALS, PORT
from benchmeasure.base.resources import project_path

EXAMPLES = """\
example:
  benchmeasure cpu-real-run --workdir /tmp/cpu_run
  python3 -c "import json; r = json.load(open('/tmp/cpu_run/report.json')); print(r['timings_s'])"
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main(argv=None) -> int:
    parser = command_parser("cpu_real_run.py", __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("--workdir", type=Path, required=True, help="where the report, rows and logs go")
    parser.add_argument("--panel", default=str(project_path("verifier/panels/cpu_smollm.toml")))
    parser.add_argument("--model-dir", type=Path, help="converted model folder (default: the cache)")
    parser.add_argument("--port", type=PORT, help="server port (default: a free one)")
    parser.add_argument("--n-trials", type=N_TRIALS, default=3)
    args = parser.parse_args(argv)
    # imported after parsing, so --help and usage errors answer at once (these pull in the openai SDK)
    from benchmeasure.serving.cpu_model import prepare_model
    from benchmeasure.serving.cpu_run import run_chain
    from benchmeasure.serving.cpu_server import plan_server, running_server
    from benchmeasure.verifier.panel import load_panel

    start = time.monotonic()
    model_dir, built = prepare_model(args.model_dir)
    prepared = time.monotonic()
    print(f"model {'built' if built else 'cached'}: {model_dir} ({prepared - start:.0f} s)", file=sys.stderr)
    panel = load_panel(args.panel)
    plan = plan_server(panel, python=sys.executable, model_dir=str(model_dir), port=args.port or free_port())
    args.workdir.mkdir(parents=True, exist_ok=True)
    try:
        with running_server(plan, args.workdir / "vllm.log"):
            ready = time.monotonic()
            print(f"vLLM serving {', '.join(plan.names)} at {plan.url} ({ready - prepared:.0f} s)", file=sys.stderr)
            report = run_chain(panel, args.panel, plan.url, args.workdir, args.n_trials)
    except RuntimeError as exc:  # server failed to start, or lmms-eval failed
        print(f"error: {' '.join(str(exc).split())[:2000]}", file=sys.stderr)
        return 1
    report_timings = report["timings_s"]
    report_timings.update({"model_s": prepared - start, "server_start_s": ready - prepared,
                           "total_s": time.monotonic() - start})
    print(f"done: {len(report['rows_direct'])} direct rows, {len(report['rows_lmms'])} lmms-eval rows; "
          + ", ".join(f"{k} {v:.0f}" for k, v in report_timings.items()), file=sys.stderr)
    (args.workdir / "timings.json").write_text(__import__("json").dumps(report_timings, indent=2) + "\n")
    return 0

