"""Issue 30, item 2: ``[search] unresolved = "resolve"`` asks the panel for the extra trials on the edge items of
the unresolved widest gaps before any rewrite, recalibrates them and chooses the targets again; a noise gap
closes, a real one is kept and filled; a kill -9 while asking and a resume give the same run.

The world: the simulated benchmark with its true difficulties as the calibration, made uncertain on purpose.
The edge items of the widest true gap get posterior sd 0.45 (a real gap that is not resolved), and one item is
moved into the second widest true gap with sd 0.45 (a noise item that splits a real gap in two)."""

from __future__ import annotations

import csv
import json
import os
import subprocess

import pytest

from benchmeasure.benchfill.resolve import requests
from conftest import BENCHFILL_CLI as CLI
from conftest import assert_rejected, kill_after_progress

SEARCH = {"rounds": 1, "gaps": 3, "keep": "closest", "unresolved": "resolve"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """(config, data folder, true z per item, the real gap's edge items, the moved item)."""
    from benchmeasure.serving.sim.dataset import make_sim_benchmark

    data = tmp_path_factory.mktemp("resolve") / "data"
    config = make_sim_benchmark(data, 1, search=SEARCH, truth=True)
    rows = list(csv.DictReader(open(data / "calibration.csv", encoding="utf-8")))
    b = {r["item_id"]: float(r["b_mean"]) for r in rows}
    order = sorted(b, key=b.get)
    widths = sorted(range(len(order) - 1), key=lambda k: b[order[k + 1]] - b[order[k]])
    real = (order[widths[-1]], order[widths[-1] + 1])
    second = (b[order[widths[-2]]] + b[order[widths[-2] + 1]]) / 2
    moved = order[5]                      # an interior item, far from both gaps
    with open(data / "calibration.csv", "w", encoding="utf-8") as handle:
        handle.write("item_id,b_mean,b_sd\n")
        for item in b:
            value, sd = (second, 0.45) if item == moved else (b[item], 0.45 if item in real else 0.04)
            handle.write(f"{item},{value},{sd}\n")
    low, high = min(b.values()), max(b.values())
    truth = {item: (v - low) / (high - low) for item, v in b.items()}
    return config, data, truth, real, moved


def command(data, *args, kill_after=None):
    """``propose/benchfill.py ARGS`` against a fresh sim server (the simulation seeds a request it has seen before
    differently, so a resumed run's repeated calls get the replies a straight run got only from a fresh one);
    with ``kill_after``, SIGKILL it once the journal of run folder ``args[1]`` has grown by that many lines."""
    from benchmeasure.serving.sim.server import serve
    from benchmeasure.serving.sim.world import World

    server, url = serve(World.load(data / "world.json"), seed=1)
    env = {**os.environ, "BENCHFILL_SIM_URL": url}
    try:
        if kill_after is None:
            return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
        proc = subprocess.Popen([*CLI, *map(str, args)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        assert kill_after_progress(args[1], proc, kill_after), "the run ended before the kill"
    finally:
        server.shutdown()


def init(config, data, results, name):
    done = command(data, "init", "--config", config, "--name", name, "--results", results)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def finished(world, tmp_path_factory):
    config, data, *_ = world
    folder = init(config, data, tmp_path_factory.mktemp("res"), "whole")
    done = command(data, "run", folder)
    assert done.returncode == 0, done.stderr
    return folder, done


def read(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as handle:
        return handle.read()


def test_noise_item_goes_home_real_gap_is_resolved_and_filled(world, finished):
    _, data, truth, real, moved = world
    folder, done = finished
    summary = json.loads(read(folder, "summary.json"))
    resolution = summary["resolution"]
    asked = {r["item_id"]: r for r in resolution["items"]}
    # the unresolved widest gaps' edges, and only those, were asked about
    unresolved = [t for t in resolution["targets"] if not t["resolved_before"]]
    rounds = resolution["rounds"]
    assert set(rounds[0]["asked"]) == {i for t in unresolved for i in (t["lower_item"], t["upper_item"])}
    assert set(asked) == {i for r in rounds for i in r["asked"]}
    assert moved in asked and set(real) <= set(asked)
    # the misplaced item returns to where it truly is (it was 0.7+ away); the real gap's edges stay near theirs
    assert abs(asked[moved]["z_before"] - truth[moved]) > 0.5
    assert abs(asked[moved]["z_after"] - truth[moved]) < 0.05
    for item in real:
        assert abs(asked[item]["z_after"] - truth[item]) < 0.1
        assert asked[item]["b_sd_after"] < asked[item]["b_sd_before"] / 2
    # every target the run filled is resolved now; the real gap is still one of them
    assert all(t["separation"] is None or t["separation"] >= 2 for t in summary["targets"])
    real_gap = next(t for t in resolution["targets"] if {t["lower_item"], t["upper_item"]} == set(real))
    assert real_gap["outcome"] == "resolved" and real_gap["separation_after"] >= 2
    assert any(t["upper_item"] in real or t["lower_item"] in real for t in summary["targets"])
    # the journal: one Resolution per asked item, with the trials asked, and one call per panel model
    events = [json.loads(line) for line in read(folder, "events.jsonl").splitlines()]
    extra = [e for e in events if e["type"] == "resolution"]
    assert sorted((e["round"], e["item_id"], e["trials"]) for e in extra) == sorted(
        (r["round"], item, trials) for r in rounds for item, trials in r["asked"].items())
    for item, row in asked.items():
        assert sum(e["trials"] for e in extra if e["item_id"] == item) == row["extra_trials_per_model"]
    calls = [e for e in events if e["type"] == "call" and e["key"].startswith("resolve")]
    assert len(calls) == 12 * len(extra)
    assert "resolved first" in read(folder, "table2.txt") and "resolved first" in done.stderr + done.stdout
    status = command(data, "status", folder)
    assert status.returncode == 0 and f"resolved first ({len(rounds)} round(s)): item " in status.stdout


def test_kill_while_asking_then_resume_gives_the_same_run(world, finished, tmp_path):
    config, data, *_ = world
    whole, _ = finished
    folder = init(config, data, tmp_path, "killed")
    command(data, "run", folder, kill_after=8)              # 8 of the extra-trial calls journaled, the rest not
    events = [json.loads(line) for line in read(folder, "events.jsonl").splitlines()]
    assert events and all(e["type"] == "call" and e["key"].startswith("resolve1/") for e in events)
    done = command(data, "run", folder)
    assert done.returncode == 0, done.stderr
    for name in ("new_item_records.csv", "baseline_item_records.csv", "table2.txt"):
        assert read(folder, name) == read(whole, name)
    keys = [json.loads(line)["key"] for line in read(folder, "events.jsonl").splitlines()
            if json.loads(line)["type"] == "call"]
    assert len(keys) == len(set(keys))                     # no call asked twice
    resumed = json.loads(read(folder, "summary.json"))["resolution"]
    assert resumed == json.loads(read(whole, "summary.json"))["resolution"]


def test_a_gap_beyond_the_cap_costs_nothing_and_shared_edges_get_the_larger_request():
    from benchmeasure.core.metrics import Gap

    rows = [{"gap": Gap(0.1, 0.3, 1), "resolved": False, "extra_trials_per_model": 40, "lower_item": "a",
             "upper_item": "b"},
            {"gap": Gap(0.3, 0.4, 2), "resolved": False, "extra_trials_per_model": 90, "lower_item": "b",
             "upper_item": "c"},
            {"gap": Gap(0.5, 0.6, 3), "resolved": False, "extra_trials_per_model": 500, "lower_item": "d",
             "upper_item": "e"},
            {"gap": Gap(0.6, 0.7, 4), "resolved": True, "extra_trials_per_model": 0, "lower_item": "e",
             "upper_item": "f"},
            {"gap": Gap(0.7, 0.8, 5), "resolved": False, "extra_trials_per_model": None, "lower_item": "f",
             "upper_item": "g"}]
    wanted, beyond = requests(rows, 256)
    assert wanted == {"a": 40, "b": 90, "c": 90}
    assert [r["gap"].rank for r in beyond] == [3, 5]


def test_bad_resolve_settings_are_one_error_line(tmp_path, world):
    config, data, *_ = world
    text = open(config, encoding="utf-8").read().replace('unresolved = "resolve"\n', "")
    for bad, fragment in (('unresolved = "ask"', "unresolved must be one of skip, resolve, fill"),
                          ("resolve_max_trials = 0", "resolve_max_trials must be from 1 to 100000"),
                          ("resolve_rounds = 0", "resolve_rounds must be from 1 to 100")):
        path = tmp_path / "bad.toml"
        path.write_text(text.replace("[search]\n", f"[search]\n{bad}\n"), encoding="utf-8")
        assert_rejected(command(data, "init", "--config", path, "--results", tmp_path / "r"), fragment)
        assert not (tmp_path / "r").exists()


def test_recalibration_pools_matrix_cells_and_extra_trials_holes_included():
    import numpy as np

    from benchmeasure.benchfill.gaps import Item, SeedSet
    from benchmeasure.benchfill.resolve import recalibrated, with_items
    from benchmeasure.core.matrix import ResponseMatrix

    abilities = {"a": -1.0, "b": 0.0, "c": 1.0}
    seed_set = SeedSet("x", tuple(Item(str(i), "q", "1", 0.0, v, 0.3) for i, v in enumerate([-2.0, 0.0, 2.0])),
                       -2.0, 2.0)
    # model b did not answer item 0 (a hole): only its 8 extra trials count there
    matrix = ResponseMatrix(["a", "b", "c"], ["0", "1", "2"], np.array([[1, 3, 0], [2, 4, 1], [3, 4, 2]]), 4,
                            np.array([[4, 4, 4], [0, 4, 4], [4, 4, 4]]))
    b_mean, b_sd = recalibrated(seed_set, "0", {"a": 5, "b": 6, "c": 7}, 8, matrix, abilities, 0.0)
    grid = np.linspace(-10, 10, 200_001)
    log_p = -0.5 * grid**2
    for theta, y, n in ((-1.0, 6, 12), (0.0, 6, 8), (1.0, 10, 12)):
        p = 1 / (1 + np.exp(-(theta - grid)))
        log_p += y * np.log(p) + (n - y) * np.log1p(-p)
    density = np.exp(log_p - log_p.max())
    density /= density.sum()
    mean = (grid * density).sum()
    assert b_mean == pytest.approx(mean, abs=1e-6)
    assert b_sd == pytest.approx(np.sqrt(((grid - mean) ** 2 * density).sum()), abs=1e-6)
    # the lowest item moved up: the scale follows it, every z on the new min-max scale
    moved = with_items(seed_set, {"0": (b_mean, b_sd)})
    assert moved.b_min == b_mean and moved.b_max == 2.0
    assert [round(item.z, 12) for item in moved.items] == [0.0, round(-b_mean / (2.0 - b_mean), 12), 1.0]
