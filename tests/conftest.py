"""Shared helpers: run the project's scripts through their real command lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_script(script: str, *args, python: str | None = None, cwd=None, timeout: float = 600,
               flags: tuple = ()) -> subprocess.CompletedProcess:
    """Run ``scripts/<script>`` (or any repo-relative path) with ``args``; capture text output."""
    path = ROOT / script if "/" in script else ROOT / "scripts" / script
    command = [python or sys.executable, *flags, str(path), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=timeout)


def assert_rejected(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 2, exactly one line on stderr starting with 'error:', no traceback; returns the line."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def run_in_process(*argv, prog: str | None = None) -> subprocess.CompletedProcess:
    """``benchmeasure ARGV`` run in this process through the command line's own entry point
    (``benchmeasure.cli.main``: the command's parser, the command, and :func:`benchmeasure.base.errors.run_cli`,
    which turns bad input into one ``error:`` line and exit status 2), stdout and stderr captured. Returns what
    :func:`run_script` does, so :func:`assert_rejected` reads it; an exception that escapes the command's error
    handling fails the test with its traceback. For the many variants of one damaged input, beside a real process
    for a representative few (a process start of the BenchFill commands costs 0.4–0.6 s of CPU).
    The package's loggers, which the command configures (its progress lines), are put back as they were."""
    import contextlib
    import io
    import logging

    from benchmeasure.cli import main

    def ours():
        return [logging.getLogger(name) for name in list(logging.Logger.manager.loggerDict)
                if name == "benchmeasure" or name.startswith("benchmeasure.")]

    saved = {lg.name: (list(lg.handlers), lg.propagate, lg.level) for lg in ours()}
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in argv], prog=prog)
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        finally:
            for lg in ours():
                handlers, propagate, level = saved.get(lg.name, ([], True, logging.NOTSET))
                lg.handlers[:], lg.propagate, lg.level = handlers, propagate, level
    return subprocess.CompletedProcess(["benchmeasure", *map(str, argv)], code, out.getvalue(), err.getvalue())


