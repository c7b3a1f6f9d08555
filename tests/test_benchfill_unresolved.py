"""Issue 30, item 2: BenchFill spends no call on a target gap whose edge items are not resolved (the default,
``[search] unresolved = "skip"``), says so with what would resolve it, and ``"fill"`` keeps the old treatment;
a run folder initialized before the setting existed resumes as it began."""

from __future__ import annotations

import csv
import json
import logging
import os
import subprocess
from pathlib import Path

import pytest

from benchmeasure.benchfill.config import load_config
from benchmeasure.benchfill.gap_choice import skip_unresolved
from conftest import BENCHFILL_CLI, assert_rejected, tiny_seed_set


def test_skip_keeps_resolved_targets_and_names_what_would_resolve_the_rest(tmp_path, caplog):
    noisy_top = tiny_seed_set(tmp_path, [0.05, 0.05, 0.05, 0.6, 0.6])   # the widest gap's edges are 1.6 sds apart
    with caplog.at_level(logging.WARNING):
        kept, skipped = skip_unresolved(noisy_top.target_choice(3, n_trials=4))
    assert [(r["gap"].left, r["gap"].right) for r in kept] == [pytest.approx((1 / 6, 0.5)),
                                                               pytest.approx((0, 1 / 6))]
    assert [(r["lower_item"], r["upper_item"]) for r in skipped] == [("3", "4")]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "skipping target gap" in lines[0] and "no call is spent" in lines[0]
    assert f"about {skipped[0]['extra_trials_per_model']} more trials per model on items '3' and '4'" in lines[0]
    # every gap resolved (no sds): nothing skipped, nothing logged
    caplog.clear()
    plain = tiny_seed_set(tmp_path / "p", [0, 0, 0, 0, 0])
    kept, skipped = skip_unresolved(plain.target_choice(3))
    assert len(kept) == 3 and skipped == [] and not caplog.records


def test_the_setting_defaults_to_skip_is_checked_and_old_run_folders_resume_with_fill(tmp_path):
    config = tmp_path / "c.toml"
    bench = '[benchmark]\nname = "x"\ncalibration = "c.csv"\npool = "p.jsonl"\nmatrix = "m.csv"\nmatrix_n_trials = 1\n'
    config.write_text(bench)
    assert load_config(config).search.unresolved == "skip"
    config.write_text(bench + '[search]\nunresolved = "fil"\n')
    done = subprocess.run([*BENCHFILL_CLI, "init", "--config", str(config), "--results", str(tmp_path / "r")],
                          capture_output=True, text=True)
    assert_rejected(done, "unresolved must be one of skip, resolve, fill", "'fil'")
    assert not (tmp_path / "r").exists()
    old = {"benchmark": {"name": "x", "calibration": "c.csv", "pool": "p.jsonl", "matrix": "m.csv",
                         "matrix_n_trials": 1}, "search": {"gaps": 3}}   # a config.json written before the setting
    (tmp_path / "config.json").write_text(json.dumps(old))
    assert load_config(tmp_path / "config.json").search.unresolved == "fill"


@pytest.mark.slow
def test_a_run_spends_no_call_on_an_unresolved_target(tmp_path):
    """End to end on the simulated benchmark, its calibration given sds that resolve only the widest gap."""
    from benchmeasure.core.metrics import largest_gaps
    from benchmeasure.serving.sim.dataset import make_sim_benchmark
    from benchmeasure.serving.sim.server import serve
    from benchmeasure.serving.sim.world import World

    data = tmp_path / "data"
    config = make_sim_benchmark(data, 3, search={"gaps": 2, "rounds": 1, "parents": 2, "children": 2},
                                truth=True)
    path = data / "calibration.csv"
    rows = list(csv.DictReader(path.open()))
    b = [float(r["b_mean"]) for r in rows]
    lo, hi = min(b), max(b)
    first, second = largest_gaps([(v - lo) / (hi - lo) for v in b])[:2]
    # one sd for every item, between what resolves the widest gap and what resolves the second: 1 target left
    sd = (first.width + second.width) / 2 / (2 * 2 ** 0.5) * (hi - lo)
    for r in rows:
        r["b_sd"] = str(sd)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["item_id", "b_mean", "b_sd"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    server, url = serve(World.load(data / "world.json"), seed=3)
    env = {**os.environ, "BENCHFILL_SIM_URL": url}
    try:
        init = subprocess.run([*BENCHFILL_CLI, "init", "--config", str(config), "--name", "u",
                               "--results", str(tmp_path / "res")], capture_output=True, text=True, env=env,
                              check=True)
        folder = Path(init.stdout.strip())
        done = subprocess.run([*BENCHFILL_CLI, "run", str(folder)], capture_output=True, text=True, env=env,
                              timeout=600)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    assert "skipping target gap" in done.stdout + done.stderr, (done.stdout, done.stderr)
    summary = json.loads((folder / "summary.json").read_text())
    skipped = summary["skipped_targets"]
    assert [(t["left"], t["right"]) for t in summary["targets"]] == [pytest.approx((first.left, first.right))]
    assert [(t["left"], t["right"]) for t in skipped] == [pytest.approx((second.left, second.right))]
    assert summary["targets"][0]["resolved"] and not skipped[0]["resolved"]
    ranks = {t["gap"] for t in summary["targets"]}
    events = [json.loads(line) for line in (folder / "events.jsonl").open()]
    assert {e["gap"] for e in events if "gap" in e} <= ranks     # no plan, call or annotation for the skipped gap
    assert "skipped 1 unresolved target gap(s)" in (folder / "table2.txt").read_text()
