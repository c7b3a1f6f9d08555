"""Issue 18 through the command line: labelled plug-in values, the noise-aware fields, the resolution,
K = 1 ties, the dispersion check and BenchFill's preference for resolved gaps."""

from __future__ import annotations

import csv
import json
import logging

import numpy as np
import pytest

from benchmeasure.benchfill.mass_fill import Limits, State, next_step
from benchmeasure.core.matrix import ResponseMatrix, write_matrix
from benchmeasure.core.metrics import diagnose
from tests.conftest import assert_rejected, run_script, tiny_seed_set

METRICS = ("ddm", "max_gap", "top5_gap_sum")


def _draws_with_band(tmp_path, sd=0.05, n=60, draws=300, seed=0):
    rng = np.random.default_rng(seed)
    u = rng.uniform(-2, 1.2, n)
    b = np.where(u > 0, u + 0.8, u)       # an empty band (0, 0.8)
    d = b + rng.normal(0, sd, (draws, n))
    path = tmp_path / f"draws{sd}.npz"
    np.savez(path, b=d, items=np.array([f"q{i}" for i in range(n)]))
    return path, d


def test_posterior_metrics_json_fields_and_resolution(tmp_path):
    path, d = _draws_with_band(tmp_path)
    out = run_script("posterior_metrics.py", path, "--json", "--replicates", "20", "--seed", "3")
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    plug = diagnose(list(d.mean(axis=0))).as_dict()
    for name in METRICS:
        m = rec["metrics"][name]
        assert m["plugin"] == pytest.approx(plug[name], abs=1e-12)
        assert m["low"] <= m["high"] and 0 <= m["low"] and m["high"] <= 1
        for key in ("per_draw_min_max", "per_draw_fixed_range"):
            assert m[key]["low"] <= m[key]["median"] <= m[key]["high"]
    assert rec["metrics"]["max_gap"]["resolved"] is True   # 0.8 units against sds of 0.05
    assert isinstance(rec["metrics"]["top5_gap_sum"]["resolved"], bool)
    assert "resolved" not in rec["metrics"]["ddm"]
    assert 0 < rec["resolution"] < rec["metrics"]["max_gap"]["plugin"]
    # the noise-aware interval covers the true widest gap (0.8 / 4 = 0.2 up to the sample's own spread)
    assert rec["metrics"]["max_gap"]["low"] <= rec["metrics"]["max_gap"]["plugin"] + 0.02
    # same seed, same numbers; text output labels the plug-in as the paper's value
    again = json.loads(run_script("posterior_metrics.py", path, "--json", "--replicates", "20", "--seed", "3").stdout)
    assert again["metrics"] == rec["metrics"]
    text = run_script("posterior_metrics.py", path, "--replicates", "20").stdout
    assert "Plug-in (paper)" in text and "resolution" in text and "fixed range" not in text   # one interval first
    assert "uncalibrated" in text and "--all-intervals" in text
    text = run_script("posterior_metrics.py", path, "--replicates", "20", "--all-intervals").stdout
    assert "Plug-in (paper)" in text and "resolution" in text and "fixed range" in text


def test_noise_wide_enough_to_hide_the_band_is_reported_unresolved(tmp_path):
    path, _ = _draws_with_band(tmp_path, sd=0.6)
    rec = json.loads(run_script("posterior_metrics.py", path, "--json", "--replicates", "20").stdout)
    assert rec["metrics"]["max_gap"]["resolved"] is False
    assert rec["resolution"] > 0.2          # a 20 % band is below what this noise can reveal
    text = run_script("posterior_metrics.py", path, "--replicates", "20").stdout
    assert "is not resolved" in text


def test_posterior_metrics_rejects_a_bad_seed(tmp_path):
    path, _ = _draws_with_band(tmp_path)
    assert_rejected(run_script("posterior_metrics.py", path, "--seed", "-1"), "--seed")
    assert_rejected(run_script("posterior_metrics.py", path, "--replicates", "3"), "--replicates")


def test_diagnose_shows_resolution_per_gap_when_b_sd_is_present(tmp_path):
    path = tmp_path / "difficulty.csv"
    path.write_text("item,b_mean,b_sd\na,0.0,0.1\nb,0.1,0.1\nc,2.0,0.1\nd,2.1,0.2\n")
    rec = json.loads(run_script("diagnose_benchmark.py", path, "--json").stdout)
    assert "paper" in rec["value"]
    first, second = rec["gaps"][0], rec["gaps"][1]
    assert (first["lower_item"], first["upper_item"], first["resolved"]) == ("b", "c", True)
    assert second["resolved"] is False and second["separation"] == pytest.approx(0.1 / np.hypot(0.1, 0.2))
    assert first["width"] == pytest.approx(rec["max_gap"])
    plain = tmp_path / "plain.csv"
    plain.write_text("item,b_mean\na,0\nb,1\nc,3\n")
    assert "resolution" not in json.loads(run_script("diagnose_benchmark.py", plain, "--json").stdout)


