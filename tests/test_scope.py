"""benchmeasure scope: bounds against exact binomial tails, certification, resume after kill -9, bad input.

The model is the simulated solver (benchmeasure.serving.sim.scope_world) behind the real HTTP server on loopback.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from benchmeasure.base.errors import InputError
from benchmeasure.scope.arms import Pool
from benchmeasure.scope.bounds import Certifier, kl_bounds
from benchmeasure.scope.space import read_space, space_from_dict
from benchmeasure.serving.sim.scope_world import ScopeWorld
from benchmeasure.serving.sim.server import serve
from conftest import ROOT, assert_rejected, run_script

HARD_SPACE = """\
terms: {type: int, low: 10, high: 11}
digits: {type: int, low: 9, high: 10}
ops: {type: categorical, choices: [mul]}
distractors: {type: int, low: 23, high: 24}
"""
GENERATOR = "benchmeasure.scope.arithmetic:arithmetic"


@pytest.fixture(scope="module")
def solver():
    server, url = serve(ScopeWorld(seed=0))
    yield url
    server.shutdown()


def scope_args(space, url, out, budget=300, strategy="shared", seed=0, generator=GENERATOR, threshold=0.9):
    return ["--space", space, "--generator", generator, "--endpoint", url, "--model", "sim-solver",
            "--budget", budget, "--utility", "error", "--threshold", threshold, "--delta", 0.05, "--strategy", strategy,
            "--seed", seed, "--output-dir", out, "--concurrency", 4]


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (47, 50), (200, 200), (150, 400), (1, 1)])
@pytest.mark.parametrize("delta", [0.05, 1e-6])
def test_kl_bounds_hold_against_the_exact_binomial_tail(k, n, delta):
    lower, upper = (float(v[0]) for v in kl_bounds(k, n, delta))
    # the exact chance of a count this extreme, were the rate at the bound, is at most delta (Chernoff) ...
    assert stats.binom.sf(k - 1, n, lower) <= delta * (1 + 1e-6) or k == 0
    assert stats.binom.cdf(k, n, upper) <= delta * (1 + 1e-6) or k == n
    # ... so the KL bounds are no tighter than the exact (Clopper-Pearson) one-sided bounds at delta
    exact_lower = stats.beta.ppf(delta, k, n - k + 1) if k > 0 else 0.0
    exact_upper = stats.beta.ppf(1 - delta, k + 1, n - k) if k < n else 1.0
    assert lower <= exact_lower + 1e-9 and upper >= exact_upper - 1e-9
    # and not much looser: within the exact bounds at delta / (n + 1)
    assert lower >= (stats.beta.ppf(delta / (n + 1), k, n - k + 1) if k > 0 else 0.0) - 1e-9


def test_certifier_is_valid_for_near_misses_and_certifies_sure_failures():
    space = space_from_dict({"x": {"type": "int", "low": 0, "high": 299}}, "t")
    rng = np.random.default_rng(1)
    pool = Pool(space, Certifier(0.05, 100_000, space.size), lambda c: 0.9)
    for x in range(300):  # 300 configurations just under the threshold, 300 pulls each
        arm = pool.add({"x": x})
        for error in rng.random(300) < 0.87:
            pool.record(arm, error)
    assert not pool.certified().any()
    sure = Pool(space, Certifier(0.05, 100_000, space.size), lambda c: 0.9)
    arm = sure.add({"x": 0})
    for _ in range(400):
        sure.record(arm, True)
    assert sure.certified()[0]
    n = len(sure.outcomes[0])
    assert sure.lower[0] >= 0.9 and sure.certified_at[0] < n
    # certified at the first checkpoint whose exact bound passes 0.9
    assert sure.certified_at[0] in sure.certifier.point_set
    assert kl_bounds(sure.certified_at[0], sure.certified_at[0], sure.certifier.delta_each)[0][0] >= 0.9


def test_search_certifies_hard_configurations_through_http(solver, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(HARD_SPACE)
    out = tmp_path / "out"
    result = run_script("scope.py", *scope_args(space, solver, out, budget=300, threshold=0.8))
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(open(out / "certified.csv")))
    assert list(rows[0]) == ["terms", "digits", "ops", "distractors", "pulls", "mean", "lower", "upper"]
    assert all(float(r["lower"]) >= 0.8 and float(r["mean"]) >= float(r["lower"]) for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pulls"] <= 300 and summary["certified"] == len(rows) >= 1
    assert summary["model_usage"]["calls"] == summary["pulls"]  # stops early once all 8 are certified


def test_resume_after_kill_9_loses_and_repeats_no_call(solver, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(HARD_SPACE)
    out = tmp_path / "out"
    args = [sys.executable, str(ROOT / "scripts" / "scope.py"), *map(str, scope_args(space, solver, out, 400))]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    journal = out / "journal.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and (not journal.exists() or journal.read_bytes().count(b"\n") < 120):
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = journal.read_bytes().count(b"\n")
    assert 120 <= before < 400
    resumed = run_script("scope.py", *scope_args(space, solver, out, 400))
    assert resumed.returncode == 0, resumed.stderr
    usage = json.loads((out / "summary.json").read_text())["model_usage"]
    keys = [json.loads(line)["key"] for line in journal.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 400
    assert usage["cached"] == before and usage["calls"] == 400 - before


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.text(max_size=200),
    st.dictionaries(st.text(max_size=8), st.dictionaries(
        st.sampled_from(["type", "low", "high", "choices", "x"]),
        st.one_of(st.sampled_from(["int", "float", "categorical", "bool"]), st.integers(-5, 5),
                  st.floats(allow_nan=True), st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=4),
                  st.none())), max_size=4)))
def test_space_reader_fuzz(tmp_path, content):
    path = tmp_path / "space.yaml"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    try:
        space = read_space(path)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    rng = np.random.default_rng(0)
    for _ in range(5):
        config = space.sample(rng)
        assert all(p.check(config[p.name], "x") == config[p.name] for p in space.params)
        assert len(space.features(config)) == space.n_features


def test_bad_space_is_one_error_line_and_nothing_written(solver, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("terms: {type: int, low: 5, high: 2}\n")
    result = run_script("scope.py", *scope_args(space, solver, tmp_path / "out"))
    assert_rejected(result, "space.yaml", "terms", "above high")
    assert not (tmp_path / "out").exists()


def test_a_strategy_option_reaches_the_strategy_and_a_bad_one_is_refused(solver, tmp_path):
    """``--option KEY=VALUE`` sets a setting the chosen strategy declares (its registry entry's ``options``)."""
    space = tmp_path / "space.yaml"
    space.write_text(HARD_SPACE)
    out = tmp_path / "out"
    args = scope_args(space, solver, out, budget=40, strategy="uniform", threshold=0.99)
    result = run_script("scope.py", *args, "--option", "pulls_each=20")
    assert result.returncode == 0, result.stderr
    assert len(list(csv.DictReader(open(out / "configurations.csv")))) == 2   # 40 pulls / 20 each (10 each: 4)
    assert json.loads((out / "settings.json").read_text())["strategy_options"] == {"pulls_each": 20}
    resumed = run_script("scope.py", *args)   # the same folder without the option: other settings, refused
    assert_rejected(resumed, "strategy_options differ")
    refused = run_script("scope.py", *scope_args(space, solver, tmp_path / "x", strategy="shared"), "--option",
                         "pulls_each=20")
    assert_rejected(refused, "--option pulls_each", "shared strategy", "accepted: prior_sd, effect_sd, chunk")
    low = run_script("scope.py", *scope_args(space, solver, tmp_path / "x", strategy="uniform"), "--option",
                     "pulls_each=5")
    assert_rejected(low, "--option pulls_each", "outside the allowed range")
    assert not (tmp_path / "x").exists()


def test_unreachable_endpoint_is_one_error_line(tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(HARD_SPACE)
    result = run_script("scope.py", *scope_args(space, "http://127.0.0.1:9/v1", tmp_path / "out"))
    assert_rejected(result, "--endpoint", "unreachable")
    assert not (tmp_path / "out").exists()


def test_generator_that_raises_mid_search_keeps_finished_calls(solver, tmp_path):
    (tmp_path / "flaky_gen.py").write_text(
        "from benchmeasure.scope.arithmetic import arithmetic\n"
        "calls = [0]\n"
        "def gen(config, seed):\n"
        "    calls[0] += 1\n"
        "    if calls[0] > 60:\n"
        "        raise RuntimeError('template broke')\n"
        "    return arithmetic(config, seed)\n")
    space = tmp_path / "space.yaml"
    space.write_text(HARD_SPACE)
    env_path = f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "scope.py"),
                             *map(str, scope_args(space, solver, tmp_path / "out", generator="flaky_gen:gen"))],
                            capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": env_path})
    assert_rejected(result, "flaky_gen:gen", "RuntimeError", "template broke")
    lines = (tmp_path / "out" / "journal.jsonl").read_text().splitlines()
    assert 30 <= len(lines) <= 60 and not (tmp_path / "out" / "certified.csv").exists()
    missing = run_script("scope.py", *scope_args(space, solver, tmp_path / "o2", generator="no_such_mod:gen"))
    assert_rejected(missing, "no_such_mod")


