"""posterior-metrics --calibrate (issue 18, item 7): the calibration at a user's own abilities, n and K,
through the command line with a small fast setting, and its summaries checked by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmeasure.analyses.gap_calibration import (
    population_shape,
    replicate,
    summarize,
    true_difficulties,
    verdict,
    wilson,
)
from tests.conftest import assert_rejected, run_script


def _fit_folder(folder, n=12, models=5, k=4, seed=0):
    """A fit folder as benchmeasure fit writes the parts --calibrate reads: draws, ability.csv, diagnostics.json."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    b = rng.normal(0, 1, n)
    np.savez(folder / "draws.npz", b=b + rng.normal(0, 0.3, (200, n)), items=np.array([f"q{i}" for i in range(n)]))
    (folder / "ability.csv").write_text("model,theta_mean\n" + "".join(
        f"m{j},{t}\n" for j, t in enumerate(np.linspace(-2, 2, models))))
    (folder / "diagnostics.json").write_text(json.dumps({"input": {"n_trials": k}}))
    return folder / "draws.npz"


def test_calibrate_through_the_cli(tmp_path):
    path = _fit_folder(tmp_path / "fit")
    out = run_script("posterior_metrics.py", path, "--json", "--calibrate", "1", "--calibrate-worlds", "band",
                     "--calibrate-draws", "30", "--replicates", "10", "--seed", "5")
    assert out.returncode == 0, out.stderr
    assert "calibration: world band, replication 1/1 done (1 of 1 fits" in out.stderr   # progress lines
    cal = json.loads(out.stdout)["calibration"]
    s = cal["settings"]
    assert (s["models"], s["items"], s["n_trials"], s["reps"], s["worlds"]) == (5, 12, 4, 1, ["band"])
    assert s["route"] == "collapsed" and s["draws"] == 30
    for m in ("ddm", "max_gap", "top5_gap_sum"):
        cell = cal["worlds"]["band"][m]
        for est in ("plugin", "new"):
            assert cell[est]["total"] == 1 and cell[est]["hits"] in (0, 1)
            assert np.isfinite(cell[est]["bias"]) and cell[est]["rmse"] == pytest.approx(abs(cell[est]["bias"]))
        assert 0 < cell["truth_mean"] <= 1
        assert cal["noise_aware"][m]["coverage"] == f"{cal['worlds']['band'][m]['new']['hits']}/1"


def test_calibrate_rejections_come_before_any_fit(tmp_path):
    path = _fit_folder(tmp_path / "fit")
    assert_rejected(run_script("posterior_metrics.py", path, "--calibrate", "1", "--calibrate-worlds", "moon"),
                    "--calibrate-worlds", "moon")
    (tmp_path / "fit" / "ability.csv").unlink()
    assert_rejected(run_script("posterior_metrics.py", path, "--calibrate", "1"), "no ability.csv")
    assert_rejected(run_script("posterior_metrics.py", path, "--calibrate", "0"), "--calibrate")


def _row(truth, plugin, low, high, new=None):
    entry = {"plugin": plugin, "plugin_low": low, "plugin_high": high, "new": new,
             "new_low": None if new is None else new - 0.01, "new_high": None if new is None else new + 0.01}
    return {"truth": {m: truth for m in ("ddm", "max_gap", "top5_gap_sum")}, "resolution": 0.1,
            "max_gap_resolved": True, **{m: dict(entry) for m in ("ddm", "max_gap", "top5_gap_sum")}}


def test_summaries_by_hand_and_k1_refusal():
    rows = [_row(0.2, 0.25, 0.1, 0.3, new=0.2), _row(0.2, 0.15, 0.21, 0.3, new=0.25)]
    s = summarize(rows)
    assert s["max_gap"]["plugin"]["bias"] == pytest.approx(0.0)
    assert s["max_gap"]["plugin"]["rmse"] == pytest.approx(0.05)
    assert s["max_gap"]["plugin"]["coverage"] == "1/2" and s["max_gap"]["new"]["coverage"] == "1/2"
    v = verdict({"w": s}, "new")
    assert v["max_gap"]["under_covering"] == ["w"] and v["max_gap"]["biased"] == ["w"]   # bias 0.025 > 0.02
    assert v["top5_gap_sum"]["biased"] == []
    refused = summarize([_row(0.2, 0.25, 0.1, 0.3)])           # K = 1: no noise-aware estimate
    assert "new" not in refused["ddm"] and verdict({"w": refused}, "new")["ddm"] is None


def test_wilson_and_population_shape():
    low, high = wilson(8, 8)
    assert high == pytest.approx(1.0) and low == pytest.approx(0.693, abs=0.01)     # z = 1.881: 8/(8 + z²) = 0.6934
    assert wilson(0, 0) == (0.0, 1.0)
    location, scale = population_shape([0.0, 2.0], [1.0, 1.0])
    assert location == pytest.approx(1.0) and scale == pytest.approx(np.sqrt(2.0))


def test_worlds_move_to_location_and_scale_and_replicate_is_seeded():
    a = true_difficulties("band", 50, np.random.default_rng(1))
    b = true_difficulties("band", 50, np.random.default_rng(1), location=3.0, scale=2.0)
    assert np.allclose(b, 3.0 + 2.0 * a)
    assert np.array_equal(true_difficulties("as_fitted", 3, None, fitted=[1, 2, 3]), [1, 2, 3])
    theta = np.linspace(-2, 2, 6)
    one = replicate(a, theta, 8, np.random.default_rng(2), draws=50, replicates=10, abilities="true")
    two = replicate(a, theta, 8, np.random.default_rng(2), draws=50, replicates=10, abilities="true")
    assert one == two and one["truth"]["max_gap"] > 0.1
