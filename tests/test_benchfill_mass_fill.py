"""Mass fill (propose/mass_fill/): stop rules and budgets, the filled benchmark's exact format, gaps recomputed
after every insertion, resume after kill -9, the lock, raising a budget on resume, and rejected inputs."""

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmeasure.benchfill.mass_fill import Limits, State, next_step, origin_order
from benchmeasure.core.metrics import largest_gaps, max_gap, normalize_min_max
from benchmeasure.serving.sim.dataset import make_sim_benchmark
from benchmeasure.serving.sim.server import serve
from benchmeasure.serving.sim.world import World
from conftest import kill_after_progress, run_in_process, wait_for_lock

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, str(REPO / "propose" / "mass_fill" / "mass_fill.py")]
SEARCH = SimpleNamespace(rounds=8, parents=4, children=4)


def state(inserted=(), tried=(), rounds=0, calls=0):
    return State(tuple({"z": z} for z in inserted), frozenset(tried), len(inserted) + len(tried), rounds, calls)


def test_next_step_targets_widest_untried_gap_and_caps_budgets():
    z = [0.0, 0.1, 0.5, 0.6, 1.0]  # gaps 0.4 (0.1-0.5), 0.4 (0.6-1.0), 0.1, 0.1
    gap, budget, reason = next_step(z, state(), Limits(max_items=5), SEARCH, 14)
    assert (gap.left, gap.right, budget, reason) == (0.1, 0.5, 128, "")
    gap, _, _ = next_step(z, state(tried=[(0.1, 0.5)]), Limits(max_items=5), SEARCH, 14)
    assert (gap.left, gap.right) == (0.6, 1.0)
    # rounds: 3 of 5 spent -> 2 rounds of 16 rewrites
    assert next_step(z, state(rounds=3), Limits(max_rounds=5), SEARCH, 14)[1] == 32
    # calls: 200 left at 14 per rewrite -> 14 rewrites -> 12 (whole parents of 4 children)
    assert next_step(z, state(calls=800), Limits(max_calls=1000), SEARCH, 14)[1] == 12
    assert "call budget" in next_step(z, state(calls=950), Limits(max_calls=1000), SEARCH, 14)[2]
    assert "rounds spent" in next_step(z, state(rounds=5), Limits(max_rounds=5), SEARCH, 14)[2]
    assert "items inserted" in next_step(z, state(inserted=[0.3]), Limits(max_items=1), SEARCH, 14)[2]
    assert "reached" in next_step(z, state(), Limits(target_max_gap=0.4, max_items=9), SEARCH, 14)[2]
    # every gap above the target tried: stop although Max Gap > target
    tried = [(0.1, 0.5), (0.6, 1.0)]
    assert "no untried gap" in next_step(z, state(tried=tried), Limits(target_max_gap=0.2, max_items=9), SEARCH, 14)[2]


def test_limits_and_origin_ids_checked():
    from benchmeasure.base.errors import InputError

    for bad in (Limits(), Limits(target_max_gap=0.1), Limits(target_max_gap=1.0, max_items=2), Limits(max_calls=0)):
        with pytest.raises(InputError):
            bad.check("x")
    items = [SimpleNamespace(item_id=i) for i in ("10", "2", "0")]
    assert [n for _, n in origin_order(SimpleNamespace(name="b", items=items))] == [0, 2, 10]
    with pytest.raises(InputError, match="not an integer"):
        origin_order(SimpleNamespace(name="b", items=[SimpleNamespace(item_id="q1")]))


# -- through the command line, against the simulated server ----------------------------------------------
def sim(tmp_path, seed=1):
    data = tmp_path / "data"
    config = make_sim_benchmark(data, seed, search={"rounds": 2}, truth=True)
    server, url = serve(World.load(data / "world.json"), seed=seed)
    return config, server, {**os.environ, "BENCHFILL_SIM_URL": url}


def cli(*args, env=None, **kw):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, env=env, **kw)


