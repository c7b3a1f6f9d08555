"""The simulated OpenAI-compatible server: real HTTP, 1PL answers, rewrites, failure injection;
and the direct rollout backend's script run against it."""

import csv
import importlib.util
import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import openai
import pytest

from benchmeasure.serving.sim.server import serve
from benchmeasure.serving.sim.world import World, item_text
from conftest import assert_rejected

REPO = Path(__file__).resolve().parents[1]
BENCHFILL_PYTHON = REPO / ".venv-benchfill" / "bin" / "python"


@pytest.fixture
def server():
    world = World({"weak": -2.0, "strong": 3.0}, seed=3)
    srv, url = serve(world)
    yield url
    srv.shutdown()



def test_pause_holds_requests_until_resume():
    srv, url = serve(World({"weak": -2.0}, seed=3))
    client = openai.OpenAI(base_url=url, api_key="x")
    replies = []
    ask = threading.Thread(target=lambda: replies.append(client.chat.completions.create(
        model="weak", messages=[{"role": "user", "content": item_text(0.0, 1, "q")}])))
    try:
        srv.sim.pause()
        ask.start()
        ask.join(0.5)
        assert ask.is_alive() and not replies
        srv.sim.resume()
        ask.join(10)
        assert not ask.is_alive() and len(replies) == 1
    finally:
        srv.sim.resume()
        srv.shutdown()

def test_panel_answers_follow_1pl(server):
    client = openai.OpenAI(base_url=server, api_key="x")
    question = item_text(0.0, 42, "q")
    for model, theta in (("weak", -2.0), ("strong", 3.0)):
        reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}], n=200)
        rate = sum("\\boxed{42}" in c.message.content for c in reply.choices) / 200
        p = 1 / (1 + math.exp(-theta))
        assert abs(rate - p) < 4 * math.sqrt(p * (1 - p) / 200) + 0.01
        assert reply.usage.completion_tokens > 0


def test_rewriter_returns_json_child(server):
    client = openai.OpenAI(base_url=server, api_key="x")
    prompt = f"Target difficulty: 0.500\nItem to rewrite:\nQuestion: {item_text(1.0, 7, 'p')}\nAnswer: 7"
    reply = client.chat.completions.create(model="sim-rewriter", messages=[{"role": "user", "content": prompt}])
    child = json.loads(reply.choices[0].message.content)
    assert "[[sim b=" in child["question"] and child["answer"].isdigit()


def test_keyed_replies_do_not_depend_on_arrival_order():
    # A parent's children send identical rewrite prompts; the loop's key header tells them apart, so each
    # child gets the same reply whichever request arrives first.
    prompt = f"Target difficulty: 0.500\nItem to rewrite:\nQuestion: {item_text(1.0, 7, 'p')}\nAnswer: 7"

    def replies(order):
        srv, url = serve(World({"m": 0.0}, seed=4))
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
        try:
            return {key: client.chat.completions.create(
                        model="sim-rewriter", messages=[{"role": "user", "content": prompt}],
                        extra_headers={"X-BenchFill-Key": key}).choices[0].message.content
                    for key in order}
        finally:
            srv.shutdown()

    forward = replies(["rewrite/c0", "rewrite/c1"])
    assert forward == replies(["rewrite/c1", "rewrite/c0"])
    assert forward["rewrite/c0"] != forward["rewrite/c1"]


def test_failure_injection_rate():
    srv, url = serve(World({"m": 0.0}), fail_rate=0.5, hang_s=0.0, seed=1)
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=5)
    failures = 0
    for _ in range(60):
        try:
            message = {"role": "user", "content": "hi [[sim b=0.0 a=1]]"}
            reply = client.chat.completions.create(model="m", messages=[message])
            if not isinstance(reply.choices, list):
                failures += 1
        except (openai.APIStatusError, openai.APIResponseValidationError, ValueError):
            failures += 1
    srv.shutdown()
    assert 10 <= failures <= 40  # 500, 429 and malformed of the 50% share; hangs of 0 s succeed


def test_run_rollout_script(server, tmp_path):
    panel = tmp_path / "panel.toml"
    panel.write_text(f'[rollouts]\ndefault = 4\n[[model]]\nname = "weak"\ntemperature = 1.0\nbase_url = "{server}"\n'
                     f'[[model]]\nname = "strong"\ntemperature = 1.0\nbase_url = "{server}"\n')
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"q{i}", "question": item_text(0.0, i, "x"), "answer": str(i)})
                             + "\n" for i in range(3)))
    out = tmp_path / "rows.csv"
    done = subprocess.run([sys.executable, str(REPO / "verifier" / "run_rollout.py"), "--candidates", str(items),
                           "--panel", str(panel), "--benchmark", "aime24", "--output", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 3 * 2 * 4 and set(rows[0]) == {"model", "item_id", "trial", "correct"}
    raw = [json.loads(line) for line in open(tmp_path / "rows.raw.jsonl")]
    assert len(raw) == len(rows) and all(r["response"] for r in raw)
    bad = subprocess.run([sys.executable, str(REPO / "verifier" / "run_rollout.py"), "--candidates",
                          str(tmp_path / "none.jsonl"), "--panel", str(panel), "--benchmark", "aime24",
                          "--output", str(tmp_path / "x.csv")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and not (tmp_path / "x.csv").exists()


def _rollout_cli(python, tmp_path, url, backend, *extra):
    """run_rollout.py on two sure-to-be-right/wrong models (1PL abilities ±40 on b = 0 items)."""
    panel = tmp_path / "sure_panel.toml"
    panel.write_text(f'[[model]]\nname = "sure"\ntemperature = 1.0\nbase_url = "{url}"\n'
                     f'[[model]]\nname = "never"\ntemperature = 1.0\nbase_url = "{url}"\n')
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"q{i}", "question": item_text(0.0, i, "x"), "answer": str(i)})
                             + "\n" for i in range(2)))
    out = tmp_path / f"rows_{backend}.csv"
    done = subprocess.run([str(python), str(REPO / "verifier" / "run_rollout.py"), "--backend", backend,
                           "--candidates", str(items), "--panel", str(panel), "--benchmark", "aime24",
                           "--n-trials", "2", "--output", str(out), *extra], capture_output=True, text=True,
                          timeout=600)
    return done, out


