"""benchmeasure/verifier/lmms_backend.py: task files, command line, log checks and rows.

The conversion tests use a real lmms-eval sample log (tests/fixtures/harness_logs, written by
lmms-eval 0.7.3 against vLLM on CPU) and edited copies of it. The last test runs the real
lmms-eval (``.venv-benchfill``) against a closed loopback port: it exits 0 with every request
failed, and the backend must refuse the log.
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import json
import shutil
import socket
import subprocess
import threading
from pathlib import Path
from typing import ClassVar

import pytest

from benchmeasure.grading import grade
from benchmeasure.verifier.base import Candidate
from benchmeasure.verifier.lmms_backend import (
    TASK,
    LmmsEvalError,
    item_documents,
    lmms_command,
    lmms_environment,
    rollouts_from_samples,
    run_lmms,
    task_yaml,
    write_task,
)
from benchmeasure.verifier.panel import load_panel
from benchmeasure.verifier.rollouts import DirectRollouts
from conftest import ROOT, assert_rejected, run_script

PANEL = load_panel(ROOT / "verifier" / "panels" / "cpu_smollm.toml")
FIX = ROOT / "tests" / "fixtures" / "harness_logs"
BENCHFILL_PYTHON = ROOT / ".venv-benchfill" / "bin" / "python"


def fixture_candidates() -> list:
    lines = (FIX / "tasks" / "tiny_arith.jsonl").read_text().splitlines()
    return [Candidate(f"q{k}", json.loads(line)["question"], json.loads(line)["answer"], "math_arith")
            for k, line in enumerate(lines)]


def fixture_samples(model="smollm2-t07") -> Path:
    return next((FIX / "lmms-eval" / model).glob("*_samples_*.jsonl"))


def test_documents_carry_the_direct_backends_exact_prompt():
    candidates = fixture_candidates()
    direct = DirectRollouts(None, PANEL.models, 3, "math")
    docs = item_documents(candidates, "math")
    assert [d["prompt"] for d in docs] == [direct.messages(c.question)[0]["content"] for c in candidates]
    assert [d["answer"] for d in docs] == [c.answer for c in candidates]


def test_task_keeps_every_repeat_and_the_models_sampling(tmp_path):
    model = PANEL.model("smollm2-t07")
    text = task_yaml(tmp_path / "items.jsonl", model, 5)
    lines = dict(line.split(": ", 1) for line in text.splitlines())
    assert lines["repeats"] == "5"
    assert json.loads(lines["filter_list"]) == [{"name": "all", "filter": [{"function": "take_first_k", "k": 5}]}]
    generation = json.loads(lines["generation_kwargs"])
    assert generation["temperature"] == 0.7 and generation["top_p"] == 0.9
    assert generation["max_new_tokens"] == model.max_tokens
    assert json.loads(lines["dataset_kwargs"]) == {"data_files": {"test": str(tmp_path / "items.jsonl")}}
    assert lines["doc_to_text"] == "!function benchfill_lmms_utils.doc_to_text"
    greedy = json.loads(dict(line.split(": ", 1) for line in task_yaml(
        tmp_path / "i.jsonl", PANEL.model("smollm2-greedy"), 1).splitlines())["generation_kwargs"])
    assert greedy["temperature"] == 0 and "top_p" not in greedy and greedy["do_sample"] is False


def test_write_task_lays_out_the_include_folder(tmp_path):
    docs = item_documents(fixture_candidates(), "math")
    tasks = write_task(tmp_path, docs, PANEL.models[0], 3)
    assert sorted(p.name for p in tasks.iterdir()) == ["benchfill_items.yaml", "benchfill_lmms_utils.py"]
    written = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert written == docs


def test_command_line():
    argv = lmms_command("lmms-eval", Path("/w/tasks"), "m", "http://127.0.0.1:9/v1", Path("/w/out"), num_concurrent=1)
    assert argv[:3] == ["lmms-eval", "--model", "openai"]
    assert "model=m,base_url=http://127.0.0.1:9/v1,num_concurrent=1" in argv[4]
    assert not [a for a in argv if "api_key" in a]  # the key goes through the environment (lmms_environment)
    for flag, value in (("--tasks", TASK), ("--include_path", "/w/tasks"), ("--output_path", "/w/out"),
                        ("--timezone", "UTC")):
        assert argv[argv.index(flag) + 1] == value
    assert "--log_samples" in argv


def test_the_models_api_key_goes_to_the_environment_not_the_command_line(tmp_path):
    model = dataclasses.replace(PANEL.models[0], api_key_env="BENCHFILL_TEST_KEY")
    env = lmms_environment(model, tmp_path, {"BENCHFILL_TEST_KEY": "sk-test-123", "OPENAI_API_BASE": "http://x/v1",
                                             "PATH": "/bin"})
    assert env["OPENAI_API_KEY"] == "sk-test-123" and "OPENAI_API_BASE" not in env and env["PATH"] == "/bin"
    assert env["HF_DATASETS_CACHE"] == str(tmp_path / "hf_datasets")
    assert lmms_environment(model, tmp_path, {})["OPENAI_API_KEY"] == "EMPTY"
    # an OPENAI_API_KEY of the caller's shell does not replace the panel model's key
    assert lmms_environment(model, tmp_path, {"OPENAI_API_KEY": "other"})["OPENAI_API_KEY"] == "EMPTY"


def test_rows_are_graded_per_response_from_a_real_log():
    candidates = fixture_candidates()
    per_candidate = rollouts_from_samples(fixture_samples(), candidates, "smollm2-t07", "math", 3)
    records = [json.loads(line) for line in fixture_samples().read_text().splitlines()]
    by_doc = {r["doc_id"]: r for r in records}
    assert len(per_candidate) == len(candidates)
    for k, (candidate, rollouts) in enumerate(zip(candidates, per_candidate)):
        assert [r.trial for r in rollouts] == [0, 1, 2]
        assert [r.response for r in rollouts] == by_doc[k]["filtered_resps"]
        texts = by_doc[k]["filtered_resps"]
        assert [r.correct for r in rollouts] == [int(grade("math", t, candidate.answer)) for t in texts]
        assert {r.model for r in rollouts} == {"smollm2-t07"}


def _edited(tmp_path, change) -> Path:
    path = tmp_path / fixture_samples().name
    records = [json.loads(line) for line in fixture_samples().read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in change(records)))
    return path


def _fail_all(records):
    for r in records:
        r["filtered_resps"] = ["[LMMS_EVAL_REQUEST_FAILED after 2 retries] Connection error."] * 3
    return records


@pytest.mark.parametrize("change, message", [
    (_fail_all, "4 of 4 documents have failed requests"),
    (lambda rs: rs[:-1], "no sample for doc_id 3"),
    (lambda rs: [*rs[:-1], {**rs[-1], "doc_id": 9}], "doc_id 9 is not one of the 4 items"),
    (lambda rs: [{**r, "filtered_resps": r["filtered_resps"][:1]} for r in rs], "has 1 responses, expected 3"),
])
def test_bad_logs_raise(tmp_path, change, message):
    with pytest.raises(LmmsEvalError, match=message):
        rollouts_from_samples(_edited(tmp_path, change), fixture_candidates(), "m", "math", 3)


def test_exit_status_and_missing_log_are_errors(tmp_path):
    candidates = fixture_candidates()[:1]
    model = PANEL.models[0]
    with pytest.raises(LmmsEvalError, match="exited with 1"):
        run_lmms(candidates, model, "math", 2, tmp_path / "a", base_url="http://127.0.0.1:9/v1",
                 executable=shutil.which("false"))
    with pytest.raises(LmmsEvalError, match=r"exited 0 but wrote no samples_benchfill_items\.jsonl"):
        run_lmms(candidates, model, "math", 2, tmp_path / "b", base_url="http://127.0.0.1:9/v1",
                 executable=shutil.which("true"))


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends: nothing listens there


@pytest.mark.realmodel
@pytest.mark.slow
@pytest.mark.skipif(not BENCHFILL_PYTHON.exists(),
                    reason=".venv-benchfill is absent (bash scripts/setup_env.sh benchfill creates it)")
def test_real_lmms_eval_exits_0_on_failed_requests_and_the_backend_refuses(tmp_path):
    port = _closed_port()
    driver = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path
from typing import ClassVar
from benchmeasure.verifier.base import Candidate
from benchmeasure.verifier.lmms_backend import LmmsEvalError, rollouts_from_samples, run_lmms
from benchmeasure.verifier.panel import load_panel
model = load_panel({str(ROOT / 'verifier/panels/cpu_smollm.toml')!r}).models[0]
items = [Candidate("q0", "Compute 2 + 3.", "5", "math_arith")]
done = run_lmms(items, model, "math", 2, Path({str(tmp_path)!r}), base_url="http://127.0.0.1:{port}/v1")
print("LMMS-EVAL EXITED 0", flush=True)
try:
    rollouts_from_samples(done.samples, items, model.name, "math", 2)
except LmmsEvalError as exc:
    print("REFUSED:", exc)
"""
    result = subprocess.run([str(BENCHFILL_PYTHON), "-c", driver], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "LMMS-EVAL EXITED 0" in result.stdout
    assert "REFUSED:" in result.stdout and "[LMMS_EVAL_REQUEST_FAILED" in result.stdout, result.stdout


class _RecordingOpenAI(http.server.BaseHTTPRequestHandler):
    """A loopback OpenAI-compatible endpoint: records each request's Authorization header, answers 5."""

    seen: ClassVar[list] = []

    def _send(self, body: dict):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.seen.append(("GET", self.path, self.headers.get("Authorization")))
        self._send({"object": "list", "data": [{"id": "smollm2-t07", "object": "model"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(("POST", self.path, self.headers.get("Authorization")))
        self._send({"id": "c1", "object": "chat.completion", "created": 0, "model": "smollm2-t07",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "The answer is \\boxed{5}."}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def log_message(self, *args):
        pass


@pytest.mark.slow
@pytest.mark.skipif(not (BENCHFILL_PYTHON.parent / "lmms-eval").exists(),
                    reason=".venv-benchfill is absent (bash scripts/setup_env.sh benchfill creates it)")
def test_real_lmms_eval_sends_the_panel_models_key_and_writes_it_nowhere(tmp_path, monkeypatch):
    key = "sk-benchfill-test-8f3a1c"
    monkeypatch.setenv("BENCHFILL_TEST_KEY", key)
    monkeypatch.setenv("OPENAI_API_KEY", "not-the-panel-key")
    _RecordingOpenAI.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RecordingOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        model = dataclasses.replace(PANEL.model("smollm2-t07"), api_key_env="BENCHFILL_TEST_KEY")
        items = [Candidate("q0", "Compute 2 + 3.", "5", "math_arith")]
        done = run_lmms(items, model, "math", 2, tmp_path / "w", base_url=f"http://127.0.0.1:{server.server_port}/v1",
                        executable=str(BENCHFILL_PYTHON.parent / "lmms-eval"), num_concurrent=1, timeout_s=300)
    finally:
        server.shutdown()
        server.server_close()
    posts = [entry for entry in _RecordingOpenAI.seen if entry[0] == "POST"]
    assert len(posts) == 2 and {auth for _, _, auth in posts} == {f"Bearer {key}"}
    rows = rollouts_from_samples(done.samples, items, model.name, "math", 2)
    assert [r.correct for r in rows[0]] == [1, 1]
    written = [p for p in (tmp_path / "w").rglob("*") if p.is_file()]
    assert any(p.name.endswith("_results.json") for p in written)
    assert not [p for p in written if key.encode() in p.read_bytes()]


@pytest.fixture
def sure_server():
    from benchmeasure.serving.sim.server import serve
    from benchmeasure.serving.sim.world import World

    srv, url = serve(World({"sure": 40.0, "never": -40.0}, seed=5))
    yield url
    srv.shutdown()


def _rollout_inputs(tmp_path, url):
    from benchmeasure.serving.sim.world import item_text

    panel = tmp_path / "panel.toml"
    panel.write_text(f'[rollouts]\ndefault = 2\n[[model]]\nname = "sure"\ntemperature = 1.0\nbase_url = "{url}"\n'
                     f'[[model]]\nname = "never"\ntemperature = 0.5\ntop_p = 0.9\nbase_url = "{url}"\n'
                     'api_key_env = "SIM_KEY"\n')
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"q{i}", "question": item_text(0.0, i, "x"), "answer": str(i)})
                             + "\n" for i in range(2)))
    return panel, items


def test_run_rollout_records_its_settings_inputs_and_versions(sure_server, tmp_path):
    panel, items = _rollout_inputs(tmp_path, sure_server)
    out = tmp_path / "out" / "rows.csv"
    done = run_script("verifier/run_rollout.py", "--candidates", items, "--panel", panel, "--benchmark", "aime24",
                      "--output", out, "--concurrency", "3", timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(out.read_text().splitlines()) == 1 + 2 * 2 * 2
    assert sorted(p.name for p in out.parent.iterdir()) == ["rows.csv", "rows.csv.json", "rows.raw.jsonl"]
    record = json.loads((tmp_path / "out" / "rows.csv.json").read_text())
    assert record["backend"] == "direct" and record["benchmark"] == "aime24" and record["kind"] == "math"
    assert record["n_trials"] == 2 and record["rows"] == 8  # from the panel's [rollouts] default
    assert record["panel"] == {"path": str(panel), "sha256": hashlib.sha256(panel.read_bytes()).hexdigest()}
    assert record["inputs"] == [{"path": str(items), "sha256": hashlib.sha256(items.read_bytes()).hexdigest(),
                                 "items": 2}]
    assert record["raw_output"] == str(out.with_suffix(".raw.jsonl")) and record["output"] == str(out)
    assert [(m["name"], m["temperature"], m["top_p"], m["api_key_env"]) for m in record["models"]] == [
        ("sure", 1.0, None, "OPENAI_API_KEY"), ("never", 0.5, 0.9, "SIM_KEY")]
    assert {m["base_url"] for m in record["models"]} == {sure_server.rstrip("/")}
    assert record["settings"]["concurrency"] == 3 and record["settings"]["workdir"] is None
    assert "verifier/run_rollout.py" in record["command"] and "--concurrency 3" in record["command"]
    versions = record["package_versions"]
    assert versions["python"] and versions["openai"] and set(versions) >= {"lmms_eval", "sympy"}


@pytest.mark.parametrize("extra, message", [
    (["--raw-output", "{out}.json"], "must be three different files"),
    (["--raw-output", "{tmp}"], "is a folder"),
])
def test_run_rollout_refuses_clashing_outputs_before_any_request(sure_server, tmp_path, extra, message):
    panel, items = _rollout_inputs(tmp_path, sure_server)
    out = tmp_path / "rows.csv"
    extra = [e.format(out=out, tmp=tmp_path) for e in extra]
    done = run_script("verifier/run_rollout.py", "--candidates", items, "--panel", panel, "--benchmark", "aime24",
                      "--output", out, *extra, timeout=120)
    assert_rejected(done, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.jsonl", "panel.toml"]


FAKE_LMMS = """#!/bin/sh
# stands in for lmms-eval: notes when it started, waits, then fails (a model named in FAIL) or writes a samples log
date +%s.%N > started
sleep "$SLEEP"
case " $FAIL " in *" $(basename "$PWD") "*) exit 7 ;; esac
out=$(echo "$@" | sed 's/.*--output_path \\([^ ]*\\).*/\\1/')
mkdir -p "$out/run" && cp "$SAMPLES" "$out/run/20261205_000000_samples_benchfill_items.jsonl"
date +%s.%N > finished
"""


def _fake_lmms(tmp_path, monkeypatch, sleep, fail=""):
    program = tmp_path / "fake-lmms-eval"
    program.write_text(FAKE_LMMS)
    program.chmod(0o755)
    monkeypatch.setenv("SLEEP", str(sleep))
    monkeypatch.setenv("FAIL", fail)
    monkeypatch.setenv("SAMPLES", str(fixture_samples()))
    return str(program)


def test_models_run_side_by_side_and_rows_keep_the_model_order(tmp_path, monkeypatch):
    from benchmeasure.verifier.lmms_backend import LmmsRollouts

    program = _fake_lmms(tmp_path, monkeypatch, sleep=0.5)
    models = [dataclasses.replace(PANEL.models[0], name=name) for name in ("m1", "m2", "m3")]
    rows = LmmsRollouts(models, 3, "math", tmp_path / "w", base_url="http://127.0.0.1:9/v1", executable=program,
                        processes=3).run(fixture_candidates())
    times = {m.name: [float((tmp_path / "w" / m.name / f).read_text()) for f in ("started", "finished")]
             for m in models}
    assert max(start for start, _ in times.values()) < min(end for _, end in times.values())  # all ran at once
    assert [[r.model for r in per_item] for per_item in rows] == [["m1"] * 3 + ["m2"] * 3 + ["m3"] * 3] * len(rows)
    one_by_one = LmmsRollouts(models, 3, "math", tmp_path / "v", base_url="http://127.0.0.1:9/v1",
                              executable=program).run(fixture_candidates())
    assert one_by_one == rows


def test_a_failed_model_stops_the_others_at_once(tmp_path, monkeypatch):
    import time

    from benchmeasure.verifier.lmms_backend import run_lmms_many

    program = _fake_lmms(tmp_path, monkeypatch, sleep=0.2, fail="m1")
    models = [dataclasses.replace(PANEL.models[0], name=name) for name in ("m1", "m2")]
    start = time.monotonic()
    with pytest.raises(LmmsEvalError, match="exited with 7 for m1"):
        # m2 would sleep 31.7 s: its process is killed when m1 fails
        run_lmms_many(fixture_candidates(), models, "math", 3, [tmp_path / "m1", tmp_path / "m2"],
                      base_url="http://127.0.0.1:9/v1", executable=_slow_for(program, tmp_path, "m2"), processes=2)
    assert time.monotonic() - start < 10
    assert (tmp_path / "m2" / "started").exists() and not (tmp_path / "m2" / "finished").exists()
    alive = subprocess.run(["pgrep", "-f", "sleep 31.7"], capture_output=True, text=True).stdout.split()
    assert not alive, "a child of the stopped lmms-eval is still running"


def _slow_for(program, tmp_path, name):
    """A wrapper around the fake program that sleeps 31.7 s for model ``name``."""
    wrapper = tmp_path / "slow-lmms-eval"
    wrapper.write_text(f'#!/bin/sh\n[ "$(basename "$PWD")" = "{name}" ] && export SLEEP=31.7\nexec {program} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)
