"""Shipped examples (issue 22, item 2): the run configs of propose/configs/ and the panels of verifier/panels/ ship
inside the package as identical copies, and a config or panel can be named by name (or by its checkout path
where no such file exists), so `benchmeasure benchfill init --config aime24` works from any folder."""

from __future__ import annotations

import pytest

from benchmeasure.base.errors import InputError
from benchmeasure.base.resources import EXAMPLES, example_path, package_file, shipped_examples
from benchmeasure.benchfill.config import load_config
from benchmeasure.verifier.panel import load_panel
from conftest import ROOT, assert_rejected, run_script


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_the_package_copy_equals_the_checkout_folder(kind):
    checkout_folder, package_parts, _, suffix = EXAMPLES[kind]
    source = {p.name: p.read_bytes() for p in (ROOT / checkout_folder).glob(f"*{suffix}")}
    shipped = {p.name: p.read_bytes() for p in package_file(*package_parts).glob(f"*{suffix}")}
    assert source, checkout_folder
    fix = f"cp {checkout_folder}/*{suffix} benchmeasure/{'/'.join(package_parts)}/ (the checkout folder is the source)"
    assert sorted(shipped) == sorted(source), fix
    for name, text in source.items():
        assert shipped[name] == text, f"{name} differs: {fix}"


def test_the_package_data_declares_the_copies():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"configs/*.toml"' in text and '"panels/*.toml"' in text and '"spaces/*.yaml"' in text


@pytest.mark.parametrize(("value", "kind", "name"), [
    ("aime24", "config", "aime24.toml"), ("amc23.toml", "config", "amc23.toml"),
    ("paper", "panel", "paper.toml"), ("cpu_smollm.toml", "panel", "cpu_smollm.toml"),
    ("docs/examples/arithmetic_space.yaml", "space", "arithmetic_space.yaml"),
])
def test_a_shipped_example_by_name(value, kind, name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("benchmeasure.base.resources.checkout", lambda: None)  # as installed: no checkout
    assert example_path(value, kind) == package_file(*EXAMPLES[kind][1], name)


def test_a_path_that_exists_wins_over_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "aime24").write_text("[benchmark]\n", encoding="utf-8")
    assert example_path("aime24", "config").resolve() == tmp_path / "aime24"
    # the checkout path resolves in the checkout (the project folder) from any working folder
    assert example_path("propose/configs/aime24.toml", "config") == ROOT / "propose" / "configs" / "aime24.toml"


def test_an_unknown_name_lists_the_shipped_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"BenchFill config not found .*aime24, aime25"):
        example_path("aime2", "config")
    with pytest.raises(InputError, match=r"panel config not found .*cpu_smollm, paper"):
        example_path("/nowhere/paper.toml", "panel")
    assert shipped_examples("panel") == ["cpu_smollm", "paper"]


def test_shipped_examples_load_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PANEL_CONFIG", raising=False)
    config = load_config("gaokao2023en")
    assert config.benchmark.name == "gaokao2023en"
    assert config.panel_path() == ROOT / "verifier" / "panels" / "paper.toml"  # in the checkout: its file
    monkeypatch.setenv("PANEL_CONFIG", "cpu_smollm")  # a shipped panel by name
    assert config.panel_path() == package_file("verifier", "panels", "cpu_smollm.toml")
    assert load_panel("cpu_smollm").name == "cpu_smollm"


def test_init_with_a_shipped_config_names_where_its_data_is_read(tmp_path):
    done = run_script("propose/benchfill.py", "init", "--config", "aime24", "--results", tmp_path / "r")
    assert_rejected(done, "aime24.toml: [benchmark] calibration file", "supply the file there",
                    "pass the copy with --config")
    assert not (tmp_path / "r").exists()
    assert_rejected(run_script("propose/benchfill.py", "init", "--config", "aime2", "--results", tmp_path / "r"),
                    "aime2: BenchFill config not found", "aime24")


def test_rollout_takes_a_shipped_panel_by_name(tmp_path):
    """`rollout --panel cpu_smollm` from any folder reads (and hashes) the shipped file: it gets as far as the
    model's address — here a closed port, so one error line naming the model — and writes nothing."""
    import os
    import subprocess
    import sys

    (tmp_path / "c.jsonl").write_text('{"item_id": "a1", "question": "What is 2 + 2?", "answer": "4"}\n')
    result = subprocess.run(
        [sys.executable, "-m", "benchmeasure", "rollout", "--candidates", "c.jsonl", "--panel", "cpu_smollm",
         "--benchmark", "arithmetic", "--kind", "math", "--n-trials", "2", "--models", "smollm2-t07",
         "--output", "rows.csv", "--retries", "0", "--timeout", "5"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CPU_PANEL_URL": "http://127.0.0.1:9/v1"})
    assert_rejected(result, "smollm2-t07", "127.0.0.1:9")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]