@pytest.fixture
def sure_server():
    srv, url = serve(World({"sure": 40.0, "never": -40.0}, seed=5))
    yield url
    srv.shutdown()


@pytest.mark.skipif(importlib.util.find_spec("lmms_eval") is not None, reason="lmms-eval is installed here")
def test_run_rollout_lmms_backend_without_lmms_eval_is_one_line_error(sure_server, tmp_path):
    done, out = _rollout_cli(sys.executable, tmp_path, sure_server, "lmms-eval")
    assert_rejected(done, "--backend lmms-eval needs lmms-eval", "not installed", ".venv-benchfill")
    assert not out.exists() and not out.with_suffix(".raw.jsonl").exists()


def test_run_rollout_backend_options_are_checked(sure_server, tmp_path):
    done, out = _rollout_cli(sys.executable, tmp_path, sure_server, "direct", "--workdir", str(tmp_path / "w"))
    assert_rejected(done, "--workdir applies to --backend lmms-eval only")
    assert not out.exists()
    done, out = _rollout_cli(sys.executable, tmp_path, sure_server, "direct", "--processes", "2")
    assert_rejected(done, "--processes applies to --backend lmms-eval only")
    assert not out.exists()
    done, _ = _rollout_cli(sys.executable, tmp_path, sure_server, "vllm")
    assert done.returncode == 2 and "invalid choice: 'vllm'" in done.stderr
    done, out = _rollout_cli(sys.executable, tmp_path, sure_server, "direct")  # the default backend, named
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines() == ["model,item_id,trial,correct", "sure,q0,0,1", "sure,q0,1,1",
                                            "never,q0,0,0", "never,q0,1,0", "sure,q1,0,1", "sure,q1,1,1",
                                            "never,q1,0,0", "never,q1,1,0"]


@pytest.mark.slow
@pytest.mark.skipif(not BENCHFILL_PYTHON.exists(),
                    reason=".venv-benchfill is absent (bash scripts/setup_env.sh benchfill creates it)")
def test_run_rollout_backends_write_the_same_rows(sure_server, tmp_path):
    direct, direct_out = _rollout_cli(BENCHFILL_PYTHON, tmp_path, sure_server, "direct")
    # both models' lmms-eval at once (--processes 2): the rows keep the panel's order all the same
    lmms, lmms_out = _rollout_cli(BENCHFILL_PYTHON, tmp_path, sure_server, "lmms-eval",
                                  "--workdir", str(tmp_path / "lmms"), "--processes", "2")
    assert direct.returncode == 0, direct.stderr
    assert lmms.returncode == 0, lmms.stderr[-3000:]
    assert lmms_out.read_text() == direct_out.read_text()  # rows named after the panel models, same order
    raw = [json.loads(line) for line in open(lmms_out.with_suffix(".raw.jsonl"))]
    assert [(r["model"], r["item_id"], r["trial"]) for r in raw] == [
        (m, f"q{i}", t) for i in range(2) for m in ("sure", "never") for t in range(2)]
    assert all(("\\boxed{" + r["item_id"][1:] + "}" in r["response"]) == bool(r["correct"]) for r in raw)
    assert list((tmp_path / "lmms").glob("*/out/**/*samples_*.jsonl"))  # --workdir keeps lmms-eval's files


def test_reversed_items_are_answered_against_ability_by_the_panel_only():
    import random

    from benchmeasure.serving.sim.world import REFERENCE, respond

    world = World({"weak": -2.0, "strong": 3.0}, seed=3)
    question = item_text(0.5, 42, "q", reversed_=True)
    assert question.endswith("[[sim b=0.5000 a=42 reversed]]")
    rates = {m: sum("\\boxed{42}" in t for t in respond(world, m, question, 400, random.Random(1))) / 400
             for m in ("weak", "strong")}
    assert rates["weak"] > 0.85 and rates["strong"] < 0.15          # 1 − σ(θ − b): 0.92 and 0.08
    solved = respond(world, "sim-rewriter", question, 20, random.Random(2))   # the cold solve is not reversed
    assert sum("\\boxed{42}" in t for t in solved) >= 19
    assert REFERENCE.findall(f"[difficulty 0.30] {question}") == [("0.30", "0.5000", "42")]
    world.against_ability = 1.0
    prompt = f"Target difficulty: 0.500\nItem to rewrite:\nQuestion: {item_text(1.0, 7, 'p')}\nAnswer: 7"
    child = json.loads(respond(world, "sim-rewriter", prompt, 1, random.Random(3))[0])
    assert " reversed]]" in child["question"]
