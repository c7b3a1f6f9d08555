"""Start, wait for and stop model servers recorded by PID file: the process handling of scripts/setup_server.sh.

Standard library only (any Python >= 3.9). Each action prints what the script printed before, with the
caller's ``--label`` (``[setup_server] NAME: stopped (pid N)``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from benchmeasure.base.errors import ArgumentParser, command_parser
from benchmeasure.base.lifetime import alive
from benchmeasure.base.options import SECONDS, integer, number
from benchmeasure.serving.process import (
    ServerExited,
    ServerTimeout,
    start_detached,
    stop_group,
    tail,
    wait_for_announcement,
    wait_until_serving,
)

EXAMPLES = """\
examples:
  benchmeasure serve start --name qwen --pid-file .run/servers/qwen.pid --log .run/servers/qwen.log -- vllm serve M
  benchmeasure serve wait --name qwen --pid-file .run/servers/qwen.pid --url http://127.0.0.1:8001/v1/models
  benchmeasure serve stop --name qwen --pid-file .run/servers/qwen.pid

A server that picks its own port and prints it (the simulated panel prints "listening on URL"):
  benchmeasure serve wait --name sim --pid-file sim.pid --log sim.log --url-from-log "listening on "
prints the announced URL on stdout once it answers URL/models.
"""


def _parser() -> ArgumentParser:
    parser = command_parser("serve.py", __doc__.splitlines()[0], EXAMPLES)
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
    where = actions.choices["wait"].add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="answers once the server is ready")
    where.add_argument("--url-from-log", metavar="PREFIX",
                       help="read the base URL from the first log line 'PREFIX URL', then wait for URL/models "
                            "to answer and print URL on stdout (needs --log)")
    actions.choices["wait"].add_argument("--log", type=Path, help="its last lines are shown if the server exits")
    actions.choices["wait"].add_argument("--log-lines", type=integer(0, 10_000), default=20,
                                         help="log lines shown below the error when the server exits (default 20)")
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
        if args.action == "wait":  # nothing to wait for: the caller must not go on as if it answered
            print(f"error: {args.name} was not started (no {args.pid_file}); start it with 'serve start' first",
                  file=sys.stderr)
            return 1
        say(f"not started by this script (no {args.pid_file})")
        return 0
    pid = int(args.pid_file.read_text(encoding="utf-8").split()[0])
    if args.action == "wait":
        return _wait(args, pid, say)
    if alive(pid):
        stop_group(pid, args.grace, on_kill=lambda: say(f"still running after {args.grace:.0f} s, sending KILL"))
        say(f"stopped (pid {pid})")
    else:
        say("was not running")
    os.remove(args.pid_file)
    return 0


def _wait(args, pid: int, say) -> int:
    """``serve wait``: 0 once the server answers; 1, with its log's last line, if it exits or times out."""
    if args.url_from_log is not None and args.log is None:
        _parser().error("serve wait: --url-from-log needs --log (the file the server announces its URL in)")
    start = time.monotonic()
    url = args.url
    try:
        if url is None:
            base = wait_for_announcement(args.log, args.url_from_log, lambda: not alive(pid), args.timeout)
            url = base.rstrip("/") + "/models"
        wait_until_serving(url, lambda: not alive(pid), max(args.timeout - (time.monotonic() - start), 0.0),
                           poll=0.2 if args.url is None else 2.0)
    except ServerExited:
        last = tail(args.log, max(args.log_lines, 1))
        print(f"error: {args.name} exited during start-up: {last[-1] if last else '(empty log)'} (log: {args.log})",
              file=sys.stderr)
        if args.log_lines:
            print("\n".join(last), file=sys.stderr)
        os.remove(args.pid_file)
        return 1
    except ServerTimeout:
        what = url or f"a '{args.url_from_log}URL' line in {args.log}"
        print(f"error: {args.name} did not answer {what} within {args.timeout:.0f} s (still running, pid {pid}; "
              f"see {args.log})", file=sys.stderr)
        return 1
    if args.url is None:
        print(base)
    say(f"ready at {url.removesuffix('/models')} (pid {pid})")
    return 0