@pytest.fixture
def write_csv(tmp_path):
    """Write ``text`` (dedented lines) to a CSV in tmp_path and return its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text("\n".join(line.strip() for line in text.strip().splitlines()) + "\n", encoding="utf-8")
        return path

    return write


BENCHFILL_CLI = [sys.executable, str(ROOT / "propose" / "benchfill.py")]


def sim_run(tmp_path, seed, fail_rate=0.0, client=None, search=None, name="t", bench_name=None, jitter_s=0.0,
            jitter_seed=0, world=None):
    """A BenchFill run folder on the synthetic benchmark, initialized by the real CLI against a local sim server.

    Calibration and abilities come from the simulation's ground truth (fast; tests only).
    ``bench_name`` renames the benchmark in its config (its grader stays ``math``); ``jitter_s`` delays each
    reply by a random time drawn in arrival order from ``jitter_seed`` (replies then finish in a shuffled order);
    ``world`` sets fields of the simulated world (:class:`benchmeasure.serving.sim.world.World`).
    Returns (run folder, environment for ``propose/benchfill.py run``, server); shut the server down when done.
    """
    from benchmeasure.serving.sim.dataset import make_sim_benchmark
    from benchmeasure.serving.sim.server import serve
    from benchmeasure.serving.sim.world import World

    data = tmp_path / f"data{seed}"
    config = make_sim_benchmark(data, seed, client=client, search=search, truth=True)
    if bench_name is not None:
        config.write_text(config.read_text().replace('name = "math_sim"', f'name = "{bench_name}"'))
    simulated = World.load(data / "world.json")
    for key, value in (world or {}).items():
        setattr(simulated, key, value)
    simulated.save(data / "world.json")
    server, url = serve(simulated, fail_rate=fail_rate, hang_s=1.5, seed=seed, jitter_s=jitter_s,
                        jitter_seed=jitter_seed)
    env = {**os.environ, "BENCHFILL_SIM_URL": url}
    command = [*BENCHFILL_CLI, "init", "--config", str(config), "--name", f"{name}{seed}",
               "--results", str(tmp_path / "res")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return Path(done.stdout.strip()), env, server


def make_benchmark(root, name, b, test_ids="same", id_column="item_id") -> Path:
    """Write a benchmark folder ``root/name`` as released: ``difficulty.csv`` (``item_id,b_mean``) and ``test.jsonl``.

    ``b`` are the difficulties of items 0 … N−1; ``test_ids`` the IDs written to ``test.jsonl``
    ("same": 0 … N−1; None: no ``test.jsonl``). Returns the folder.
    """
    folder = root / name
    folder.mkdir(parents=True)
    lines = [f"{id_column},b_mean"] + [f"{i},{v}" for i, v in enumerate(b)]
    (folder / "difficulty.csv").write_text("\n".join(lines) + "\n")
    if test_ids == "same":
        test_ids = list(range(len(b)))
    if test_ids is not None:
        (folder / "test.jsonl").write_text("".join(json.dumps({"item_id": i, "question": "?"}) + "\n"
                                                   for i in test_ids))
    return folder


def tiny_seed_set(tmp_path, sds):
    """A five-item BenchFill seed set with posterior sds ``sds``: b = 0, 0.5, 1.5, 1.6, 3.0, so the widest gap is
    (1.6, 3.0), then (0.5, 1.5), then (0.0, 0.5)."""
    from benchmeasure.benchfill.gaps import load_seed_set

    folder = tmp_path / "bench"
    folder.mkdir(parents=True)
    b = [0.0, 0.5, 1.5, 1.6, 3.0]
    (folder / "difficulty.csv").write_text(
        "item_id,b_mean,b_sd\n" + "".join(f"{i},{v},{s}\n" for i, (v, s) in enumerate(zip(b, sds))))
    (folder / "test.jsonl").write_text("".join(json.dumps({"item_id": i, "question": "?", "answer": "1"}) + "\n"
                                               for i in range(len(b))))
    return load_seed_set("bench", folder / "difficulty.csv", folder / "test.jsonl")


def journalled(folder: Path) -> int:
    """Lines in a run folder's ``events.jsonl`` journal (0 before it exists)."""
    path = Path(folder) / "events.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def kill_after_progress(folder: Path, proc: subprocess.Popen, events: int, timeout: float = 60) -> bool:
    """SIGKILL ``proc`` once the journal has grown by ``events`` lines; True if it was still running then.

    Waiting for journalled progress rather than a fixed time keeps a kill mid-run on a fast machine too.
    """
    target, deadline = journalled(folder) + events, time.time() + timeout
    while journalled(folder) < target and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    alive = proc.poll() is None
    proc.kill()
    proc.wait()
    return alive


def wait_for_lock(folder: Path, proc: subprocess.Popen, timeout: float = 30) -> None:
    """Wait until ``proc`` holds the run folder's lock (fails the test if it exits or never takes it)."""
    from benchmeasure.benchfill.eventlog import lock_holder

    deadline = time.time() + timeout
    while lock_holder(folder) != str(proc.pid):
        assert proc.poll() is None and time.time() < deadline, "the run never took its lock"
        time.sleep(0.02)


