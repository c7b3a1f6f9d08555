"""benchmeasure/serving/cpu_server.py and scripts/serve_cpu_panel.py (no server is started here)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from benchmeasure.base.errors import InputError
from benchmeasure.serving.cpu_server import ENTRY_MODULE, plan_server, stop, wait_ready
from benchmeasure.verifier.panel import load_panel, panel_from_dict
from conftest import ROOT, assert_rejected, run_script

PANEL_PATH = ROOT / "verifier" / "panels" / "cpu_smollm.toml"


def test_one_server_answers_to_every_panel_name():
    plan = plan_server(load_panel(PANEL_PATH), python="/venv/bin/python", model_dir="/m", port=8111, environ={})
    assert plan.argv[:3] == ["/venv/bin/python", "-m", ENTRY_MODULE]
    names = plan.argv[plan.argv.index("--served-model-name") + 1:plan.argv.index("--max-model-len")]
    assert names == ["smollm2-greedy", "smollm2-t07", "smollm2-t10", "smollm2-rewriter"] == list(plan.names)
    for flag, value in (("--model", "/m"), ("--host", "127.0.0.1"), ("--port", "8111"), ("--max-model-len", "2048"),
                        ("--dtype", "float32")):
        assert plan.argv[plan.argv.index(flag) + 1] == value
    assert "--enforce-eager" in plan.argv
    assert plan.url == "http://127.0.0.1:8111/v1"
    assert plan.env == {"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_OMP_THREADS_BIND": "0-1"}


def test_models_elsewhere_are_not_served_by_this_server():
    data = {"panel": {"name": "p"}, "model": [
        {"name": "local", "temperature": 0.0, "serve": {"path": "/m", "port": 8001}},
        {"name": "same", "temperature": 0.5, "base_url": "http://127.0.0.1:8001/v1"},
        {"name": "remote", "temperature": 0.5, "base_url": "http://127.0.0.1:9999/v1"}]}
    plan = plan_server(panel_from_dict(data), environ={})
    assert plan.names == ("local", "same")


def test_non_loopback_host_and_missing_serve_table_are_refused():
    public = {"panel": {}, "model": [{"name": "m", "temperature": 0.0, "serve": {"path": "/m", "host": "0.0.0.0"}}]}
    with pytest.raises(InputError, match="loopback only"):
        plan_server(panel_from_dict(public), environ={})
    bare = {"panel": {}, "model": [{"name": "m", "temperature": 0.0, "base_url": "http://127.0.0.1:1/v1"}]}
    with pytest.raises(InputError, match=r"no model has a \[model.serve\] table"):
        plan_server(panel_from_dict(bare), environ={})


def test_dry_run_prints_the_command(tmp_path):
    result = run_script("serve_cpu_panel.py", "--panel", PANEL_PATH, "--model-dir", tmp_path, "--port", 8123,
                        "--dry-run")
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert line.startswith("VLLM_CPU_KVCACHE_SPACE=2 VLLM_CPU_OMP_THREADS_BIND=0-1 ")
    assert f"-m {ENTRY_MODULE} --model {tmp_path} --host 127.0.0.1 --port 8123" in line


def test_missing_panel_is_rejected(tmp_path):
    result = run_script("serve_cpu_panel.py", "--panel", tmp_path / "none.toml", "--dry-run")
    assert_rejected(result, "none.toml: panel config not found")


def test_a_server_that_dies_is_reported_with_its_log(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("line one\nOSError: no model here\n")
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(RuntimeError, match=r"(?s)exited with status 3 before serving.*no model here"):
        wait_ready("http://127.0.0.1:9/v1", process, timeout=30, log_path=log)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_stop_ends_the_whole_process_group():
    # a parent that starts a child in its session, like vLLM's API server and its engine
    code = ("import subprocess, sys, time; child = subprocess.Popen(['sleep', '300']); "
            "print(child.pid, flush=True); time.sleep(300)")
    process = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True)
    child = int(process.stdout.readline())
    assert _alive(child)
    stop(process, grace=5)
    assert process.poll() is not None
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)
