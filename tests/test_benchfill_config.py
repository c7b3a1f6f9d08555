"""BenchFill configs: the panel from $PANEL_CONFIG (env.example) with a default, resolved once at init and
recorded in the run's config.json."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from benchmeasure.benchfill.config import load_config
from benchmeasure.serving.sim.dataset import make_sim_benchmark
from conftest import BENCHFILL_CLI as CLI
from conftest import ROOT, assert_rejected

CONFIGS = sorted((ROOT / "propose" / "configs").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_shipped_configs_take_the_panel_from_panel_config(path, monkeypatch):
    monkeypatch.delenv("PANEL_CONFIG", raising=False)
    config = load_config(path)
    assert config.path(config.panel) == ROOT / "verifier" / "panels" / "paper.toml"
    monkeypatch.setenv("PANEL_CONFIG", "")  # empty, as env.example's line may be: the default too
    assert config.path(config.panel) == ROOT / "verifier" / "panels" / "paper.toml"
    monkeypatch.setenv("PANEL_CONFIG", "/elsewhere/my_panel.toml")
    assert config.path(config.panel) == Path("/elsewhere/my_panel.toml")


def sim_config(tmp_path):
    """The simulation's config with its panel line as the shipped configs write it, defaulting to the sim panel."""
    config = make_sim_benchmark(tmp_path / "data", 1, truth=True)
    default = tmp_path / "data" / "panel.toml"
    text = config.read_text().replace(f'panel = "{default}"', f'panel = "${{PANEL_CONFIG:-{default}}}"')
    assert "PANEL_CONFIG" in text
    config.write_text(text)
    return config, default


def init(config, tmp_path, name, **env):
    environ = {k: v for k, v in os.environ.items() if k != "PANEL_CONFIG"}
    return subprocess.run([*CLI, "init", "--config", str(config), "--name", name, "--results", str(tmp_path / "res")],
                          capture_output=True, text=True, env={**environ, **env})


def test_init_records_the_resolved_panel(tmp_path):
    config, default = sim_config(tmp_path)
    done = init(config, tmp_path, "default")
    assert done.returncode == 0, done.stderr
    record = json.loads((Path(done.stdout.strip()) / "config.json").read_text())
    assert record["config"]["panel"] == str(default) == record["panel"]["path"]
    assert len(record["panel"]["sha256"]) == 64

    other = tmp_path / "other_panel.toml"
    other.write_text(default.read_text())
    done = init(config, tmp_path, "from-env", PANEL_CONFIG=str(other))
    assert done.returncode == 0, done.stderr
    record = json.loads((Path(done.stdout.strip()) / "config.json").read_text())
    assert record["config"]["panel"] == str(other) == record["panel"]["path"]

    done = init(config, tmp_path, "missing", PANEL_CONFIG=str(tmp_path / "nope.toml"))
    assert_rejected(done, "nope.toml: panel config not found", "PANEL_CONFIG")
    assert not (tmp_path / "res" / "math_sim" / "missing").exists()


def test_item_fit_setting_and_run_folders_from_before_it(tmp_path):
    from benchmeasure.benchfill.records import Annotation, GapDone, event_from_dict

    config = tmp_path / "c.toml"
    config.write_text('[benchmark]\nname = "x"\ncalibration = "c.csv"\npool = "p.jsonl"\nmatrix = "m.csv"\n'
                      "matrix_n_trials = 1\n")
    assert load_config(config).search.misfit_p == 0.05                   # on by default for a new run
    config.write_text(config.read_text() + "[search]\nmisfit_p = 0\n")
    assert load_config(config).search.misfit_p == 0.0                    # 0: off
    old = {"benchmark": {"name": "x", "calibration": "c.csv", "pool": "p.jsonl", "matrix": "m.csv",
                         "matrix_n_trials": 1}, "search": {"gaps": 3}}   # a config.json written before the check
    (tmp_path / "config.json").write_text(json.dumps(old))
    assert load_config(tmp_path / "config.json").search.misfit_p == 0.0  # resumes as it began: no check
    note = {"type": "annotation", "item_id": "benchfill-g1-r1-p0-c0", "mode": "benchfill", "gap": 1, "round": 1,
            "parent_id": "3", "question": "q", "answer": "1", "valid": True, "reason": "ok", "counts": {"m": 1},
            "b_mean": 0.1, "b_sd": 0.2, "z": 0.5, "target": 0.5, "time": 1.0}   # a journal line from before
    event = event_from_dict(note, "line 1")
    assert isinstance(event, Annotation) and event.fit is None and not event.misfits
    done = event_from_dict({"type": "gap_done", "mode": "benchfill", "gap": 1, "rounds": 2, "rewrites": 32,
                            "stopped_early": False, "final": None, "deviation": None}, "line 2")
    assert isinstance(done, GapDone) and done.misfits is None
    fit = {"misfit": True, "reason": "why", "p_value": 1e-9, "trials": 4}
    assert event_from_dict({**note, "fit": fit}, "line 3").misfits
