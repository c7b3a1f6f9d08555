"""Start, wait for and stop model servers recorded by PID file: the process handling of scripts/setup_server.sh.

Standard library only (any Python >= 3.9). Each action prints what the script printed before, with the
caller's ``--label`` (``[setup_server] NAME: stopped (pid N)``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from benchmeasure.errors import ArgumentParser
from benchmeasure.options import SECONDS, number
from benchmeasure.serving.process import (
    ServerExited,
    ServerTimeout,
    alive,
    start_detached,
    stop_group,
    tail,
    wait_until_serving,
)

EXAMPLES = """\
examples:
  benchmeasure serve start --name qwen --pid-file .run/servers/qwen.pid --log .run/servers/qwen.log -- vllm serve M
  benchmeasure serve wait --name qwen --pid-file .run/servers/qwen.pid --url http://127.0.0.1:8001/v1/models
  benchmeasure serve stop --name qwen --pid-file .run/servers/qwen.pid
"""


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="serve.py", description=__doc__.splitlines()[0], epilog=EXAMPLES,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="action", required=True)
    for action, text in (("start", "start a command in its own session, record its PID"),
                         ("wait", "wait until the server answers its URL"),
                         ("stop", "stop the server's process group (TERM, then KILL)")):
        sub = actions.add_parser(action, help=text)
        sub.add_argument("--name", required=True, help="the server's name in messages")
        sub.add_argument("--pid-file", required=True, type=Path)
        sub.add_argument("--label", default="serve", help="message prefix, as in [LABEL] (default serve)")
    actions.choices["start"].add_argument("--log", required=True, type=Path, help="stdout and stderr of the server")
    actions.choices["start"].add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    actions.choices["wait"].add_argument("--url", required=True, help="answers once the server is ready")
    actions.choices["wait"].add_argument("--log", type=Path, help="its last lines are shown if the server exits")
    actions.choices["wait"].add_argument("--timeout", type=SECONDS, default=1800.0, help="seconds (default 1800)")
    actions.choices["stop"].add_argument("--grace", type=number(0.0, 3600.0), default=60.0,
                                         help="seconds between TERM and KILL (default 60)")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)

    def say(text: str) -> None:
        print(f"[{args.label}] {args.name}: {text}", file=sys.stderr, flush=True)

    if args.action == "start":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            _parser().error("serve start: give the server's command after --")
        process = start_detached(command, args.log)
        args.pid_file.parent.mkdir(parents=True, exist_ok=True)
        args.pid_file.write_text(f"{process.pid}\n", encoding="utf-8")
        print(process.pid)
        return 0
    if not args.pid_file.is_file():
        say(f"not started by this script (no {args.pid_file})")
        return 0
    pid = int(args.pid_file.read_text(encoding="utf-8").split()[0])
    if args.action == "wait":
        try:
            wait_until_serving(args.url, lambda: not alive(pid), args.timeout, poll=2.0)
        except ServerExited:
            print(f"error: {args.name} exited during start-up; last log lines ({args.log}):", file=sys.stderr)
            print("\n".join(tail(args.log, 20)), file=sys.stderr)
            os.remove(args.pid_file)
            return 1
        except ServerTimeout:
            print(f"error: {args.name} did not answer {args.url} within {args.timeout:.0f} s (still running, pid "
                  f"{pid}; see {args.log})", file=sys.stderr)
            return 1
        say(f"ready at {args.url.removesuffix('/models')} (pid {pid})")
        return 0
    if alive(pid):
        stop_group(pid, args.grace, on_kill=lambda: say(f"still running after {args.grace:.0f} s, sending KILL"))
        say(f"stopped (pid {pid})")
    else:
        say("was not running")
    os.remove(args.pid_file)
    return 0