def built_once(tmp_path_factory, name: str, build) -> Path:
    """A folder that ``build(folder)`` fills once per test run, for a session fixture used by several test files.

    Under pytest-xdist each worker is its own session, and a session fixture of files that ran on different workers
    was built once on each (seconds of fits or BenchFill runs, two or three times over in CI's three workers). Here
    the first worker to ask builds it in the folder that the workers' temporary folders share, under a lock, and
    the others wait for it and read it: the same real build, once. Without xdist it is an ordinary
    ``tmp_path_factory.mktemp(name)``. A failed build leaves no completion mark: the next worker builds again and
    fails in its own tests too. The tests read these folders and copy them before changing anything."""
    import fcntl
    import shutil

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent   # the run's folder, above each worker's own
    folder, done = shared / f"shared-{name}", shared / f"shared-{name}.built"
    with open(shared / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def filled_runs(tmp_path_factory):
    """A finished BenchFill run and a finished mass fill (3 items) on the simulated benchmark, made by the real CLIs.

    Returns ``(calibration.csv, run folder, mass-fill folder)``. About 25 s; shared by the explorer tests
    (:func:`built_once`)."""
    root = built_once(tmp_path_factory, "filled", _fill_runs)
    made = json.loads((root / "made.json").read_text(encoding="utf-8"))
    return root / "data" / "calibration.csv", Path(made["run"]), Path(made["mass"])


def _fill_runs(root: Path) -> None:
    """:func:`filled_runs`' build: the runs under ``root``, their folders named in ``root/made.json``."""
    from benchmeasure.serving.sim.dataset import make_sim_benchmark
    from benchmeasure.serving.sim.server import serve
    from benchmeasure.serving.sim.world import World

    data = root / "data"
    config = make_sim_benchmark(data, 1, search={"rounds": 2}, truth=True)
    server, url = serve(World.load(data / "world.json"), seed=1)
    env = {**os.environ, "BENCHFILL_SIM_URL": url}
    mass_cli = [sys.executable, str(ROOT / "propose" / "mass_fill" / "mass_fill.py")]
    try:
        made = subprocess.run([*BENCHFILL_CLI, "init", "--config", str(config), "--name", "run", "--results",
                               str(root / "res")], capture_output=True, text=True, env=env, check=True)
        run = Path(made.stdout.strip())
        subprocess.run([*BENCHFILL_CLI, "run", str(run)], capture_output=True, text=True, env=env, check=True)
        made = subprocess.run([*mass_cli, "init", "--config", str(config), "--name", "mass", "--results",
                               str(root / "res"), "--max-items", "3"], capture_output=True, text=True, env=env,
                              check=True)
        mass = Path(made.stdout.strip())
        subprocess.run([*mass_cli, "run", str(mass)], capture_output=True, text=True, env=env, check=True)
    finally:
        server.shutdown()
    (root / "made.json").write_text(json.dumps({"run": str(run), "mass": str(mass)}), encoding="utf-8")


@pytest.fixture(scope="session")
def checked_fit(tmp_path_factory):
    """A small benchmark with three wrong keys, its fit and its check-fit, made by the real CLIs (a few seconds).

    14 models × 60 items (``q0`` … ``q59``), K = 3, drawn from a 1PL; ``q0``–``q2`` inverted for every model (y → K − y,
    what a wrong key does). ``benchmeasure fit --method map`` (seconds), then ``benchmeasure check-fit``. Returns a
    dict: ``matrix``, ``fit`` (the fit folder), ``check`` (the check's folder), ``items``, ``inverted``; built once
    for all workers (:func:`built_once`)."""
    root = built_once(tmp_path_factory, "checked_fit", _check_a_fit)
    return {"matrix": root / "matrix.csv", "fit": root / "fit", "check": root / "check",
            "items": [f"q{i}" for i in range(CHECKED_ITEMS)], "inverted": CHECKED_INVERTED}


CHECKED_ITEMS, CHECKED_INVERTED = 60, ["q0", "q1", "q2"]


def _check_a_fit(root: Path) -> None:
    """:func:`checked_fit`' build, under ``root``."""
    import csv

    import numpy as np

    models, items, k = 14, CHECKED_ITEMS, 3
    rng = np.random.default_rng(7)
    theta = np.linspace(-2.0, 2.0, models)
    b = rng.normal(0.0, 1.0, items)
    y = rng.binomial(k, 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :]))))
    inverted = CHECKED_INVERTED
    y[:, :len(inverted)] = k - y[:, :len(inverted)]
    names = [f"q{i}" for i in range(items)]
    matrix = root / "matrix.csv"
    with open(matrix, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", *names])
        writer.writerows([f"m{j}", *map(str, y[j])] for j in range(models))
    done = run_script("fit_irt.py", matrix, "--n-trials", k, "--method", "map", "--output-dir", root / "fit",
                      "--quiet", timeout=300)
    assert done.returncode == 0, done.stderr
    done = run_script("check_fit.py", root / "fit", "--output-dir", root / "check", timeout=300)
    assert done.returncode == 0, done.stderr


# A full disk: the n-th fsync of the child fails with ENOSPC (patched in the child, as a tiny tmpfs would).
# Run as [sys.executable, "-c", FULL_DISK, SCRIPT, ARGS...] with FAIL_AT=n in the environment.
FULL_DISK = """
import errno, os, runpy, sys
real, calls = os.fsync, [0]
def fsync(fd):
    calls[0] += 1
    if calls[0] == int(os.environ["FAIL_AT"]):
        raise OSError(errno.ENOSPC, "No space left on device")
    return real(fd)
os.fsync = fsync
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def wheel_and_venv(root: Path) -> tuple[Path, Path]:
    """Build the project's wheel from a copy of the package (this interpreter's setuptools, no network) under
    ``root`` and create an empty venv beside it (no system site packages); returns (wheel, venv folder)."""
    import shutil
    import venv

    pytest.importorskip("setuptools")
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "build_backend.py"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "benchmeasure", source / "benchmeasure", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
                            str(root / "dist"), str(source)], cwd=root, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = (root / "dist").glob("benchmeasure-*.whl")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    return wheel, env_dir


# the longest test files first (measured in fresh-clone runs, 2026-12-02 and -05; test_benchfill_inputs.py below
# test_compiled_density.py since its CLI starts no longer import the loop, 2026-12-07): with the test files spread over
# workers (scripts/run_tests.sh, --dist loadfile --no-loadscope-reorder) the long files (the BenchFill loop, minutes
# of vLLM on the CPU, a wheel installed into a fresh venv) then overlap every other file instead of trailing them,
# and the short files fill the end
LONGEST_FIRST = ("test_benchfill_loop.py", "test_real_model.py", "test_fresh_install_journeys.py",
                 "test_compiled_density.py", "test_benchfill_inputs.py", "test_interrupt_commands.py",
                 "test_harness_inspect.py", "test_run_experiment.py", "test_sim_server.py",
                 "test_benchfill_mass_fill.py", "test_lmms_backend.py", "test_suite_lkj_collapsed.py")


def pytest_configure(config):
    """Ctrl-C must act in the tests of interruption: a runner that starts the suite as a background job (``cmd &``
    in a script) hands it SIGINT ignored, which every child would inherit, and each Ctrl-C test would then fail
    for the runner's sake (seen on a fresh-clone run started that way). The default handler is put back; the
    children of the tests then start with SIGINT's default action, as they do from a terminal."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))   # stable: the rest keep order


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have been waited for."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_PHASE_CPU = {"last": _cpu_seconds()}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Note the CPU seconds the phase just ended used (``cpu`` of the BENCHMEASURE_TEST_TIMES lines): on a shared
    2-core machine the wall time of a test says how long it waited as much as what it cost."""
    yield
    if os.environ.get("BENCHMEASURE_TEST_TIMES"):
        now = _cpu_seconds()
        _PHASE_CPU[(item.nodeid, call.when)] = now - _PHASE_CPU["last"]
        _PHASE_CPU["last"] = now


def pytest_runtest_logreport(report):
    """With BENCHMEASURE_TEST_TIMES=<file>, append each test phase's duration as it ends (one JSON line, with
    the CPU seconds of the worker and its reaped children since the phase before): the per-file times survive a
    run that is stopped before pytest's own --durations table."""
    path = os.environ.get("BENCHMEASURE_TEST_TIMES")
    if path and not hasattr(report, "node"):   # xdist's controller sees each worker's report again (.node)
        cpu = _PHASE_CPU.pop((report.nodeid, report.when), None)
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"test": report.nodeid, "when": report.when, "s": round(report.duration, 3),
                                  "cpu": None if cpu is None else round(cpu, 3), "outcome": report.outcome}) + "\n")


