"""BenchFill run folders and their inputs (issue 15): the config's grader, damaged state files, run names
that would escape the results folder, inputs changed since init, configs anywhere, the ability cache."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.benchfill.eventlog import read_events
from benchmeasure.benchfill.mass_fill import read_limits
from benchmeasure.benchfill.records import EVENT_TYPES, event_from_dict
from benchmeasure.benchfill.run_folder import RunFolder
from benchmeasure.serving.sim.dataset import make_sim_benchmark
from conftest import BENCHFILL_CLI as CLI
from conftest import FULL_DISK, ROOT, assert_rejected, run_in_process, sim_run


def run_cli(folder, env, **kw):
    return subprocess.run([*CLI, "run", str(folder)], capture_output=True, text=True, env=env, **kw)


def test_validity_check_uses_the_configs_grader_not_the_benchmark_name(tmp_path):
    # 'arithworld' names no known benchmark; its config says grader = "math", which must be used throughout.
    folder, env, server = sim_run(tmp_path, 1, search={"gaps": 1, "rounds": 1, "parents": 2, "children": 2},
                                  bench_name="arithworld")
    try:
        done = run_cli(folder, env, timeout=300)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    assert "no grader known" not in done.stderr
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    notes = [e for e in events if e["type"] == "annotation"]
    assert notes and any(n["valid"] for n in notes)


# -- run folders: names, damaged state, changed inputs ---------------------------------------------------
def init_cli(config, results, *extra, env=None):
    return subprocess.run([*CLI, "init", "--config", str(config), "--results", str(results), *map(str, extra)],
                          capture_output=True, text=True, env=env)


def truth_config(tmp_path, **changes):
    config = make_sim_benchmark(tmp_path / "data", 1, truth=True)
    text = config.read_text()
    for old, new in changes.items():
        text = text.replace(old, new)
    config.write_text(text)
    return config


@pytest.mark.parametrize("name", ["../../x", "../x", "/tmp/abs-run", "a/b", "..", ".hidden", "", "a\\nb"])
def test_init_name_cannot_leave_the_results_folder(tmp_path, name):
    config = truth_config(tmp_path)
    if name in ("../../x", "/tmp/abs-run"):   # in a real process; the other names through the same entry point here
        done = init_cli(config, tmp_path / "res" / "deep", "--name", name)
    else:
        done = run_in_process("benchfill", "init", "--config", config, "--results", tmp_path / "res" / "deep",
                              "--name", name, prog="benchfill.py")
    assert_rejected(done)
    assert not (tmp_path / "res").exists() and not Path("/tmp/abs-run").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_benchmark_name_in_the_config_cannot_leave_the_results_folder(tmp_path):
    config = truth_config(tmp_path, **{'name = "math_sim"': 'name = "../../escaped"'})
    assert_rejected(init_cli(config, tmp_path / "res"), "plain folder name")
    assert not (tmp_path / "res").exists() and not (tmp_path / "escaped").exists()


def initialized(tmp_path):
    config = truth_config(tmp_path)
    done = init_cli(config, tmp_path / "res", "--name", "r1")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


@pytest.fixture(scope="module")
def initialized_once(tmp_path_factory):
    """One run folder made by ``init``, for the tests that damage only the folder's own files (each on a copy)."""
    return initialized(tmp_path_factory.mktemp("initialized"))


def copy_of(folder, tmp_path):
    """A copy of the run folder ``folder`` (its inputs stay where ``init`` recorded them)."""
    return Path(shutil.copytree(folder, tmp_path / "res" / folder.parent.name / folder.name))


DAMAGED_CONFIG = ["{not json", "[]", '{"inputs": {}}', '{"config": {"benchmark": 3}, "inputs": {}}',
                  '{"config": {"benchmark": {"name": "x"}}, "inputs": {}}', "\udcff"]


def benchfill(command, folder, real_process):
    """``propose/benchfill.py COMMAND FOLDER`` in a process of its own, or through the same entry point in this one."""
    if real_process:
        return subprocess.run([*CLI, command, str(folder)], capture_output=True, text=True)
    return run_in_process("benchfill", command, folder, prog="benchfill.py")


def test_damaged_config_json_is_one_error_line(tmp_path, initialized_once):
    folder = copy_of(initialized_once, tmp_path)
    good = json.loads((folder / "config.json").read_text())
    variants = [text.encode() for text in DAMAGED_CONFIG[:-2]]
    variants += [json.dumps({**good, "inputs": "nope"}).encode(), b"\xff\xfe{"]
    for k, data in enumerate(variants):
        (folder / "config.json").write_bytes(data)
        for command in ("run", "status"):   # the first and the last (undecodable) in real processes
            assert_rejected(benchfill(command, folder, k in (0, len(variants) - 1)), str(folder))
    assert not (folder / "events.jsonl").exists()