def test_band_search_through_a_panel(solver, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("terms: {type: int, low: 4, high: 6}\ndigits: {type: int, low: 8, high: 9}\n"
                     "ops: {type: categorical, choices: [add]}\ndistractors: {type: int, low: 0, high: 2}\n")
    examples = ROOT / "docs" / "examples"
    args = scope_args(space, solver, tmp_path / "out", budget=240)
    args = [a for a in args if a != "sim-solver"]
    args[args.index("--model"):args.index("--model") + 1] = ["--model", "sim-weak", "--model", "sim-solver",
                                                             "--model", "sim-strong"]
    args[args.index("error")] = "band"
    result = run_script("scope.py", *args, "--band", 0.347, 0.599, "--abilities", examples / "sim_panel_ability.csv",
                        "--difficulty", examples / "gapped_difficulty.csv")
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    low, high = summary["settings"]["band"]["error_interval"]
    assert 0 < low < high < 1 and summary["pulls"] == 240
    models = {json.loads(line)["model"] for line in (tmp_path / "out" / "journal.jsonl").read_text().splitlines()}
    assert models == {"sim-weak", "sim-solver", "sim-strong"}
    for row in csv.DictReader(open(tmp_path / "out" / "certified.csv")):
        assert low <= float(row["lower"]) and float(row["upper"]) <= high


def test_band_thresholds_invert_to_the_band():
    from benchmeasure.scope.utility import band_thresholds, z_of_error

    panel = [-1.2, 0.3, 0.9]
    low, high = band_thresholds(panel, 0.3, 0.55, -4.0, 5.0)
    assert z_of_error(panel, low, -4.0, 5.0) == pytest.approx(0.3, abs=1e-9)
    assert z_of_error(panel, high, -4.0, 5.0) == pytest.approx(0.55, abs=1e-9)


def test_lucb_gives_half_the_batch_to_the_incumbent():
    # lucb: what this project called "quickscope" before issue 33 (the published one: test_scope_quickscope.py)
    from benchmeasure.scope.strategies import make_strategy

    space = space_from_dict({"x": {"type": "int", "low": 0, "high": 99}}, "t")
    pool = Pool(space, Certifier(0.05, 10_000, space.size), lambda c: 0.9)
    strategy = make_strategy("lucb", pool, 0, 10_000, 16, {"pool_start": 8})
    for arm in range(len(pool)):
        for i in range(30):
            pool.record(arm, i < 30 - arm)  # arm 0 errs always: the highest lower bound
    batch = strategy.next_batch(16)
    assert batch.count(0) == 8 and len(batch) == 16


def test_bad_complexity_expression_is_rejected(solver, tmp_path):
    from benchmeasure.scope.utility import Complexity

    space = tmp_path / "space.yaml"
    space.write_text(HARD_SPACE)
    args = scope_args(space, solver, tmp_path / "out")
    args[args.index("error")] = "complexity"
    assert_rejected(run_script("scope.py", *args, "--complexity", "__import__('os')"), "--complexity", "only log")
    parsed = read_space(space)
    for expression, fragment in [("terms*", "not a valid expression"), ("ops*2", "not a numeric parameter"),
                                 ("terms - 10", "positive")]:
        with pytest.raises(InputError, match=fragment):
            Complexity(expression, parsed)({"terms": 10, "digits": 9, "ops": "mul", "distractors": 23})
    assert Complexity("terms*log(digits)", parsed)({"terms": 10, "digits": 9}) == pytest.approx(10 * np.log(9))


def test_reasoning_gym_adapter_generates_and_grades_offline():
    pytest.importorskip("reasoning_gym")
    from benchmeasure.scope.generators import generate, load_generator

    function = load_generator("benchmeasure.scope.rg:basic_arithmetic")
    question, grader = generate(function, "rg", {"terms": 2, "digits": 1}, 7)
    _, answer, _ = function({"terms": 2, "digits": 1}, 7)
    assert "Give only the final answer" in question and grader(answer) and grader(f"<answer>{answer}</answer>")
    assert not grader(str(int(answer) + 1))
    with pytest.raises(InputError, match="no task"):
        load_generator("benchmeasure.scope.rg:no_such_task")
    with pytest.raises(InputError, match="no setting 'colour'"):
        generate(function, "rg", {"colour": 1}, 0)


def test_gap_band_takes_resolved_gaps_first(tmp_path, solver, caplog):
    """--gap R picks the band in BenchFill's gap order (core.resolution.resolved_first), through the CLI."""
    from benchmeasure.scope.utility import gap_band

    # a wide gap (1.0 → 2.2) whose edge items are noisy, and a narrower one (3.0 → 3.8) between sure items
    b = [0.0, 0.5, 1.0, 2.2, 2.6, 3.0, 3.8, 4.0]
    sd = [0.1, 0.1, 0.6, 0.6, 0.1, 0.1, 0.1, 0.1]
    first = gap_band(b, sd, 1, n_trials=4)
    assert (first["low"], first["high"]) == (pytest.approx(3.0 / 4), pytest.approx(3.8 / 4)) and first["resolved"]
    with caplog.at_level(logging.WARNING, logger="benchmeasure.scope.utility"):
        second = gap_band(b, sd, 4, n_trials=4)   # after the three resolved gaps (0.8, 0.5, 0.4 units wide)
    assert (second["low"], second["high"], second["paper_rank"]) == (pytest.approx(0.25), pytest.approx(0.55), 1)
    assert not second["resolved"] and second["extra_trials_per_model"] > 0 and "not resolved" in caplog.text
    assert gap_band(b, [0.0] * len(b), 1)["paper_rank"] == 1       # no sds: the paper's order
    difficulty = tmp_path / "difficulty.csv"
    difficulty.write_text("item,b_mean,b_sd\n" + "".join(f"q{i},{v},{s}\n" for i, (v, s) in enumerate(zip(b, sd))))
    space = tmp_path / "space.yaml"
    space.write_text("terms: {type: int, low: 4, high: 5}\ndigits: {type: int, low: 8, high: 8}\n"
                     "ops: {type: categorical, choices: [add]}\ndistractors: {type: int, low: 0, high: 1}\n")
    args = scope_args(space, solver, tmp_path / "out", budget=16)
    args[args.index("error")] = "band"
    panel = ROOT / "docs" / "examples" / "sim_panel_ability.csv"
    both = run_script("scope.py", *args, "--band", 0.1, 0.2, "--gap", 1, "--abilities", panel,
                      "--difficulty", difficulty)
    assert_rejected(both, "one of --band LO HI or --gap R")
    args[args.index("sim-solver")] = "sim-weak"
    result = run_script("scope.py", *args, "--gap", 4, "--abilities", panel, "--difficulty", difficulty)
    assert result.returncode == 0, result.stderr
    assert "not resolved" in result.stderr
    band = json.loads((tmp_path / "out" / "summary.json").read_text())["settings"]["band"]
    assert band["z_band"] == [pytest.approx(0.25), pytest.approx(0.55)] and band["gap"]["resolved"] is False