# -- shared fits for the model-fit check and drift (one each per session; tests copy them before changing anything) ---

MISFIT_MODELS, MISFIT_ITEMS, MISFIT_K = 14, 90, 3
MISFIT_INVERTED = ["q0", "q1", "q2", "q3"]   # wrong keys: inverted for every model
MISFIT_SHUFFLED = "m5"                       # a mis-scored model: its row shuffled across items


def write_rows(path, header, rows):
    """A CSV of ``header`` and ``rows``; returns ``path``."""
    import csv

    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle, lineterminator="\n")
        out.writerow(header)
        out.writerows(rows)
    return path


@pytest.fixture(scope="session")
def misfit_fit(tmp_path_factory):
    """One small NUTS fit (14 models × 90 items, K = 3, 3 % holes, --save-posterior) of a matrix with planted
    defects, made by ``benchmeasure fit`` with its default model-fit check (``fit/check_fit/``).

    Returns the root: ``matrix.csv``, ``fit/`` and ``fit.stderr`` (what the fit printed). Shared by the check-fit,
    diagnose, summarize and explorer tests; about 10 s, once for all workers (:func:`built_once`)."""
    return built_once(tmp_path_factory, "misfit", _fit_the_misfits)


def _fit_the_misfits(root: Path) -> None:
    """:func:`misfit_fit`'s build, under ``root``."""
    import numpy as np

    rng = np.random.default_rng(7)
    theta = np.linspace(-2.0, 2.0, MISFIT_MODELS)
    b = rng.normal(0.0, 1.2, MISFIT_ITEMS)
    y = rng.binomial(MISFIT_K, 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :]))))
    for i in range(len(MISFIT_INVERTED)):
        y[:, i] = MISFIT_K - y[:, i]
    j = int(MISFIT_SHUFFLED[1:])
    y[j] = y[j, rng.permutation(MISFIT_ITEMS)]
    holes = rng.random(y.shape) < 0.03
    write_rows(root / "matrix.csv", ["model", *(f"q{i}" for i in range(MISFIT_ITEMS))],
               [[f"m{j}", *("" if holes[j, i] else str(y[j, i]) for i in range(MISFIT_ITEMS))]
                for j in range(MISFIT_MODELS)])
    done = run_script("fit_irt.py", root / "matrix.csv", "--n-trials", MISFIT_K, "--allow-missing", "--output-dir",
                      root / "fit", "--chains", 2, "--tune", 150, "--draws", 150, "--seed", 3, "--save-posterior",
                      "--no-calibrate", timeout=300)
    assert done.returncode == 0, done.stderr
    (root / "fit.stderr").write_text(done.stderr, encoding="utf-8")


