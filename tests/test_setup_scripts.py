"""scripts/setup_server.sh, scripts/setup_diff_minimax.sh and scripts/panel_settings.py through their command lines."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "scripts" / "setup_server.sh"
MINIMAX = ROOT / "scripts" / "setup_diff_minimax.sh"
SETTINGS = ROOT / "scripts" / "panel_settings.py"
PAPER = ROOT / "verifier" / "panels" / "paper.toml"


def run(script, *args, env=None, timeout=60):
    full = {k: v for k, v in os.environ.items() if k not in ("REWRITER_BASE_URL", "PANEL_CONFIG")}
    full.update({"PYTHON": sys.executable, **(env or {})})
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env=full, timeout=timeout)


def test_dry_run_two_models_side_by_side(tmp_path):
    result = run(
        SERVER,
        "--config",
        str(PAPER),
        "--model",
        "QwQ-32B",
        "--model",
        "Olmo-3.1-32B-Think",
        "--dry-run",
        env={"SERVER_RUN_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "env CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/QwQ-32B --served-model-name QwQ-32B --host 127.0.0.1 "
        "--port 8105 --tensor-parallel-size 2 --max-model-len 40960 --reasoning-parser deepseek_r1",
        f"# log: {tmp_path}/QwQ-32B.log; ready when http://127.0.0.1:8105/v1/models answers",
        "env CUDA_VISIBLE_DEVICES=2,3 vllm serve allenai/Olmo-3.1-32B-Think --served-model-name Olmo-3.1-32B-Think "
        "--host 127.0.0.1 --port 8106 --tensor-parallel-size 2 --max-model-len 40960",
        f"# log: {tmp_path}/Olmo-3.1-32B-Think.log; ready when http://127.0.0.1:8106/v1/models answers",
    ]


def test_dry_run_quotes_env_extra_args_and_vllm_cmd(tmp_path):
    config = tmp_path / "p.toml"
    config.write_text(
        textwrap.dedent("""
        [[model]]
        name = "tiny model"
        temperature = 0.0
        [model.serve]
        path = "/models/tiny lm"
        port = 8200
        host = "0.0.0.0"
        extra_args = ["--dtype", "bfloat16", "--chat-template", "{{ it's }}"]
        env = { VLLM_CPU_KVCACHE_SPACE = 2 }
    """)
    )
    result = run(
        SERVER,
        "--config",
        str(config),
        "--all",
        "--dry-run",
        env={"SERVER_RUN_DIR": str(tmp_path), "VLLM_CMD": "python -m vllm.entrypoints.openai.api_server"},
    )
    assert result.returncode == 0, result.stderr
    line = result.stdout.splitlines()[0]
    assert line == (
        "env VLLM_CPU_KVCACHE_SPACE=2 python -m vllm.entrypoints.openai.api_server --model '/models/tiny lm' "
        "--served-model-name 'tiny model' --host 0.0.0.0 --port 8200 --tensor-parallel-size 1 "
        "--dtype bfloat16 --chat-template '{{ it'\\''s }}'"
    )
    assert "ready when http://127.0.0.1:8200/v1/models" in result.stdout
    assert str(tmp_path / "tiny_model.log") in result.stdout


def test_rewriter_dry_runs(tmp_path):
    local = run(MINIMAX, "--config", str(PAPER), "--dry-run", env={"SERVER_RUN_DIR": str(tmp_path)})
    assert local.returncode == 0, local.stderr
    assert local.stdout.splitlines()[0] == (
        "env CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 vllm serve MiniMaxAI/MiniMax-M2.7 --served-model-name MiniMax-M2.7 "
        "--host 127.0.0.1 --port 8100 --tensor-parallel-size 8 --max-model-len 65536 --trust-remote-code"
    )
    api = run(
        MINIMAX,
        "--config",
        str(PAPER),
        "--dry-run",
        env={"REWRITER_BASE_URL": "https://api.example.org/v1/", "REWRITER_API_KEY": "secret-key"},
    )
    assert api.returncode == 0, api.stderr
    assert api.stdout.splitlines() == [
        'curl -sf --max-time 30 -H "Authorization: Bearer $REWRITER_API_KEY" https://api.example.org/v1/models',
        "# expect model 'MiniMax-M2.7' in the answer",
    ]
    assert "secret-key" not in api.stdout


@pytest.mark.parametrize("script", [SERVER, MINIMAX])
def test_help(script):
    result = run(script, "--help")
    assert result.returncode == 0 and "--dry-run" in result.stdout
    # exactly the header comment, nothing of the script's code after it
    header = []
    for line in script.read_text().splitlines()[1:]:
        if not line.startswith("#"):
            break
        header.append(line[2:] if line.startswith("# ") else line[1:])
    assert result.stdout.splitlines() == header
    code = ("set -", "ROOT=", "CONFIG=", "PYTHON=", "die()", "while ", "case ")
    assert not [line for line in result.stdout.splitlines() if line.strip().startswith(code)]


def test_setup_md_dry_run_lists_every_model_and_warns_about_shared_gpus(tmp_path):
    """The check SETUP.md documents, run exactly as written there (paper.toml is the default config)."""
    documented = "bash scripts/setup_server.sh --all --dry-run"
    assert f"`{documented}`" in (ROOT / "SETUP.md").read_text()
    env = {k: v for k, v in os.environ.items() if k not in ("REWRITER_BASE_URL", "PANEL_CONFIG")}
    env.update({"PYTHON": sys.executable, "SERVER_RUN_DIR": str(tmp_path)})
    result = subprocess.run(documented.split(), cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    names = [
        "Qwen3.5-397B-A17B",
        "GLM-4.6",
        "GLM-4.5-Air",
        "Qwen3-Next-80B-A3B-Instruct",
        "QwQ-32B",
        "Olmo-3.1-32B-Think",
    ]
    commands = [line for line in result.stdout.splitlines() if not line.startswith("# log: ")]
    assert len(commands) == len(names)
    for name, line in zip(names, commands):
        assert line.startswith("env CUDA_VISIBLE_DEVICES=") and f" --served-model-name {name} " in line
    warnings = result.stderr.splitlines()
    assert all(line.startswith("warning: ") for line in warnings)
    assert "warning: Qwen3.5-397B-A17B and GLM-4.6 share GPUs 0,1,2,3,4,5,6,7: a real start refuses" in result.stderr
    assert "warning: GLM-4.5-Air and QwQ-32B share GPUs 0,1:" in result.stderr
    # QwQ-32B (0,1) and Olmo-3.1-32B-Think (2,3) can run side by side, as can GLM-4.5-Air and Qwen3-Next
    assert not [w for w in warnings if "QwQ-32B and Olmo" in w or "GLM-4.5-Air and Qwen3-Next" in w]
    assert len(warnings) == 11
    assert not list(tmp_path.iterdir())


def test_real_start_refuses_shared_gpus_before_starting_anything(tmp_path):
    # not a dry run: the overlap is refused before any server is started (VLLM_CMD would fail anyway)
    result = run(
        SERVER,
        "--config",
        str(PAPER),
        "--model",
        "QwQ-32B",
        "--model",
        "GLM-4.5-Air",
        env={"SERVER_RUN_DIR": str(tmp_path), "VLLM_CMD": "false"},
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["error: GLM-4.5-Air and QwQ-32B both use GPU 0; start them one at a time"]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        (SERVER, ["--wave", "9", "--dry-run"], "has 4 wave(s)"),
        (SERVER, ["--wave", "2", "--model", "QwQ-32B"], "--wave applies to the whole panel"),
        (SERVER, ["--model", "nope", "--dry-run"], "no model named 'nope'"),
        (SERVER, ["--config", "/nonexistent.toml", "--all"], "panel config not found"),
        (SERVER, ["--model"], "--model needs a name"),
        (SERVER, ["--timeout", "soon", "--all"], "whole number"),
        (SERVER, ["--frobnicate"], "unknown argument"),
        (MINIMAX, ["--api"], "--api needs $REWRITER_BASE_URL"),
        (MINIMAX, ["--bogus"], "unknown argument"),
    ],
)
def test_rejected(script, args, message, tmp_path):
    result = run(script, *args, env={"SERVER_RUN_DIR": str(tmp_path)})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert not list(tmp_path.glob("*.pid"))


def test_panel_settings_cli():
    result = subprocess.run(
        [sys.executable, str(SETTINGS), str(PAPER), "--model", "GLM-4.6"], capture_output=True, text=True
    )
    assert result.returncode == 0
    assert "TP=8" in result.stdout.splitlines() and "SERVE_PATH=zai-org/GLM-4.6-FP8" in result.stdout.splitlines()
    listing = subprocess.run([sys.executable, str(SETTINGS), str(PAPER), "--list"], capture_output=True, text=True)
    assert len(listing.stdout.splitlines()) == 6
    bad = subprocess.run([sys.executable, str(SETTINGS), str(PAPER), "--model", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


FAKE_VLLM = """
import http.server, json, sys
args = sys.argv[1:]
assert args[0] == "serve"
name = args[args.index("--served-model-name") + 1]
port = int(args[args.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": name}]}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_start_wait_status_stop_with_a_stand_in_server(tmp_path):
    fake = tmp_path / "fake_vllm.py"
    fake.write_text(FAKE_VLLM)
    port = free_port()
    config = tmp_path / "p.toml"
    config.write_text(f'[[model]]\nname = "m"\ntemperature = 0.0\n[model.serve]\npath = "/x"\nport = {port}\n')
    env = {"SERVER_RUN_DIR": str(tmp_path / "run"), "VLLM_CMD": f"{sys.executable} {fake}"}
    started = run(SERVER, "--config", str(config), "--model", "m", "--timeout", "30", env=env)
    try:
        assert started.returncode == 0, started.stderr
        assert "ready at" in started.stderr
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as reply:
            assert json.load(reply)["data"][0]["id"] == "m"
        status = run(SERVER, "--config", str(config), "--status", env=env)
        assert status.stdout.startswith("m running (pid ")
    finally:
        stopped = run(SERVER, "--config", str(config), "--stop", env=env)
    assert stopped.returncode == 0 and "stopped" in stopped.stderr
    assert not (tmp_path / "run" / "m.pid").exists()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)


@pytest.mark.slow
def test_server_that_dies_is_reported(tmp_path):
    config = tmp_path / "p.toml"
    config.write_text('[[model]]\nname = "m"\ntemperature = 0.0\n[model.serve]\npath = "/x"\nport = 8299\n')
    env = {"SERVER_RUN_DIR": str(tmp_path / "run"), "VLLM_CMD": "false"}
    result = run(SERVER, "--config", str(config), "--all", "--timeout", "30", env=env)
    assert result.returncode == 1 and "exited during start-up" in result.stderr
    assert not (tmp_path / "run" / "m.pid").exists()


def test_no_selection_dry_run_prints_the_whole_panel_in_waves(tmp_path):
    """The paper's README runs ``bash scripts/setup_server.sh`` bare: the whole panel, in GPU-disjoint waves."""
    result = run(SERVER, "--dry-run", env={"SERVER_RUN_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    waves = [line for line in out if line.startswith("# wave ")]
    assert [w.split(" (")[0] for w in waves] == ["# wave 1 of 4", "# wave 2 of 4", "# wave 3 of 4", "# wave 4 of 4"]
    commands = [line for line in out if line.startswith("env ")]
    served = ["Qwen3.5-397B-A17B", "GLM-4.6", "GLM-4.5-Air", "Qwen3-Next-80B-A3B-Instruct", "QwQ-32B",
              "Olmo-3.1-32B-Think"]
    assert [c.split("--served-model-name ")[1].split()[0] for c in commands] == served
    assert "warning:" not in result.stderr  # no wave shares a GPU
    assert "wave 3: GLM-4.5-Air (GPUs 0,1,2,3), Qwen3-Next-80B-A3B-Instruct (GPUs 4,5,6,7)" in result.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_no_selection_starts_the_first_wave_and_says_what_is_next(tmp_path):
    fake = tmp_path / "fake_vllm.py"
    fake.write_text(FAKE_VLLM)
    ports = [free_port() for _ in range(3)]
    config = tmp_path / "p.toml"
    config.write_text("".join(
        f'[[model]]\nname = "m{k}"\ntemperature = 0.0\n[model.serve]\npath = "/x"\nport = {port}\n'
        f"gpu_ids = {gpus}\ntensor_parallel_size = {len(gpus)}\n"
        for k, (port, gpus) in enumerate(zip(ports, ([0, 1], [0], [1])))))
    env = {"SERVER_RUN_DIR": str(tmp_path / "run"), "VLLM_CMD": f"{sys.executable} {fake}"}
    started = run(SERVER, "--config", str(config), "--timeout", "30", env=env)
    try:
        assert started.returncode == 0, started.stderr
        assert "starting wave 1 of 2" in started.stderr and "--wave 2" in started.stderr
        assert sorted(p.name for p in (tmp_path / "run").glob("*.pid")) == ["m0.pid"]
    finally:
        stopped = run(SERVER, "--config", str(config), "--stop", env=env)
    assert stopped.returncode == 0
    second = run(SERVER, "--config", str(config), "--wave", "2", "--timeout", "30", env=env)
    try:
        assert second.returncode == 0, second.stderr
        assert sorted(p.name for p in (tmp_path / "run").glob("*.pid")) == ["m1.pid", "m2.pid"]
    finally:
        run(SERVER, "--config", str(config), "--stop", env=env)