def events(folder):
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def check_outputs(folder, data):
    """Everything the issue specifies about the outputs, recomputed independently from the inputs."""
    filled = json.loads((folder / "filled_benchmark.json").read_text())
    pool = [json.loads(line) for line in (data / "test.jsonl").read_text().splitlines()]
    pool.sort(key=lambda r: int(r["item_id"]))
    n = len(pool)
    assert [e["id"] for e in filled[:n]] == [f"MATH_SIM-origin-{int(r['item_id']):03d}" for r in pool]
    assert [e["id"] for e in filled[:3]] == ["MATH_SIM-origin-000", "MATH_SIM-origin-001", "MATH_SIM-origin-002"]
    assert [{"question": e["question"], "answer": e["answer"]} for e in filled[:n]] == \
        [{"question": r["question"], "answer": r["answer"]} for r in pool]
    added = filled[n:]
    assert [e["id"] for e in added] == [f"MATH_SIM-fill-{i:03d}" for i in range(1, len(added) + 1)]
    assert all(set(e) == {"id", "question", "answer"} for e in filled)
    rows = list(csv.DictReader(open(folder / "mass_fill_records.csv", encoding="utf-8")))
    assert [r["fill_id"] for r in rows] == [e["id"] for e in added]
    assert [(r["question"], r["answer"]) for r in rows] == [(e["question"], e["answer"]) for e in added]
    # replay: each step targeted the widest untried gap of originals + items inserted before it
    calibration = list(csv.DictReader(open(data / "calibration.csv")))
    b = [float(r["b_mean"]) for r in calibration]
    z = normalize_min_max(b)
    tried, log = set(), events(folder)
    results = {e["step"]: e for e in log if e["type"] == "mass_result"}
    inserted = iter(rows)
    for step in (e for e in log if e["type"] == "mass_step"):
        widest = next(g for g in largest_gaps(z) if (g.left, g.right) not in tried)
        assert (step["left"], step["right"]) == (widest.left, widest.right)
        result = results[step["step"]]
        if result["accepted"]:
            row = next(inserted)
            assert int(row["gap"]) == step["step"] and step["left"] < float(row["z"]) < step["right"]
            assert abs(float(row["z"]) - (float(row["b_mean"]) - min(b)) / (max(b) - min(b))) < 1e-9
            z.append(float(row["z"]))
            assert float(row["max_gap_after"]) == pytest.approx(max_gap(z))
        else:
            tried.add((step["left"], step["right"]))
    summary = json.loads((folder / "mass_fill_summary.json").read_text())
    assert summary["items_added"] == len(added) and summary["after"]["items"] == n + len(added)
    assert summary["after"]["max_gap"] == pytest.approx(max_gap(z))
    assert summary["before"]["max_gap"] == pytest.approx(max_gap(normalize_min_max(b)))
    assert summary["calls"]["recorded"] == sum(e["type"] == "call" for e in log)
    assert set(summary["inputs"]) == {"calibration", "pool", "matrix", "abilities"} and summary["versions"]["python"]
    return filled, summary


@pytest.mark.slow
def test_end_to_end_format_and_raised_budget(tmp_path):
    config, server, env = sim(tmp_path)
    try:
        made = cli("init", "--config", config, "--name", "m", "--results", tmp_path / "res", "--max-items", 3,
                   "--target-max-gap", 0.02, env=env)
        assert made.returncode == 0, made.stderr
        folder = Path(made.stdout.strip())
        done = cli("run", folder, env=env)
        assert done.returncode == 0, done.stderr
        assert "3 items inserted" in done.stdout and "Max Gap" in done.stdout
        first, summary = check_outputs(folder, tmp_path / "data")
        assert summary["items_added"] == 3 and summary["after"]["max_gap"] < summary["before"]["max_gap"]
        # go on with a raised item budget and a call budget: earlier items keep their ids, calls stay within it
        calls = summary["calls"]["recorded"]
        more = cli("run", folder, "--max-items", 10, "--max-calls", calls + 700, env=env)
        assert more.returncode == 0, more.stderr
        second, summary = check_outputs(folder, tmp_path / "data")
        assert second[:len(first)] == first and len(second) > len(first)
        assert calls < summary["calls"]["recorded"] <= calls + 700
        assert "call budget" in summary["stop_reason"]
        assert summary["limits"]["max_items"] == 10
        status = cli("status", folder, env=env)
        assert status.returncode == 0 and "not running" in status.stdout and "inserted" in status.stdout
    finally:
        server.shutdown()


