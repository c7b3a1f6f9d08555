"""Ctrl-C in every phase of every long command (issue 32), as tests/test_interrupt.py does for ``fit``: exit status
130 within a second or so, ``interrupted`` as the last line, no traceback, nothing partial left behind.

The phases are found, not guessed: start-up and the command's imports by the import lines of ``-X importtime``,
the work by the command's own progress lines, and writing by ``tests/fixtures/slow_writes`` (its
``sitecustomize`` makes every ``fsync`` / ``replace`` / ``rename`` say so and wait). The signal is sent as a
terminal sends it, to a child whose SIGINT handler is the default.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT

SLOW_WRITES = ROOT / "tests" / "fixtures" / "slow_writes"
START_UP = r"\| +benchmeasure\.base\.errors$"   # imported by benchmeasure.cli: before any command code runs
WRITING = "test: writing"


def interrupt(argv, marker: str, env: dict | None = None, slow_writes: bool = False, importtime: bool = False,
              timeout: float = 60, cwd=None):
    """Run ``python argv``; send SIGINT when a stderr line matches the regular expression ``marker``.

    Returns (exit status, stderr without import-time lines, seconds from the signal to the exit)."""
    env = {**os.environ, **(env or {})}
    if slow_writes:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SLOW_WRITES), env.get("PYTHONPATH", "")) if p)
    flags = ["-X", "importtime"] if importtime else []
    proc = subprocess.Popen([sys.executable, *flags, *map(str, argv)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen, lines = threading.Event(), []
    pattern = re.compile(marker)

    def read(stream, keep):
        for line in stream:
            if keep:
                lines.append(line)
            if pattern.search(line.rstrip("\n")):  # progress lines go to stdout or stderr
                seen.set()

    reader = threading.Thread(target=read, args=(proc.stderr, True), daemon=True)
    reader.start()
    threading.Thread(target=read, args=(proc.stdout, False), daemon=True).start()
    if not seen.wait(timeout):
        proc.kill()
        pytest.fail(f"never saw {marker!r}:\n{''.join(lines)[-3000:]}")
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    took = time.monotonic() - sent
    reader.join(10)
    stderr = "".join(line for line in lines if not line.startswith("import time:"))
    return proc.returncode, stderr, took


def assert_interrupted(result, *gone, limit: float = 3.0):
    """Exit 130, ``interrupted`` last, no traceback, none of ``gone`` exists, no temporary file beside them."""
    code, stderr, took = result
    assert code == 130, (code, stderr[-3000:])
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == "interrupted", stderr[-3000:]
    for path in gone:
        assert not path.exists(), f"{path} was left behind"
        if path.parent.exists():
            assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".staging")]
    assert took < limit, f"stopped {took:.1f} s after Ctrl-C"


def _long(path, models=12, items=60, benchmarks=2, seed=0):
    rng = random.Random(seed)
    rows = ["model,item_id,correct,benchmark"]
    per = items // benchmarks
    for j in range(models):
        theta = rng.gauss(0, 1)
        for i in range(items):
            p = 1 / (1 + math.exp(-(theta - (i % 7 - 3) / 2)))
            rows.append(f"m{j},q{i},{int(rng.random() < p)},B{i // per}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def responses(tmp_path_factory):
    return _long(tmp_path_factory.mktemp("responses") / "r.csv")


# -- fit-suite ----------------------------------------------------------------------------------------------------

FIT_SUITE_PHASES = {  # phase: (marker, options)
    "start-up": (START_UP, dict(importtime=True)),
    "importing": (r"\| +numpy$", dict(importtime=True)),
    "writing": (WRITING, dict(slow_writes=True)),
}


@pytest.mark.parametrize("phase", list(FIT_SUITE_PHASES))
def test_ctrl_c_stops_fit_suite(tmp_path, responses, phase):
    marker, options = FIT_SUITE_PHASES[phase]
    out = tmp_path / "suite" / "out"  # two folders the command would create: neither may be left
    assert_interrupted(interrupt([ROOT / "scripts" / "fit_suite.py", responses, "--output-dir", out], marker,
                                 **options), out.parent)


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["compiling"])
def test_ctrl_c_stops_fit_suite_correlated(tmp_path, responses, phase):
    """--abilities correlated: NUTS on the multidimensional 1PL (its compilation; sampling shares fit's wait)."""
    out = tmp_path / "suite" / "out"
    assert_interrupted(interrupt([ROOT / "scripts" / "fit_suite.py", responses, "--abilities", "correlated",
                                  "--chains", "2", "--tune", "50", "--draws", "50", "--output-dir", out],
                                 phase), out.parent)


# -- chain --------------------------------------------------------------------------------------------------------

CHAIN_PHASES = {
    "start-up": (START_UP, dict(importtime=True)),
    "predicting": (r"^split 1/\d+ step 1/", {}),
    "writing": (WRITING, dict(slow_writes=True)),
}


@pytest.mark.parametrize("phase", list(CHAIN_PHASES))
def test_ctrl_c_stops_chain(tmp_path, responses, phase):
    marker, options = CHAIN_PHASES[phase]
    out = tmp_path / "chain" / "out"
    splits = "1" if phase == "writing" else "200"  # long enough to be interrupted while it predicts
    assert_interrupted(interrupt([ROOT / "scripts" / "chain.py", responses, "--anchors", "5", "--splits", splits,
                                  "--output-dir", out], marker, **options), out.parent)


# -- posterior-metrics --calibrate --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_fit(tmp_path_factory):
    import numpy as np

    folder = tmp_path_factory.mktemp("fit")
    rng = np.random.default_rng(0)
    np.savez(folder / "draws.npz", b=rng.normal(0, 1, 12) + rng.normal(0, 0.3, (200, 12)),
             items=np.array([f"q{i}" for i in range(12)]))
    (folder / "ability.csv").write_text("model,theta_mean\n" + "".join(f"m{j},{j - 2}\n" for j in range(5)))
    (folder / "diagnostics.json").write_text(json.dumps({"input": {"n_trials": 4}}))
    return folder


CALIBRATE_PHASES = {
    "start-up": (START_UP, dict(importtime=True)),
    "calibrating": (r"^calibration: world", {}),
    "writing": (WRITING, dict(slow_writes=True)),
}


@pytest.mark.parametrize("phase", list(CALIBRATE_PHASES))
def test_ctrl_c_stops_posterior_metrics_calibrate(tmp_path, small_fit, phase):
    marker, options = CALIBRATE_PHASES[phase]
    out = tmp_path / "report" / "calibration.json"
    worlds = "as_fitted" if phase == "writing" else "as_fitted,normal,uniform,band,clusters"
    assert_interrupted(interrupt([ROOT / "scripts" / "posterior_metrics.py", small_fit / "draws.npz", "--calibrate",
                                  "1", "--calibrate-draws", "20", "--calibrate-worlds", worlds, "--output", out],
                                 marker, **options), out.parent)


# -- browse index -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def items(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("items")
    path = tmp / "items.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "text": f"question {i} about a contract and the law"}) + "\n"
                            for i in range(200)), encoding="utf-8")
    return path