DRIFT_MODELS, DRIFT_ITEMS, DRIFT_MONTHS, DRIFT_K, DRIFT_BAD = 10, 240, 12, 4, 3  # m03: +2 logits before month 7


@pytest.fixture(scope="session")
def drift_world(tmp_path_factory):
    """A dated matrix (10 models × 240 items over 12 months, K = 4; model m03 better on items before month 7) and
    ``benchmeasure drift`` by date on it, with model release and cut-off dates. About 5 s; shared by the drift and
    explorer tests, once for all workers (:func:`built_once`). Returns ``{"folder", "matrix", "meta", "out", "json",
    "models"}``."""
    folder = built_once(tmp_path_factory, "drift", _make_drift_world)
    return {"folder": folder, "matrix": folder / "matrix.csv", "meta": folder / "items.csv", "out": folder / "out",
            "json": json.loads((folder / "drift.json").read_text(encoding="utf-8")),
            "models": [f"m{j:02d}" for j in range(DRIFT_MODELS)]}


def _make_drift_world(folder: Path) -> None:
    """:func:`drift_world`'s build, under ``folder``; what the command printed in ``drift.json``."""
    import numpy as np

    rng = np.random.default_rng(11)
    month = np.repeat(np.arange(DRIFT_MONTHS), DRIFT_ITEMS // DRIFT_MONTHS)
    theta = np.linspace(-1.5, 1.5, DRIFT_MODELS)
    b = rng.normal(0, 1.2, DRIFT_ITEMS) + 0.08 * month          # difficulty drifts up over the year
    eta = theta[:, None] - b
    eta[DRIFT_BAD] += 2.0 * (month < 7)
    counts = rng.binomial(DRIFT_K, 1 / (1 + np.exp(-eta)))
    models = [f"m{j:02d}" for j in range(DRIFT_MODELS)]
    items = [f"q{i:03d}" for i in range(DRIFT_ITEMS)]
    matrix = write_rows(folder / "matrix.csv", ["model", *items], [[m, *row] for m, row in zip(models, counts)])
    dates = [f"2024-{k + 1:02d}-{1 + i % 28:02d}" for i, k in enumerate(month)]
    source = ["old" if i % 2 else "new" for i in range(DRIFT_ITEMS)]
    meta = write_rows(folder / "items.csv", ["item", "date", "source", "release"],
                      [[i, d, s, "r1" if k < 6 else "r2"] for i, d, s, k in zip(items, dates, source, month)])
    model_meta = write_rows(folder / "models.csv", ["model", "release", "cutoff"],
                            [[m, "2024-09-01", "2024-06-20" if j == DRIFT_BAD else ""] for j, m in enumerate(models)])
    out = folder / "out"
    done = run_script("drift.py", matrix, "--n-trials", DRIFT_K, "--item-meta", meta, "--by", "date", "--model-meta",
                      model_meta, "--output-dir", out, "--json", "--max-replicates", 2000, "--predict-after")
    assert done.returncode == 0, done.stderr
    (folder / "drift.json").write_text(done.stdout, encoding="utf-8")
