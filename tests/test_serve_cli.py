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


ANNOUNCING_SERVER = """
import http.server, sys, time
time.sleep(0.5)  # the URL appears only once the server is up, after a pause
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
print(f"noise before the announcement", flush=True)
print(f"listening on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
server.serve_forever()
"""


def test_wait_reads_the_url_a_server_announces_in_its_log(tmp_path):
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "models").write_text("{}")
    pid_file, log = tmp_path / "a.pid", tmp_path / "a.log"
    common = ["--name", "sim", "--pid-file", pid_file]
    started = run_script("serve.py", "start", *common, "--log", log, "--", sys.executable, "-c", ANNOUNCING_SERVER,
                         cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    try:
        waited = run_script("serve.py", "wait", *common, "--log", log, "--url-from-log", "listening on ",
                            "--timeout", "60")
        assert waited.returncode == 0, waited.stderr
        url = waited.stdout.strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1") and "ready at " + url in waited.stderr
    finally:
        assert run_script("serve.py", "stop", *common, "--grace", "10").returncode == 0


def test_url_from_log_needs_the_log_and_a_silent_server_times_out(tmp_path):
    pid_file, log = tmp_path / "q.pid", tmp_path / "q.log"
    common = ["--name", "quiet", "--pid-file", pid_file]
    started = run_script("serve.py", "start", *common, "--log", log, "--", sys.executable, "-c",
                         "import time; time.sleep(60)")
    assert started.returncode == 0, started.stderr
    try:
        never = run_script("serve.py", "wait", "--name", "ghost", "--pid-file", tmp_path / "none.pid", "--url",
                           "http://127.0.0.1:9/")
        assert never.returncode == 1 and never.stdout == ""
        assert never.stderr.strip() == f"error: ghost was not started (no {tmp_path / 'none.pid'}); start it with " \
            "'serve start' first"
        no_log = run_script("serve.py", "wait", *common, "--url-from-log", "listening on ")
        assert no_log.returncode == 2 and "--url-from-log needs --log" in no_log.stderr
        late = run_script("serve.py", "wait", *common, "--log", log, "--url-from-log", "listening on ",
                          "--timeout", "1")
        assert late.returncode == 1 and late.stdout == ""
        assert "quiet did not answer a 'listening on URL' line in" in late.stderr and "still running" in late.stderr
    finally:
        assert run_script("serve.py", "stop", *common, "--grace", "5").returncode == 0