BROWSE_PHASES = {
    "start-up": (START_UP, dict(importtime=True)),
    "importing": (r"\| +numpy$", dict(importtime=True)),
    "writing": (WRITING, dict(slow_writes=True)),
}


@pytest.mark.parametrize("phase", list(BROWSE_PHASES))
def test_ctrl_c_stops_browse_index(tmp_path, items, phase):
    marker, options = BROWSE_PHASES[phase]
    index = tmp_path / "new" / "index"
    assert_interrupted(interrupt([ROOT / "scripts" / "browse.py", "index", items, "--benchmark", "law", "--id-field",
                                  "id", "--text-field", "text", "--lexical-only", "--output-dir", index, "--quiet"],
                                 marker, **options), index.parent)


def test_ctrl_c_while_adding_to_an_index_leaves_it_as_it_was(tmp_path, items):
    index = tmp_path / "index"
    args = [ROOT / "scripts" / "browse.py", "index", items, "--id-field", "id", "--text-field", "text",
            "--lexical-only", "--output-dir", index, "--quiet"]
    done = subprocess.run([sys.executable, *map(str, args), "--benchmark", "first"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    before = {p.relative_to(index): p.read_bytes() for p in sorted(index.rglob("*")) if p.is_file()}
    assert_interrupted(interrupt([*args, "--benchmark", "second"], WRITING, slow_writes=True))
    after = {p.relative_to(index): p.read_bytes() for p in sorted(index.rglob("*")) if p.is_file()}
    assert after == before


# -- scope and benchfill: resumable runs keep their journal, and nothing else of the interrupted run -------------

SCOPE_SPACE = """\
terms: {type: int, low: 10, high: 11}
digits: {type: int, low: 9, high: 10}
ops: {type: categorical, choices: [mul]}
distractors: {type: int, low: 23, high: 24}
"""


@pytest.fixture(scope="module")
def solver():
    from benchmeasure.serving.sim.scope_world import ScopeWorld
    from benchmeasure.serving.sim.server import serve

    server, url = serve(ScopeWorld(seed=0))
    yield url
    server.shutdown()


def _complete_journal(path):
    """Every line of a journal is a whole JSON record (an interrupted write left no half line)."""
    if path.exists():
        data = path.read_bytes()
        assert not data or data.endswith(b"\n"), "a half-written journal line"
        for line in data.splitlines():
            json.loads(line)


SCOPE_PHASES = {
    "start-up": (START_UP, dict(importtime=True)),
    "searching": (r"^pulls \d+/", {}),
    "writing": (r"test: writing \(fsync .*certified\.csv",
                dict(slow_writes=True, env={"SLOW_WRITES_MATCH": "certified"})),
}


@pytest.mark.parametrize("phase", list(SCOPE_PHASES))
def test_ctrl_c_stops_scope(tmp_path, solver, phase):
    marker, options = SCOPE_PHASES[phase]
    space = tmp_path / "space.yaml"
    space.write_text(SCOPE_SPACE, encoding="utf-8")
    out = tmp_path / "scope" / "out"
    budget = "40" if phase == "writing" else "2000"
    args = [ROOT / "scripts" / "scope.py", "--space", space, "--generator", "benchmeasure.scope.arithmetic:arithmetic",
            "--endpoint", solver, "--model", "sim-solver", "--budget", budget, "--utility", "error", "--threshold",
            "0.9", "--seed", "0", "--output-dir", out, "--concurrency", "4"]
    result = interrupt(args, marker, **options)
    if phase == "start-up":
        assert_interrupted(result, out.parent)
        return
    assert_interrupted(result)
    for name in ("certified.csv", "tried.csv", "summary.json"):  # the search's results: none of them
        assert not (out / name).exists(), name
    _complete_journal(out / "journal.jsonl")
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    if phase == "searching":  # the journal is the run's: the same command resumes from it and finishes
        again = [str(a) for a in args]
        again[again.index("--budget") + 1] = "300"  # a smaller budget (not a setting a resume must keep): quicker
        done = subprocess.run([sys.executable, *again], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "replayed from the journal" in done.stdout and (out / "summary.json").is_file()
        assert " replayed from the journal 0 " not in done.stdout, done.stdout



BENCHFILL_PHASES = {
    "start-up": (START_UP, dict(importtime=True)),
    "searching": (r"^\[benchfill\] gap \d round 1", {}),
    "writing": (r"test: writing \(fsync .*table2\.txt", dict(slow_writes=True, env={"SLOW_WRITES_MATCH": "table2"})),
}
SMALL_SEARCH = {"gaps": 2, "rounds": 1, "parents": 2, "children": 2}


def _interrupt_benchfill(folder, env, phase):
    """Ctrl-C a ``benchfill run`` in ``phase``: the run folder keeps its journal (a rerun resumes from it), releases
    its lock, and holds no output of the interrupted run."""
    from benchmeasure.benchfill.eventlog import lock_holder
    from conftest import BENCHFILL_CLI

    marker, options = BENCHFILL_PHASES[phase]
    before = sorted(p.name for p in folder.iterdir() if p.name not in ("events.jsonl", "run.lock"))
    options = {**options, "env": {**env, **options.get("env", {})}}
    assert_interrupted(interrupt([*BENCHFILL_CLI[1:], "run", folder], marker, **options))
    assert lock_holder(folder) is None
    _complete_journal(folder / "events.jsonl")
    assert sorted(p.name for p in folder.iterdir() if p.name not in ("events.jsonl", "run.lock")) == before
    status = subprocess.run([*BENCHFILL_CLI, "status", str(folder)], capture_output=True, text=True, env=env)
    assert status.returncode == 0, status.stderr


def test_ctrl_c_stops_benchfill_run_and_the_run_resumes(tmp_path):
    """Ctrl-C at start-up, while searching and while writing the outputs, each in a run of the same folder, then a
    run that finishes. The outputs are written after the event loop has ended, all or nothing (they were written
    inside it, one after another, so a Ctrl-C there waited for every one of them). One folder for all phases: the
    run interrupted while it writes is the one that completes the search, so the search runs once."""
    from conftest import BENCHFILL_CLI, sim_run

    folder, env, server = sim_run(tmp_path, 1, search=SMALL_SEARCH)
    try:
        for phase in ("start-up", "searching", "writing"):
            _interrupt_benchfill(folder, env, phase)
        done = subprocess.run([*BENCHFILL_CLI, "run", str(folder)], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        assert (folder / "summary.json").is_file()
    finally:
        server.shutdown()


# -- the mechanisms, each on its own ------------------------------------------------------------------------------

SWALLOWED = """
import sys, time, weakref
sys.path.insert(0, {root!r})
from benchmeasure.base.interrupt import exit_on_interrupt
exit_on_interrupt()
from benchmeasure.base.errors import run_cli

class Thing:
    pass

def main(argv):
    thing = Thing()
    def callback(ref):  # Python swallows what a weakref callback raises ("Exception ignored")
        raise KeyboardInterrupt
    ref = weakref.ref(thing, callback)
    print("test: started", file=sys.stderr, flush=True)
    del thing
    time.sleep(5)
    print("ran on", file=sys.stderr)
    return 0

run_cli(main, [])
"""


def test_a_swallowed_ctrl_c_is_raised_again():
    """A KeyboardInterrupt raised inside a weakref callback during an import was printed as "Exception ignored" and
    the command ran on (fit-suite then exited 0 with its outputs); base/interrupt.py raises it again."""
    import time as clock

    start = clock.monotonic()
    done = subprocess.run([sys.executable, "-c", SWALLOWED.format(root=str(ROOT))], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "interrupted" and "ran on" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr and clock.monotonic() - start < 4


def test_a_ctrl_c_among_the_renames_of_all_or_nothing_waits_for_the_last(tmp_path, monkeypatch):
    """A Ctrl-C between two renames left the first output in place and the second as a .tmp file."""
    from benchmeasure.base import files

    real, calls = os.replace, []

    def replace(source, target):
        calls.append(target)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # arrives while the first rename is under way
            time.sleep(0.05)
        real(source, target)

    monkeypatch.setattr(files.os, "replace", replace)
    targets = [tmp_path / "out" / f"{name}.csv" for name in ("a", "b", "c")]
    with pytest.raises(KeyboardInterrupt):
        with files.all_or_nothing():
            for target in targets:
                with files.atomic_write(target) as handle:
                    handle.write("x\n")
    assert len(calls) == 3 and all(t.read_text() == "x\n" for t in targets)  # all of them, then the interrupt
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]
