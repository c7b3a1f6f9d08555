"""benchmeasure serve start|wait|stop (scripts/serve.py) with a real HTTP server on loopback."""

from __future__ import annotations

import socket
import sys

from conftest import run_script


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_start_wait_stop_a_real_server(tmp_path):
    port = _free_port()
    pid_file, log = tmp_path / "run" / "web.pid", tmp_path / "run" / "web.log"
    common = ["--name", "web", "--pid-file", pid_file, "--label", "t"]
    started = run_script("serve.py", "start", *common, "--log", log, "--", sys.executable, "-m", "http.server",
                         "--bind", "127.0.0.1", str(port), cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    pid = int(pid_file.read_text())
    assert started.stdout.strip() == str(pid)
    try:
        ready = run_script("serve.py", "wait", *common, "--log", log, "--url", f"http://127.0.0.1:{port}/",
                           "--timeout", "60")
        assert ready.returncode == 0, ready.stderr
        assert ready.stderr.strip() == f"[t] web: ready at http://127.0.0.1:{port}/ (pid {pid})"
    finally:
        stopped = run_script("serve.py", "stop", *common, "--grace", "10")
    assert stopped.returncode == 0 and stopped.stderr.strip() == f"[t] web: stopped (pid {pid})", stopped.stderr
    assert not pid_file.exists()
    again = run_script("serve.py", "stop", *common)
    assert again.returncode == 0 and "not started by this script" in again.stderr


def test_a_server_that_exits_is_reported_with_its_log(tmp_path):
    pid_file, log = tmp_path / "x.pid", tmp_path / "x.log"
    common = ["--name", "x", "--pid-file", pid_file]
    started = run_script("serve.py", "start", *common, "--log", log, "--", sys.executable, "-c",
                         "import sys; print('bad model path'); sys.exit(3)")
    assert started.returncode == 0, started.stderr
    port = _free_port()
    waited = run_script("serve.py", "wait", *common, "--log", log, "--url", f"http://127.0.0.1:{port}/models",
                        "--timeout", "60")
    assert waited.returncode == 1
    assert "x exited during start-up" in waited.stderr and "bad model path" in waited.stderr
    assert not pid_file.exists()