@pytest.mark.slow
def test_resume_after_kill_9_and_lock(tmp_path):
    config, server, env = sim(tmp_path, seed=2)
    rng, alive = random.Random(5), []
    try:
        made = cli("init", "--config", config, "--name", "k", "--results", tmp_path / "res", "--max-items", 5,
                   env=env)
        folder = Path(made.stdout.strip())
        for attempt in range(3):
            if attempt == 0:
                server.sim.pause()  # hold the first run in progress while a second one is refused
            proc = subprocess.Popen([*CLI, "run", str(folder)], env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            if attempt == 0:
                wait_for_lock(folder, proc)
                second = cli("run", folder, env=env)
                assert second.returncode == 2 and second.stderr.count("\n") == 1
                assert "already in progress" in second.stderr
                server.sim.resume()
            # a full run journals ~1,170 events: three kills of at most 250 events each land mid-run
            alive.append(kill_after_progress(folder, proc, rng.randint(50, 250)))
            assert "not running" in cli("status", folder, env=env).stdout
        assert all(alive)  # every kill hit a run in progress
        done = cli("run", folder, env=env)
        assert done.returncode == 0, done.stderr
    finally:
        server.shutdown()
    _, summary = check_outputs(folder, tmp_path / "data")
    assert summary["items_added"] == 5
    log = events(folder)
    keys = [e["key"] for e in log if e["type"] == "call"]
    assert len(keys) == len(set(keys))  # no finished call repeated
    notes = [e["item_id"] for e in log if e["type"] == "annotation"]
    assert len(notes) == len(set(notes))
    steps = [e["step"] for e in log if e["type"] == "mass_step"]
    assert steps == list(range(1, len(steps) + 1))
    assert sorted(e["step"] for e in log if e["type"] == "mass_result") == steps
    plans = [e for e in log if e["type"] == "plan"]
    expected = {f"benchfill-g{p['gap']}-r{p['round']}-p{i}-c{c}" for p in plans
                for i in range(len(p["parents"])) for c in range(4)}
    assert set(notes) == expected  # every planned child annotated exactly once


@pytest.mark.slow  # six CLI starts
def test_cli_rejects_bad_input(tmp_path):
    config = make_sim_benchmark(tmp_path / "data", 1, truth=True)
    res = tmp_path / "res"
    cases = [
        ("init", "--config", config, "--results", res),  # no budget
        ("init", "--config", config, "--results", res, "--max-items", 3, "--target-max-gap", 1.5),
        ("init", "--config", config, "--results", res, "--max-calls", 0),
        ("init", "--config", tmp_path / "none.toml", "--results", res, "--max-items", 3),
        ("run", tmp_path / "nowhere"),
        ("status", tmp_path / "nowhere"),
    ]
    # item IDs that cannot become <BENCH>-origin-NNN
    bad = tmp_path / "bad"
    bad_config = make_sim_benchmark(bad, 1, truth=True)
    header, *rows = (bad / "calibration.csv").read_text().splitlines()
    (bad / "calibration.csv").write_text("\n".join([header, *("q" + row for row in rows)]) + "\n")
    pool = (bad / "test.jsonl").read_text()
    (bad / "test.jsonl").write_text(pool.replace('"item_id": "', '"item_id": "q'))
    cases.append(("init", "--config", bad_config, "--results", res, "--max-items", 3))
    for k, args in enumerate(cases):   # the first and the last in real processes, the rest through the same entry point
        done = cli(*args) if k in (0, len(cases) - 1) else run_in_process("mass-fill", *args, prog="mass_fill.py")
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert not res.exists()
    # a plain BenchFill folder is not a mass-fill folder, and 'benchfill.py run' refuses a mass-fill folder
    plain = subprocess.run([sys.executable, str(REPO / "propose" / "benchfill.py"), "init", "--config", str(config),
                            "--name", "plain", "--results", str(res)], capture_output=True, text=True, check=True)
    done = cli("run", plain.stdout.strip())
    assert done.returncode == 2 and "not a mass-fill folder" in done.stderr
    mass = cli("init", "--config", config, "--name", "mass", "--results", res, "--max-rounds", 2)
    assert mass.returncode == 0, mass.stderr
    done = subprocess.run([sys.executable, str(REPO / "propose" / "benchfill.py"), "run", mass.stdout.strip()],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "mass-fill folder" in done.stderr
    assert not (Path(mass.stdout.strip()) / "events.jsonl").exists()


def test_help_has_examples():
    done = cli("--help")
    assert done.returncode == 0 and "examples:" in done.stdout and "--target-max-gap" in done.stdout
    for command in ("init", "run"):
        text = cli(command, "--help").stdout
        assert "--max-items" in text and "--max-calls" in text and "--max-rounds" in text
    shell = subprocess.run(["bash", str(REPO / "run_experiment.sh"), "--help"], capture_output=True, text=True)
    assert shell.returncode == 0 and "mass-fill NAME" in shell.stdout
    bare = subprocess.run(["bash", str(REPO / "run_experiment.sh"), "mass-fill"], capture_output=True, text=True)
    assert bare.returncode == 2 and bare.stderr.count("\n") == 1