DAMAGED_EVENTS = [b"not json\n", b"[1, 2]\n", b'{"type": "plan"}\n', b'{"type": "nope", "x": 1}\n',
                  b'{"type": "call", "key": "k", "model": "m", "result": []}\n', b"\xff\xfe\n",
                  b'{"type": "annotation", "item_id": 5}\n']


def test_damaged_journal_is_one_error_line_before_any_call(tmp_path, initialized_once):
    folder = copy_of(initialized_once, tmp_path)
    for line in DAMAGED_EVENTS:
        (folder / "events.jsonl").write_bytes(line)
        for command in ("run", "status"):   # not JSON, and undecodable, in real processes
            done = benchfill(command, folder, line in (b"not json\n", b"\xff\xfe\n"))
            message = assert_rejected(done, "events.jsonl", "line 1")
            assert "damaged" in message or "lacks field" in message or "expected" in message
        assert (folder / "events.jsonl").read_bytes() == line  # left as it was


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.binary(max_size=40), st.dictionaries(
    st.sampled_from(["type", "key", "model", "result", "mode", "gap", "round", "item_id", "left", "z_L"]),
    st.one_of(st.none(), st.integers(), st.text(max_size=5), st.sampled_from(list(EVENT_TYPES)),
              st.floats(allow_nan=True)), max_size=6).map(lambda d: json.dumps(d).encode())), max_size=4))
def test_journal_reader_fuzz_clean_error_or_typed_events(tmp_path, lines):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(line.replace(b"\n", b" ") + b"\n" for line in lines))
    before = path.read_bytes()
    try:
        events = read_events(path)
    except InputError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
    else:
        assert all(type(e) in EVENT_TYPES.values() for e in events)
        assert [event_from_dict(e.to_dict(), "again") for e in events] == [
            dataclasses.replace(e) for e in events]
    assert path.read_bytes() == before


def test_old_journal_names_are_still_read(tmp_path):
    old = {"type": "mass_step", "step": 1, "z_L": 0.1, "z_R": 0.3, "target": 0.2, "width": 0.2, "budget": 16,
           "max_gap_before": 0.2, "time": 1.0}
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(old) + "\n")
    (step,) = read_events(path)
    assert (step.left, step.right, step.target) == (0.1, 0.3, 0.2)
    assert step.to_dict()["left"] == 0.1 and "z_L" not in step.to_dict()


@pytest.mark.parametrize("changed", ["panel", "calibration", "abilities"])
def test_run_refuses_to_resume_after_an_input_changed(tmp_path, changed):
    folder = initialized(tmp_path)
    record = json.loads((folder / "config.json").read_text())
    path = Path(record["panel"]["path"] if changed == "panel" else record["inputs"][changed]["path"])
    path.write_text(path.read_text() + ("# edited\n" if changed == "panel" else "\n"))
    done = subprocess.run([*CLI, "run", str(folder)], capture_output=True, text=True)
    assert_rejected(done, f"input {changed}", "changed since init")
    assert not (folder / "events.jsonl").exists()
    path.unlink()
    assert_rejected(subprocess.run([*CLI, "run", str(folder)], capture_output=True, text=True), "is gone")


def test_config_anywhere_and_the_ability_cache_under_the_results_folder(tmp_path):
    config = make_sim_benchmark(tmp_path / "elsewhere" / "data", 1, truth=True)
    text = "\n".join(line for line in config.read_text().splitlines()
                     if not line.startswith(("ability_cache", "abilities")))
    config.write_text(text + "\n")
    results = tmp_path / "results"
    done = init_cli(config, results, "--name", "r1")
    assert done.returncode == 0, done.stderr
    record = json.loads((Path(done.stdout.strip()) / "config.json").read_text())
    assert record["config"]["ability_cache"] == str(results / "cache" / "abilities")
    assert (results / "math_sim" / "LATEST").read_text().strip() == done.stdout.strip()
    where = subprocess.run([*CLI, "where", "--config", str(config), "--results", str(results)],
                           capture_output=True, text=True)
    assert where.stdout.strip() == done.stdout.strip()


# -- run_experiment.sh: env.local, a config anywhere -------------------------------------------------------
def script_tree(tmp_path):
    """A copy of run_experiment.sh beside links to the checkout, so a test can give it its own env.local."""
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(ROOT / "run_experiment.sh", tree / "run_experiment.sh")
    for name in ("propose", "scripts", "benchmeasure", "verifier", ".venv-irt", ".venv-benchfill"):
        if (ROOT / name).exists():
            (tree / name).symlink_to(ROOT / name)
    return tree


