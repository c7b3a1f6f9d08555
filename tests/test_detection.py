"""Tests of the stratified randomization test for localized improvements (paper Table 12)."""

import json
import subprocess
import sys
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import hypergeom

from benchmeasure.analyses.detection import PrePost, read_pre_post, stratified_test, tallies_from_outcomes

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "detect_improvement.py"


def _exact_p(data: PrePost) -> float:
    """P(G* >= G) by enumerating every combination of per-item post-success counts."""
    n = data.pre_n + data.post_n
    t = data.pre_s + data.post_s
    observed = data.gain()
    p = 0.0
    supports = [range(max(0, d - (ni - ti)), min(ti, d) + 1) for ni, ti, d in zip(n, t, data.post_n)]
    for xs in product(*supports):
        x = np.array(xs)
        g = np.mean(x / data.post_n - (t - x) / data.pre_n)
        if g >= observed - 1e-12:
            p += np.prod([hypergeom(ni, ti, d).pmf(xi) for ni, ti, d, xi in zip(n, t, data.post_n, x)])
    return p


def test_gain_by_hand():
    data = PrePost(["a", "b"], np.array([4, 2]), np.array([1, 1]), np.array([4, 4]), np.array([3, 2]))
    # item a: 3/4 - 1/4 = 0.5; item b: 2/4 - 1/2 = 0 → mean 0.25
    assert data.gain() == pytest.approx(0.25)


@pytest.mark.parametrize("data", [
    PrePost(["a", "b", "c"], np.array([4, 4, 4]), np.array([1, 2, 0]), np.array([4, 4, 4]), np.array([3, 2, 2])),
    # unbalanced rollouts: the float comparison path
    PrePost(["a", "b", "c"], np.array([3, 5, 2]), np.array([1, 2, 0]), np.array([4, 2, 6]), np.array([3, 1, 4])),
])
def test_monte_carlo_p_matches_exact_randomization_distribution(data):
    exact = _exact_p(data)
    b = 200_000
    result = stratified_test(data, permutations=b, seed=11)
    se = np.sqrt(exact * (1 - exact) / b)
    assert abs(result.p_value - exact) < 4 * se + 1 / b


def test_seeded_and_reproducible():
    data = PrePost(["a", "b"], np.array([8, 8]), np.array([2, 5]), np.array([8, 8]), np.array([5, 6]))
    assert stratified_test(data, 5000, seed=3) == stratified_test(data, 5000, seed=3)
    assert stratified_test(data, 5000, seed=3).p_value != stratified_test(data, 5000, seed=4).p_value


def test_constant_items_only_give_p_one():
    data = PrePost(["a", "b"], np.array([4, 4]), np.array([0, 4]), np.array([4, 4]), np.array([0, 4]))
    result = stratified_test(data, 100, seed=0)
    assert result.gain == 0 and result.p_value == 1.0


def test_null_rejection_rate_is_alpha_within_binomial_error():
    rng = np.random.default_rng(2026)
    sims, alpha = 1000, 0.05
    rejections = 0
    for r in range(sims):
        p = rng.uniform(0.2, 0.8, 20)
        pre = [rng.random(16) < q for q in p]
        post = [rng.random(16) < q for q in p]
        rejections += stratified_test(tallies_from_outcomes(range(20), pre, post), 499, seed=r).p_value < alpha
    rate = rejections / sims
    assert abs(rate - alpha) < 3 * np.sqrt(alpha * (1 - alpha) / sims)


def _pre_curve(z):
    return 1 / (1 + np.exp(-14 * (0.5 - z)))


def _rejection_rate(z, sims, rng, interval=(0.58, 0.72), lift=0.8):
    """Share of simulated pre/post runs (32 rollouts) in which the improvement is detected."""
    inside = (z >= interval[0]) & (z <= interval[1])
    post_p = np.where(inside, np.minimum(1, _pre_curve(z) + lift), _pre_curve(z))
    hits = 0
    for r in range(sims):
        pre = [rng.random(32) < q for q in _pre_curve(z)]
        post = [rng.random(32) < q for q in post_p]
        hits += stratified_test(tallies_from_outcomes(range(len(z)), pre, post), 999, seed=r).p_value < 0.05
    return hits / sims


