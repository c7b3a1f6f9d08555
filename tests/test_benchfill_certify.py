"""Issue 30, item 1: BenchFill keeps only a child whose posterior interval is certified inside the target band,
racing extra rollout batches on the children that might be; a kill -9 mid-race and a resume give the same keeps
with no call lost or repeated; a run folder initialized before the rule resumes with the paper's rule."""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest

from benchmeasure.benchfill.certify import band, batches_needed, certified_best, pick, standing
from benchmeasure.benchfill.config import load_config
from conftest import BENCHFILL_CLI as CLI
from conftest import assert_rejected, sim_run

ABILITIES = {f"m{j}": t for j, t in enumerate(np.linspace(-1.5, 2.5, 6))}


def brute_force_interval(counts, trials, level):
    """The equal-tailed interval of p(b | y, θ) by a plain Riemann sum on a very fine grid."""
    b = np.linspace(-12, 12, 400_001)
    log_p = -0.5 * b**2
    for model, theta in ABILITIES.items():
        p = 1 / (1 + np.exp(-(theta - b)))
        log_p += counts[model] * np.log(p) + (trials - counts[model]) * np.log1p(-p)
    density = np.exp(log_p - log_p.max())
    cdf = np.cumsum(density) / density.sum()
    return np.interp([(1 - level) / 2, (1 + level) / 2], cdf, b)


def test_interval_is_the_exact_posterior_pooled_over_batches_and_certifies_inside_the_band():
    screening = {"m0": 1, "m1": 2, "m2": 4, "m3": 5, "m4": 7, "m5": 8}
    batches = [{"m0": 0, "m1": 3, "m2": 3, "m3": 6, "m4": 6, "m5": 7}, {"m0": 2, "m1": 2, "m2": 4, "m3": 5,
                                                                          "m4": 8, "m5": 8}]
    b_min, b_max = -3.0, 3.0
    s = standing("c", screening, batches, ABILITIES, 8, b_min, b_max, 0.0, 0.9, (0.0, 1.0))
    pooled = {m: screening[m] + sum(b[m] for b in batches) for m in ABILITIES}
    low, high = brute_force_interval(pooled, 24, 0.9)
    assert s.trials == 24 and s.batches == 2 and s.counts == pooled
    assert (s.z_low, s.z_high) == pytest.approx(((low + 3) / 6, (high + 3) / 6), abs=2e-4)
    # certified exactly when the interval lies inside the band (the gap and within the tolerance of z*)
    z_star = s.z
    inside = band(0.0, 1.0, z_star, (s.z_high - s.z_low) / 2 + 0.01)
    tight = band(0.0, 1.0, z_star, (s.z_high - s.z_low) / 2 - 0.01)
    gap_edge = band(0.0, s.z_high - 0.001, z_star, 0.5)     # the gap itself cuts the interval
    for target_band, certified in ((inside, True), (tight, False), (gap_edge, False)):
        t = standing("c", screening, batches, ABILITIES, 8, b_min, b_max, 0.0, 0.9, target_band)
        assert t.certified is certified and t.plausible
        assert 0 < t.p_band < 1
    far = standing("c", screening, batches, ABILITIES, 8, b_min, b_max, 0.0, 0.9, (0.9, 0.95))
    assert not far.plausible and not far.certified and far.p_band < 1e-6


def test_the_race_picks_the_cheapest_certificate_and_keeps_the_closest_certified():
    near_band = (0.45, 0.55)
    kwargs = dict(abilities=ABILITIES, n_trials=8, b_min=-3.0, b_max=3.0, guessing=0.0, level=0.9,
                  target_band=near_band)
    middle = standing("a", {"m0": 1, "m1": 2, "m2": 4, "m3": 5, "m4": 7, "m5": 8}, [], **kwargs)
    edge = standing("b", {"m0": 0, "m1": 1, "m2": 2, "m3": 4, "m4": 6, "m5": 7}, [], **kwargs)
    assert batches_needed(middle, near_band, 0.9) < batches_needed(edge, near_band, 0.9)
    assert pick([edge, middle], 0.5, near_band, 0.9, left=1000).item_id == "a"
    assert pick([edge, middle], 0.5, near_band, 0.9, left=0) is None         # nothing fits the batches left
    assert certified_best([edge, middle], 0.5) is None
    outside = (0.0, 0.001)
    assert math.isinf(batches_needed(middle, outside, 0.9))


def test_settings_defaults_checks_and_old_run_folders(tmp_path):
    config = tmp_path / "c.toml"
    bench = '[benchmark]\nname = "x"\ncalibration = "c.csv"\npool = "p.jsonl"\nmatrix = "m.csv"\nmatrix_n_trials = 1\n'
    config.write_text(bench)
    search = load_config(config).search
    assert (search.keep, search.certify_tolerance, search.certify_level, search.race_batches) == (
        "certified", 0.03, 0.9, 48)
    for setting, message in (('keep = "best"', "keep must be one of certified, closest"),
                             ("certify_tolerance = 0", "certify_tolerance must be in (0, 1)"),
                             ("certify_level = 1.0", "certify_level must be in [0.5, 1)"),
                             ("race_batches = -1", "race_batches must be from 0")):
        config.write_text(bench + f"[search]\n{setting}\n")
        done = subprocess.run([*CLI, "init", "--config", str(config), "--results", str(tmp_path / "r")],
                              capture_output=True, text=True)
        assert_rejected(done, message)
    assert not (tmp_path / "r").exists()
    old = {"benchmark": {"name": "x", "calibration": "c.csv", "pool": "p.jsonl", "matrix": "m.csv",
                         "matrix_n_trials": 1}, "search": {"gaps": 3}}   # a config.json written before the rule
    (tmp_path / "config.json").write_text(json.dumps(old))
    assert load_config(tmp_path / "config.json").search.keep == "closest"