def run_experiment(tree, *args, **env):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("BENCHMARK", "BENCHFILL_RESULTS", "BENCHFILL_CONFIG", "PANEL_CONFIG")}
    return subprocess.run(["bash", str(tree / "run_experiment.sh"), *map(str, args)], capture_output=True,
                          text=True, env={**environ, **env}, timeout=300)


def test_env_local_with_crlf_and_the_callers_variables_win(tmp_path):
    tree = script_tree(tmp_path)
    from_file = tmp_path / "from_env_local"
    (tree / "env.local").write_bytes(f'export BENCHMARK="aime25"\r\nexport BENCHFILL_RESULTS="{from_file}"\r\n'
                                     f'export PANEL_API_KEY="secret-from-file"\r\n'.encode())
    done = run_experiment(tree, "status")
    message = assert_rejected(done, "no run for aime25 yet", str(from_file))  # not 'aime25\r'
    assert "\r" not in message
    caller = tmp_path / "from_caller"
    done = run_experiment(tree, "status", BENCHFILL_RESULTS=str(caller), PANEL_API_KEY="mine")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("error: no run for aime25 yet") and str(caller) in lines[-1]
    notes = sorted(line for line in lines[:-1])
    assert notes == ["note: BENCHFILL_RESULTS is set in the environment; env.local's value is ignored (the caller's "
                     "wins)", "note: PANEL_API_KEY is set in the environment; env.local's value is ignored (the "
                     "caller's wins)"]
    assert "secret-from-file" not in done.stderr and "mine" not in done.stderr  # values are never printed


def test_run_experiment_takes_a_config_from_anywhere(tmp_path):
    config = make_sim_benchmark(tmp_path / "mine" / "data", 1, truth=True)
    results = tmp_path / "results"
    done = run_experiment(ROOT, "init", "first", BENCHFILL_CONFIG=str(config), BENCHFILL_RESULTS=str(results))
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip())
    assert folder == results / "math_sim" / "first" and (folder / "config.json").is_file()
    status = run_experiment(ROOT, "status", BENCHFILL_CONFIG=str(config), BENCHFILL_RESULTS=str(results))
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"run {folder}") and "no rounds started yet" in status.stdout
    assert not list((ROOT / "propose").glob("results/math_sim/first"))