def test_planted_improvement_detected_only_when_items_cover_it():
    # 30 items leave the interval (0.55, 0.75) uncovered; the improvement lies inside it
    gapped = np.r_[np.linspace(0, 0.55, 18), np.linspace(0.75, 1, 12)]
    covered = np.r_[gapped, 0.6, 0.65, 0.7]
    rng = np.random.default_rng(5)
    sims = 100
    assert _rejection_rate(covered, sims, rng) >= 0.9
    # with no item inside, post and pre have the same distribution: only false alarms remain
    assert _rejection_rate(gapped, sims, rng) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / sims)


# ---- input reading and the command line ----

def _write_rows(path, rows, header="model,item_id,trial,correct,condition"):
    path.write_text(header + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")


def _responses(path):
    rows = []
    for model, lift in (("m1", 0), ("m2", 1)):
        for item in ("q0", "q1", "q2"):
            for trial in range(4):
                rows.append((model, item, trial, int(trial < 2), "pre"))
                rows.append((model, item, trial, int(trial < 2 + lift * 2), "post"))
    _write_rows(path, rows)


def test_read_pre_post_tallies(tmp_path):
    path = tmp_path / "r.csv"
    _responses(path)
    data = read_pre_post(path)
    assert list(data) == ["m1", "m2"]
    assert data["m2"].items == ["q0", "q1", "q2"]
    assert data["m2"].post_s.tolist() == [4, 4, 4] and data["m2"].pre_s.tolist() == [2, 2, 2]
    assert data["m1"].gain() == 0 and data["m2"].gain() == pytest.approx(0.5)


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_cli_json_and_output_file(tmp_path):
    path = tmp_path / "r.csv"
    _responses(path)
    out_file = tmp_path / "out" / "detection.json"
    out = _run(path, "--permutations", 2000, "--seed", 1, "--json", "--output", out_file)
    assert out.returncode == 0, out.stderr
    records = json.loads(out.stdout)
    assert json.loads(out_file.read_text()) == records
    by_model = {r["model"]: r for r in records}
    assert by_model["m2"]["gain"] == pytest.approx(0.5) and by_model["m2"]["gain_points"] == pytest.approx(50)
    # each item: 6 successes among 8 rollouts, P(all 4 post rollouts succeed) = C(6,4)/C(8,4) = 15/70,
    # and G* >= G needs that on all three items: p ≈ (15/70)^3 ≈ 0.0098
    assert by_model["m2"]["p_value"] < 0.01 and by_model["m2"]["detected"] is True
    assert by_model["m1"]["p_value"] > 0.3
    assert by_model["m2"]["permutations"] == 2000 and by_model["m2"]["seed"] == 1
    assert len(by_model["m2"]["input_sha256"]) == 64
    text = _run(path, "--permutations", 500)
    assert text.returncode == 0 and "| m2 | 3 | +50.000 |" in text.stdout


@pytest.mark.parametrize("rows, header, fragment", [
    ([("m", "q0", 0, 1, "pre")], "model,item_id,trial,correct", "no column 'condition'"),
    ([("m", "q0", 0, 1, "pre"), ("m", "q0", 0, 1, "during")], None, "condition 'during'"),
    ([("m", "q0", 0, 2, "pre")], None, "correct is '2'"),
    ([("m", "q0", 0, 1, "pre"), ("m", "q0", 0, 0, "post"), ("m", "q1", 0, 1, "pre")], None,
     "item 'q1': has pre responses but no post responses"),
    ([("m", "q0", 0, 1, "pre"), ("m", "q0", 0, 0, "pre")], None, "duplicate pre trial '0'"),
])
def test_cli_rejects_bad_input(tmp_path, rows, header, fragment):
    path = tmp_path / "bad.csv"
    _write_rows(path, rows, header or "model,item_id,trial,correct,condition")
    out_file = tmp_path / "o.json"
    out = _run(path, "--output", out_file, "--permutations", 10)
    assert out.returncode == 2 and out.stdout == "" and not out_file.exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0], out.stderr


def test_cli_rejects_bad_options(tmp_path):
    path = tmp_path / "r.csv"
    _responses(path)
    for args in (("--permutations", 0), ("--alpha", 1.5)):
        out = _run(path, *args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    out = _run(tmp_path / "missing.csv")
    assert out.returncode == 2 and "no such file" in out.stderr