def _fit(tmp_path, counts, k, name):
    matrix = ResponseMatrix([f"m{j}" for j in range(counts.shape[0])], [f"i{i:02d}" for i in range(counts.shape[1])],
                            counts, k)
    path = tmp_path / f"{name}.csv"
    write_matrix(matrix, path)
    out = tmp_path / name
    done = run_script("fit_irt.py", path, "--n-trials", k, "--output-dir", out, "--chains", 2, "--tune", 150,
                      "--draws", 100, "--seed", 1)
    assert done.returncode == 0, done.stderr
    with open(out / "difficulty.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return rows, json.loads((out / "diagnostics.json").read_text()), done.stderr


def test_k1_tied_items_share_one_difficulty_and_the_staircase_is_said(tmp_path):
    rng = np.random.default_rng(5)
    theta, b = rng.normal(0, 1.5, 4), rng.normal(0, 1, 30)
    counts = rng.binomial(1, 1 / (1 + np.exp(-(theta[:, None] - b[None, :]))))
    rows, diag, stderr = _fit(tmp_path, counts, 1, "k1")
    sums = counts.sum(axis=0)
    assert diag["ties"]["distinct_posteriors"] == len(set(sums)) <= 5
    assert diag["ties"]["staircase"] is True and "staircase" in stderr
    by_sum = {}
    for row, s in zip(rows, sums):
        by_sum.setdefault(int(s), set()).add((row["b_mean"], row["b_sd"]))
    assert all(len(v) == 1 for v in by_sum.values())          # exactly equal, not equal up to noise
    assert diag["dispersion"] is None                          # K = 1: no dispersion check


def test_dispersion_check_flags_all_or_none_answers(tmp_path):
    rng = np.random.default_rng(6)
    theta, b = rng.normal(0, 1.5, 6), rng.normal(0, 1, 25)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    counts = 4 * rng.binomial(1, p)                            # a model solves an item in all 4 tries or none
    _, diag, stderr = _fit(tmp_path, counts, 4, "allornone")
    disp = diag["dispersion"]
    assert disp["overdispersed"] is True and disp["observed"] > 2 > disp["replicated_high"]
    assert "dispersion check" in stderr
    honest = rng.binomial(4, p)
    _, diag, _ = _fit(tmp_path, honest, 4, "binomial")
    assert diag["dispersion"]["overdispersed"] is False


def test_benchfill_targets_resolved_gaps_first_and_warns(tmp_path, caplog):
    noisy_top = tiny_seed_set(tmp_path, [0.05, 0.05, 0.05, 0.6, 0.6])   # the widest gap's edges are 1.6 sds apart
    with caplog.at_level(logging.WARNING):
        targets = noisy_top.targets(3, n_trials=4)   # the paper's treatment ([search] unresolved = "fill")
    # resolved gaps first (widest first among them), then the widest gap, which is not resolved, with a warning
    assert [(t.left, t.right) for t in targets] == [pytest.approx((1 / 6, 0.5)), pytest.approx((0, 1 / 6)),
                                                    pytest.approx((1.6 / 3, 1.0))]
    assert any("not resolved" in r.getMessage() for r in caplog.records)
    # what to ask the panel next: the unresolved target names its edge items and the trials that would resolve it
    from benchmeasure.core.resolution import trials_to_resolve

    choice = noisy_top.target_choice(3, n_trials=4)
    assert [row["resolved"] for row in choice] == [True, True, False]
    assert (choice[2]["lower_item"], choice[2]["upper_item"]) == ("3", "4")
    assert choice[2]["extra_trials_per_model"] == trials_to_resolve(1.4, 0.6, 0.6, 4) > 0
    assert choice[0]["extra_trials_per_model"] == 0
    assert any("more trials per model on its two edge items" in r.getMessage() for r in caplog.records)
    search = type("S", (), {"parents": 2, "children": 2, "rounds": 2})()
    gap, _, _ = next_step(noisy_top.z_values(), State((), frozenset(), 0, 0, 0), Limits(max_items=3), search, 4,
                          noisy_top.sd_values())
    assert (gap.left, gap.right) == pytest.approx((1 / 6, 0.5))
    # without posterior sds the paper's order (widest first) is kept
    plain = tiny_seed_set(tmp_path / "p", [0, 0, 0, 0, 0])
    assert [(t.left, t.right) for t in plain.targets(1)] == [pytest.approx((1.6 / 3, 1.0))]


def test_noise_aware_estimate_refused_for_a_k1_fit(tmp_path):
    path, d = _draws_with_band(tmp_path)
    (tmp_path / "diagnostics.json").write_text(json.dumps({"input": {"n_trials": 1}}))
    rec = json.loads(run_script("posterior_metrics.py", path, "--json").stdout)
    for name in METRICS:
        m = rec["metrics"][name]
        assert m["estimate"] is m["low"] is m["high"] is None and "K = 1" in m["refused"]
        assert m["plugin"] == pytest.approx(diagnose(list(d.mean(axis=0))).as_dict()[name], abs=1e-12)
    assert rec["settings"]["n_trials"] == 1 and rec["population"] is None
    assert "refused (K = 1)" in run_script("posterior_metrics.py", path, "--all-intervals").stdout
