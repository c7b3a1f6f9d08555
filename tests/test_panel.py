"""Panel config: the paper's panel, endpoint resolution, and every rejected config."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmeasure.base.errors import InputError
from benchmeasure.verifier.panel import load_panel

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "verifier" / "panels" / "paper.toml"

MINIMAL = """
[panel]
name = "tiny"
[rollouts]
default = 2
[[model]]
name = "a"
temperature = 0.0
base_url = "http://10.0.0.1:9000/v1/"
[[model]]
name = "b"
temperature = 0.7
top_p = 0.8
supports_n = false
[model.serve]
path = "/models/b"
port = 8123
"""


def write(tmp_path, text):
    path = tmp_path / "panel.toml"
    path.write_text(text)
    return path


def test_paper_panel_matches_table4():
    panel = load_panel(PAPER)
    settings = {m.name: (m.temperature, m.top_p) for m in panel.models}
    assert settings == {
        "Qwen3.5-397B-A17B": (0.6, 0.95),
        "GLM-4.6": (1.0, 0.95),
        "GLM-4.5-Air": (0.6, 0.95),
        "Qwen3-Next-80B-A3B-Instruct": (0.7, 0.8),
        "QwQ-32B": (0.6, 0.95),
        "Olmo-3.1-32B-Think": (0.6, 0.95),
    }
    assert panel.expected_size == 12 and panel.missing == 6
    assert panel.rewriter.name == "MiniMax-M2.7" and panel.rewriter.temperature == 1.0
    assert panel.n_trials("aime24") == 32 and panel.n_trials("amc23") == 32 and panel.n_trials("gaokao2023en") == 8
    assert panel.n_trials("bbh_3obj") == 8
    for model in [*panel.models, panel.rewriter]:
        assert model.serve is not None and len(model.serve.gpu_ids) == model.serve.tensor_parallel_size


def test_minimal_panel_and_resolution(tmp_path):
    panel = load_panel(write(tmp_path, MINIMAL))
    a, b = panel.models
    assert panel.name == "tiny" and panel.missing == 0 and panel.rewriter is None
    assert a.resolve_base_url({}) == "http://10.0.0.1:9000/v1"
    assert b.resolve_base_url({}) == "http://127.0.0.1:8123/v1"
    assert a.sampling() == {"temperature": 0.0, "max_tokens": 4096}
    assert b.sampling() == {"temperature": 0.7, "max_tokens": 4096, "top_p": 0.8}
    assert not b.supports_n and b.serve.gpu_ids == () and b.serve.max_model_len is None
    assert a.api_key({}) == "EMPTY" and a.api_key({"OPENAI_API_KEY": "k"}) == "k"
    assert panel.n_trials("anything") == 2
    assert panel.model("b") is b


def test_base_url_env_overrides(tmp_path):
    text = MINIMAL.replace('name = "a"', 'name = "a"\nbase_url_env = "A_URL"')
    model = load_panel(write(tmp_path, text)).models[0]
    assert model.resolve_base_url({"A_URL": "https://api.example.org/v1"}) == "https://api.example.org/v1"
    assert model.resolve_base_url({"A_URL": ""}) == "http://10.0.0.1:9000/v1"


def test_no_endpoint_is_an_input_error(tmp_path):
    text = '[[model]]\nname = "x"\ntemperature = 1.0\nbase_url_env = "X_URL"\n'
    model = load_panel(write(tmp_path, text)).models[0]
    with pytest.raises(InputError, match=r"set \$X_URL"):
        model.resolve_base_url({})


def test_unknown_model_and_missing_rollouts(tmp_path):
    panel = load_panel(write(tmp_path, '[[model]]\nname = "x"\ntemperature = 1.0\n'))
    with pytest.raises(InputError, match="no model named 'y'"):
        panel.model("y")
    with pytest.raises(InputError, match="no rollouts entry"):
        panel.n_trials("aime24")


BAD = [
    ("[[model]]\nname = 'x'\ntemprature = 1.0\n", "unknown key 'temprature'"),
    ("[[model]]\nname = 'x'\n", "'temperature' is required"),
    ("[[model]]\ntemperature = 1.0\n", "'name'"),
    ("[[model]]\nname = 'x'\ntemperature = 3\n", r"temperature: must be a number in \[0.0, 2.0\]"),
    ("[[model]]\nname = 'x'\ntemperature = 1\ntop_p = 0\n", "top_p must be > 0"),
    ("[[model]]\nname = 'x'\ntemperature = 1\nmax_tokens = 0\n", "max_tokens: must be an integer >= 1"),
    ("[[model]]\nname = 'x'\ntemperature = 1\n[[model]]\nname = 'x'\ntemperature = 1\n", "more than once"),
    ("[[model]]\nname = 'x'\ntemperature = 1\nbase_url = 'localhost:1'\n", "must start with http"),
    ("[[model]]\nname = 'x'\ntemperature = 1\napi_key_env = 'MY KEY'\n", "not an environment variable name"),
    (
        "[[model]]\nname = 'x'\ntemperature = 1\n[model.serve]\npath = 'p'\ntensor_parallel_size = 2\ngpu_ids = [0]\n",
        "does not match 1 gpu_ids",
    ),
    ("[[model]]\nname = 'x'\ntemperature = 1\n[model.serve]\nport = 1\n", "'path'"),
    ("[[model]]\nname = 'x'\ntemperature = 1\n[model.serve]\npath = 'p'\nport = 70000\n", "out of range"),
    (
        "[[model]]\nname = 'x'\ntemperature = 1\n[model.serve]\npath = 'p'\nport = 9\n"
        "[[model]]\nname = 'y'\ntemperature = 1\n[model.serve]\npath = 'q'\nport = 9\n",
        "both serve on port 9",
    ),
    ("[rollouts]\naime24 = 0\n", r"\[rollouts\] aime24: must be an integer >= 1"),
    ("[panel]\nsize = 3\n", "unknown key 'size'"),
    ("[models]\n", "unknown key 'models'"),
    ("[[model]\n", "not valid TOML"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_rejected_configs(tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        load_panel(write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="panel config not found"):
        load_panel(tmp_path / "nope.toml")