def _events(folder):
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def _kill_after_race_batches(folder, proc, count, timeout=120):
    """SIGKILL ``proc`` as soon as the journal holds ``count`` race batches (the next one is then in flight)."""
    import time

    deadline = time.time() + timeout
    while proc.poll() is None and time.time() < deadline:
        text = (folder / "events.jsonl").read_text() if (folder / "events.jsonl").exists() else ""
        if text.count('"type": "race_batch"') >= count:
            break
        time.sleep(0.005)
    alive = proc.poll() is None
    proc.kill()
    proc.wait()
    return alive


@pytest.mark.slow
def test_kill_9_mid_race_then_resume_gives_the_same_keeps_with_no_call_lost_or_repeated(tmp_path):
    from benchmeasure.serving.sim.server import serve
    from benchmeasure.serving.sim.world import World

    # seed 2, one gap: round 1's race ends after 4 batches without a certificate, round 2's race certifies a child
    # after 3 more, so the first kill lands in round 1's race and the second in round 2's: the resume must not race
    # round 1 again with what came after it (it would keep the child in round 1, and the matched baseline would get
    # fewer rewrites)
    search = {"gaps": 1, "rounds": 3, "parents": 2, "children": 2}
    outputs = []
    for name, kills in (("straight", ()), ("killed", (2, 5))):
        folder, env, server = sim_run(tmp_path / name, 2, search=search)
        server.shutdown()
        for count in (*kills, None):
            # a fresh server per process: the simulation seeds a repeated request differently, so the calls in
            # flight at the kill, asked again by the resumed run, get the replies the straight run got
            server, url = serve(World.load(tmp_path / name / "data2" / "world.json"), seed=2)
            env = {**env, "BENCHFILL_SIM_URL": url}
            try:
                if count is None:
                    done = subprocess.run([*CLI, "run", str(folder)], capture_output=True, text=True, env=env,
                                          timeout=300)
                else:
                    proc = subprocess.Popen([*CLI, "run", str(folder)], env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
                    assert _kill_after_race_batches(folder, proc, count), "the run ended before the kill"
            finally:
                server.shutdown()
        assert done.returncode == 0, done.stderr
        events = _events(folder)
        keys = [e["key"] for e in events if e["type"] == "call"]
        assert len(keys) == len(set(keys))                       # no call repeated
        races = [e for e in events if e["type"] == "race_batch"]
        assert races, "the race never ran"
        for race in races:                                       # every batch's calls journaled, once per model
            calls = [k for k in keys if k.startswith(f"race{race['batch']}/{race['item_id']}/")]
            assert len(calls) == len(race["counts"]) == 12
        by_item = {}
        for race in races:
            by_item.setdefault(race["item_id"], []).append(race["batch"])
        assert all(b == list(range(1, len(b) + 1)) for b in by_item.values())   # batches numbered without gaps
        summary = json.loads((folder / "summary.json").read_text())
        keeps = summary["benchfill"]["keeps"]
        assert set(keeps) == {"1"} and keeps["1"]["certified"]
        done_gap = [e for e in events if e["type"] == "gap_done" and e["mode"] == "benchfill"]
        assert [(e["rounds"], e["rewrites"]) for e in done_gap] == [(2, 8)]
        for gap, keep in keeps.items():
            assert keep["calls"] == sum(1 for k in keys if f"benchfill-g{gap}-" in k)
            if keep["certified"]:
                low, high = keep["interval"]
                assert keep["band"][0] <= low <= keep["z"] <= high <= keep["band"][1]
                assert keep["trials_per_model"] == 32 * (1 + keep["race_batches_item"])
        table = (folder / "table2.txt").read_text()
        assert "benchfill certified keeps" in table and "calls per kept item" in table
        status = subprocess.run([*CLI, "status", str(folder)], capture_output=True, text=True, env=env)
        assert status.returncode == 0 and "race batches" in status.stdout
        assert ("(certified)" if keeps["1"]["certified"] else "no child certified, nothing kept") in status.stdout
        plans = [e for e in events if e["type"] == "plan" and e["mode"] == "benchfill"]
        assert len(plans) >= 2 and len({e["round"] for e in plans}) == len(plans)   # several rounds, each once
        batches = sorted((r["item_id"], r["batch"], sorted(r["counts"].items())) for r in races)  # gaps race at once
        outputs.append(((folder / "new_item_records.csv").read_text(),
                        (folder / "baseline_item_records.csv").read_text(), sorted(keys), batches))
    assert outputs[0] == outputs[1]