def test_panel_settings_lists_hosted_models(tmp_path):
    make_sim_benchmark(tmp_path / "data", 1, truth=True)
    panel = tmp_path / "data" / "panel.toml"
    settings_cli = [sys.executable, str(ROOT / "scripts" / "panel_settings.py"), str(panel)]
    listing = subprocess.run([*settings_cli, "--list"], capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert len(lines) == 12 and lines[0].startswith("sim-m01\thosted (no [serve] table)")
    assert all("$BENCHFILL_SIM_URL" in line for line in lines)
    served = subprocess.run([*settings_cli, "--list", "--served"], capture_output=True, text=True)
    assert served.returncode == 0 and served.stdout == ""


# -- kill -9 of 'run' during the first-use ability fit ---------------------------------------------------
def test_kill_9_during_the_ability_fit_leaves_no_fit_running(tmp_path):
    config = truth_config(tmp_path)
    text = "\n".join(line for line in config.read_text().splitlines() if not line.startswith("abilities"))
    config.write_text(text + "\n")
    folder = Path(init_cli(config, tmp_path / "res", "--name", "k").stdout.strip())
    pid_file = tmp_path / "fit.pid"
    fake = tmp_path / "slow_fit_python"  # stands in for the IRT interpreter: a fit that takes minutes
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    fake.chmod(0o755)
    proc = subprocess.Popen([*CLI, "run", str(folder)], env={**os.environ, "BENCHMEASURE_IRT_PYTHON": str(fake)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert proc.poll() is None and time.time() < deadline, "the fit never started"
        time.sleep(0.05)
    fit = int(pid_file.read_text())
    proc.kill()
    proc.wait()
    deadline = time.time() + 10
    while alive(fit) and time.time() < deadline:
        time.sleep(0.05)
    assert not alive(fit), "the ability fit outlived the killed run"


INTERMEDIATE = """
import os, subprocess, sys, time
child = subprocess.Popen(sys.argv[1:], env={**os.environ, "BENCHMEASURE_PARENT_PID": str(os.getpid())},
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
time.sleep(600)
"""


def test_the_fit_ends_with_its_parent_without_the_linux_death_signal(tmp_path):
    # The portable guard (benchmeasure.base.lifetime.exit_with_parent): the fit is started without the parent-death
    # signal, as on macOS, by a parent that names itself in BENCHMEASURE_PARENT_PID and is then killed (-9).
    config = truth_config(tmp_path)
    matrix = config.parent / "response_matrix.csv"
    fit = [sys.executable, "-m", "benchmeasure", "fit", str(matrix), "--n-trials", "32", "--output-dir",
           str(tmp_path / "fit"), "--tune", "1000", "--draws", "1000000", "--quiet"]
    parent = subprocess.Popen([sys.executable, "-c", INTERMEDIATE, *fit], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT)
    child = int(parent.stdout.readline())
    try:
        time.sleep(1.0)
        assert alive(child), "the fit should run while its parent does"
        parent.kill()
        parent.wait()
        deadline = time.time() + 30
        while alive(child) and time.time() < deadline:
            time.sleep(0.1)
        assert not alive(child), "the fit outlived its killed parent"
        assert not (tmp_path / "fit" / "ability.csv").exists()
    finally:  # a failed check must not leave a million-draw fit running
        parent.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie awaiting its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=6)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_config_json_reader_fuzz_clean_error_or_whole_record(tmp_path_factory, data):
    # A real run folder's config.json with one field (at any depth) replaced or removed: RunFolder.open either
    # refuses it with an InputError naming the file, or reads a whole record; never another exception.
    folder = fuzz_folder(tmp_path_factory)
    record = json.loads((folder / "config.json").read_text())
    path = [data.draw(st.sampled_from(sorted(record)))]
    node = record[path[0]]
    while isinstance(node, dict) and node and data.draw(st.booleans()):
        path.append(data.draw(st.sampled_from(sorted(node))))
        node = node[path[-1]]
    parent = record
    for key in path[:-1]:
        parent = parent[key]
    if data.draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(JSON_VALUES)
    copy = folder.parent / "fuzzed"
    copy.mkdir(exist_ok=True)
    (copy / "config.json").write_text(json.dumps(record))
    try:
        run = RunFolder.open(copy)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert run.config.benchmark.name and all(len(i.sha256) for i in run.inputs)


_FUZZ_FOLDER: list = []


def fuzz_folder(tmp_path_factory) -> Path:
    if not _FUZZ_FOLDER:
        base = tmp_path_factory.mktemp("fuzz")
        _FUZZ_FOLDER.append(initialized(base))
    return _FUZZ_FOLDER[0]


@pytest.mark.parametrize(("section", "message"), [
    ("[validity]\nsolve_n = \"two\"\n", "solve_n"),
    ("[validity]\ngrade_options = { rel_tolerance = 0.1 }\n", "rel_tolerance"),
    ("[validity]\nsolve = 2\n", "unknown key 'solve'"),
])
def test_init_rejects_validity_settings_that_would_fail_mid_run(tmp_path, section, message):
    config = truth_config(tmp_path)
    config.write_text(config.read_text() + section)
    assert_rejected(init_cli(config, tmp_path / "res"), message)
    assert not (tmp_path / "res").exists()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limits=st.one_of(JSON_VALUES, st.dictionaries(st.sampled_from(
    ["target_max_gap", "max_items", "max_calls", "max_rounds", "other"]), JSON_VALUES, max_size=4)))
def test_mass_fill_marker_reader_fuzz(tmp_path_factory, limits):
    folder = tmp_path_factory.mktemp("mass")
    (folder / "mass_fill.json").write_text(json.dumps({"limits": limits}))
    try:
        read = read_limits(folder)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        for name in ("max_items", "max_calls", "max_rounds"):
            value = getattr(read, name)
            assert value is None or (isinstance(value, int) and not isinstance(value, bool))




MASS_FILL = ROOT / "propose" / "mass_fill" / "mass_fill.py"


@pytest.mark.parametrize("script, fail_at", [(CLI[1], 1), (CLI[1], 2), (MASS_FILL, 1), (MASS_FILL, 2), (MASS_FILL, 3)])
def test_init_on_a_full_disk_leaves_no_run_folder_and_the_old_latest(tmp_path, script, fail_at):
    # BenchFill writes config.json then LATEST; mass fill writes config.json, mass_fill.json, then LATEST
    config, results = truth_config(tmp_path), tmp_path / "results"
    first = init_cli(config, results, "--name", "first")
    assert first.returncode == 0, first.stderr
    latest = results / "math_sim" / "LATEST"
    before = latest.read_bytes()
    budget = ["--max-items", "2"] if script == MASS_FILL else []
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(script), "init", "--config", str(config),
                           "--results", str(results), "--name", "second", *budget],
                          capture_output=True, text=True, env={**os.environ, "FAIL_AT": str(fail_at)})
    assert_rejected(done, "No space left on device")
    assert sorted(p.name for p in (results / "math_sim").iterdir()) == ["LATEST", "first"]
    assert latest.read_bytes() == before
