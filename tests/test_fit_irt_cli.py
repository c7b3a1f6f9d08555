"""scripts/fit_irt.py through its real command line: outputs, keys, reproducibility, MAP,
guessing CSVs, and every rejected input (exit 2, one line, nothing written)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmeasure.core.matrix import ResponseMatrix, write_matrix
from benchmeasure.irt.simulate import simulate_counts

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "fit_irt.py"
N_TRIALS = 3

pytest.importorskip("pymc")
pytest.importorskip("nutpie")


def run(*args, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, stdin=subprocess.DEVNULL, timeout=300)


def write_csv(path: Path, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    return path


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("matrix")
    rng = np.random.default_rng(4)
    counts = simulate_counts(rng.normal(size=5), rng.normal(size=12), N_TRIALS, seed=9)
    counts[:, 0] = N_TRIALS  # every model solves item 000 every time
    counts[:, 1] = 0         # no model ever solves item 001
    items = [f"{i:03d}" for i in range(12)]
    path = folder / "response_matrix.csv"
    write_matrix(ResponseMatrix([f"model-{j}" for j in range(5)], items, counts, N_TRIALS), path)
    return path


@pytest.fixture(scope="module")
def nuts_runs(matrix_file, tmp_path_factory):
    """Two NUTS runs with the same seed (the second without --save-posterior and with --no-check-fit, into a folder
    holding an earlier fit's check), a little draws."""
    out1 = tmp_path_factory.mktemp("nuts1")
    out2 = tmp_path_factory.mktemp("nuts2")
    (out2 / "check_fit").mkdir()
    (out2 / "check_fit" / "check_fit.json").write_text("{}")   # an earlier fit's check: the refit removes it
    common = [matrix_file, "--n-trials", N_TRIALS, "--chains", 2, "--tune", 150, "--draws", 60, "--seed", 5]
    first = run(*common, "--output-dir", out1, "--save-posterior")
    second = run(*common, "--output-dir", out2, "--quiet", "--no-check-fit")
    return first, out1, second, out2


def read_rows(path: Path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


@pytest.mark.slow
def test_outputs_columns_and_keys(nuts_runs, matrix_file):
    first, out, _, _ = nuts_runs
    assert first.returncode == 0, first.stderr
    difficulty = read_rows(out / "difficulty.csv")
    assert difficulty[0] == ["item", "b_mean", "b_sd", "r_hat", "ess_bulk"]
    assert [row[0] for row in difficulty[1:]] == [f"{i:03d}" for i in range(12)]  # IDs kept as strings, in order
    assert all(float(row[2]) > 0 for row in difficulty[1:])
    ability = read_rows(out / "ability.csv")
    assert ability[0] == ["model", "theta_mean", "theta_sd", "r_hat", "ess_bulk"]
    assert [row[0] for row in ability[1:]] == [f"model-{j}" for j in range(5)]
    d = json.loads((out / "diagnostics.json").read_text())
    for key in ("max_r_hat", "min_ess_bulk", "divergences", "method", "settings", "input", "constant_items",
                "versions", "wall_time_s", "timing", "warnings"):
        assert key in d, key
    assert isinstance(d["max_r_hat"], float) and isinstance(d["min_ess_bulk"], float)
    assert isinstance(d["divergences"], int)
    assert d["method"] == "nuts"
    s = d["settings"]
    assert {k: s[k] for k in ("chains", "tune", "draws", "target_accept", "seed", "sampler", "guessing")} == {
        "chains": 2, "tune": 150, "draws": 60, "target_accept": 0.95, "seed": 5, "sampler": "nutpie", "guessing": 0.0}
    assert s["route"] == "collapsed"   # the default route, recorded
    assert d["quadrature"]["max_edge_weight"] < 1e-20 and d["quadrature"]["max_abs_log_marginal_error"] < 1e-9
    import hashlib

    assert d["input"]["sha256"] == hashlib.sha256(matrix_file.read_bytes()).hexdigest()
    assert (d["input"]["models"], d["input"]["items"], d["input"]["n_trials"]) == (5, 12, N_TRIALS)
    assert d["input"]["path"] == str(matrix_file.resolve())
    assert d["constant_items"]["all_correct"] == ["000"] and d["constant_items"]["all_wrong"] == ["001"]
    assert isinstance(d["min_ess_tail"], float) and d["worst_ess_tail"].startswith(("theta[", "b["))
    assert d["constant_models"]["all_correct"] == [] and d["constant_models"]["all_wrong"] == []
    assert d["versions"]["pymc"] and d["versions"]["nutpie"] and d["versions"]["python"]
    # no temporary files left behind
    assert sorted(p.name for p in out.iterdir()) == ["ability.csv", "check_fit", "diagnostics.json", "difficulty.csv",
                                                     "posterior.zarr"]
    assert sorted(p.name for p in (out / "check_fit").iterdir()) == ["check_fit.json", "items.csv", "models.csv"]
    assert d["outputs"] == ["difficulty.csv", "ability.csv", "diagnostics.json", "posterior.zarr", "check_fit"]
    assert [line for line in first.stderr.splitlines() if line.startswith("model fit: ")] == [d["check_fit"]["summary"]]


@pytest.mark.slow
def test_constant_items_are_finite_and_ordered(nuts_runs):
    _, out, _, _ = nuts_runs
    b = {row[0]: float(row[1]) for row in read_rows(out / "difficulty.csv")[1:]}
    assert all(np.isfinite(list(b.values())))
    assert b["000"] == min(b.values()) and b["001"] == max(b.values())


@pytest.mark.slow
def test_low_ess_warns_with_advice_and_no_progress_bar_off_a_terminal(nuts_runs):
    first, out, _, _ = nuts_runs
    d = json.loads((out / "diagnostics.json").read_text())
    # 2 chains × 60 draws cannot reach a bulk ESS of 400
    assert d["min_ess_bulk"] < 400
    assert "warning: min bulk ESS" in first.stderr and "--draws" in first.stderr
    assert d["warnings"] and any("ESS" in w for w in d["warnings"])
    assert "\r" not in first.stderr and "1PL fit: [" not in first.stderr
    assert "1PL fit: done" in first.stderr  # off a terminal: plain progress lines, the last one at the end


@pytest.mark.slow
def test_same_seed_identical_outputs_and_quiet(nuts_runs):
    first, out1, second, out2 = nuts_runs
    assert second.returncode == 0, second.stderr
    for name in ("difficulty.csv", "ability.csv"):
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes(), name
    d1 = json.loads((out1 / "diagnostics.json").read_text())
    d2 = json.loads((out2 / "diagnostics.json").read_text())
    for key in ("max_r_hat", "min_ess_bulk", "divergences"):
        assert d1[key] == d2[key]
    # --quiet: only warnings remain on stderr
    assert all(line.startswith("warning:") for line in second.stderr.splitlines())
    # --no-check-fit: no check, and the earlier fit's check is gone
    assert not (out2 / "check_fit").exists() and "check_fit" not in d2 and "check_fit" not in d2["outputs"]
    assert (out1 / "check_fit" / "check_fit.json").is_file() and "check_fit" in d1
    assert "fitting the 1PL" in first.stderr


@pytest.mark.slow
def test_saved_posterior_reads_back(nuts_runs, matrix_file):
    import xarray as xr

    from benchmeasure.core.matrix import read_matrix

    _, out, _, _ = nuts_runs
    tree = xr.open_datatree(out / "posterior.zarr", engine="zarr")
    b = tree["posterior"]["b"]
    assert b.shape == (2, 60, 12)
    assert list(b.coords["item"].values) == [f"{i:03d}" for i in range(12)]
    assert "diverging" in tree["sample_stats"].data_vars
    difficulty = read_rows(out / "difficulty.csv")
    # b_mean is the mean of the item's draws pooled with those of every item sharing its column sum
    # (the same exact posterior: benchmeasure/irt/ties.py)
    sums = read_matrix(matrix_file, N_TRIALS).counts.sum(axis=0)
    tied = np.flatnonzero(sums == sums[2])
    assert float(difficulty[3][1]) == pytest.approx(float(b.values[:, :, tied].mean()), rel=1e-6)


def test_a_model_with_every_answer_right_is_flagged(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("model,a,b,c\nall,3,3,3\nsome,1,2,0\nnone,0,0,0\n")
    result = run(path, "--n-trials", 3, "--output-dir", tmp_path / "out", "--method", "map")
    assert result.returncode == 0, result.stderr
    d = json.loads((tmp_path / "out" / "diagnostics.json").read_text())
    assert d["constant_models"]["all_correct"] == ["all"] and d["constant_models"]["all_wrong"] == ["none"]
    assert "2 model(s) answered every item the same way" in result.stderr
    assert d["min_ess_tail"] is None  # no draws with --method map


def test_map_outputs_say_they_carry_no_uncertainty(matrix_file, tmp_path):
    result = run(matrix_file, "--n-trials", N_TRIALS, "--output-dir", tmp_path / "out", "--method", "map")
    assert result.returncode == 0, result.stderr
    rows = read_rows(tmp_path / "out" / "difficulty.csv")
    assert rows[0] == ["item", "b_mean", "b_sd", "r_hat", "ess_bulk"]
    assert all(row[1] != "" and row[2:] == ["", "", ""] for row in rows[1:])
    ability = read_rows(tmp_path / "out" / "ability.csv")
    assert all(row[2:] == ["", "", ""] for row in ability[1:])
    d = json.loads((tmp_path / "out" / "diagnostics.json").read_text())
    assert d["method"] == "map" and d["settings"]["method"] == "map"
    assert d["max_r_hat"] is None and d["min_ess_bulk"] is None and d["divergences"] == 0
    assert "no posterior uncertainty" in result.stderr or "posterior mode only" in result.stderr
    assert d["uncertainty"].startswith("none")


def test_guessing_csv_is_used(matrix_file, tmp_path):
    items = [f"{i:03d}" for i in range(12)]
    guess = write_csv(tmp_path / "guessing.csv", [["item_id", "guessing"]] + [[i, "0.25"] for i in reversed(items)])
    out_csv = tmp_path / "csv"
    out_const = tmp_path / "const"
    r1 = run(matrix_file, "--n-trials", N_TRIALS, "--output-dir", out_csv, "--method", "map", "--guessing-csv", guess)
    r2 = run(matrix_file, "--n-trials", N_TRIALS, "--output-dir", out_const, "--method", "map", "--guessing", "0.25")
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    b1 = [row[1] for row in read_rows(out_csv / "difficulty.csv")[1:]]
    b2 = [row[1] for row in read_rows(out_const / "difficulty.csv")[1:]]
    assert b1 == b2
    d = json.loads((out_csv / "diagnostics.json").read_text())
    assert d["settings"]["guessing"]["min"] == d["settings"]["guessing"]["max"] == 0.25


# ------------------------------------------------------------------------------------------
# rejected input: exit 2, one line on stderr naming the problem, nothing written


def _bad_matrix(tmp_path, name, rows):
    return write_csv(tmp_path / name, rows)


GOOD_ROWS = [["model", "a", "b", "c"], ["m1", "1", "2", "0"], ["m2", "3", "0", "1"]]


def _variant(change):
    rows = [list(r) for r in GOOD_ROWS]
    change(rows)
    return rows


MATRIX_CASES = {
    "not an integer": (_variant(lambda r: r[2].__setitem__(2, "1.5")), "'1.5' is not an integer"),
    "text": (_variant(lambda r: r[1].__setitem__(3, "x")), "item 'c'"),
    "digit separator": (_variant(lambda r: r[1].__setitem__(1, "1_0")), "'1_0' is not an integer"),
    "plus sign": (_variant(lambda r: r[1].__setitem__(1, "+1")), "'+1' is not an integer"),
    "above n_trials": (_variant(lambda r: r[2].__setitem__(1, "4")), "count 4 is outside [0, 3]"),
    "negative": (_variant(lambda r: r[1].__setitem__(1, "-1")), "outside [0, 3]"),
    "empty cell": (_variant(lambda r: r[2].__setitem__(2, "")), "empty cell"),
    "duplicate model": (_variant(lambda r: r[2].__setitem__(0, "m1")), "model ID 'm1'"),
    "duplicate item": (_variant(lambda r: r[0].__setitem__(3, "a")), "column 'a' appears twice in the header"),
    "one model": (GOOD_ROWS[:2], "at least 2 models"),
    "one item": ([row[:2] for row in GOOD_ROWS], "2 items"),
}


@pytest.mark.parametrize("case", list(MATRIX_CASES))
def test_bad_matrix_rejected(case, tmp_path):
    rows, expected = MATRIX_CASES[case]
    path = _bad_matrix(tmp_path, "matrix.csv", rows)
    out = tmp_path / "out"
    result = run(path, "--n-trials", 3, "--output-dir", out)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and expected in lines[0], lines
    assert not out.exists()


def _good_matrix(tmp_path):
    return _bad_matrix(tmp_path, "good.csv", GOOD_ROWS)


GUESS_CASES = {
    "guessing 1": (["--guessing", "1"], "--guessing"),
    "guessing negative": (["--guessing", "-0.1"], "--guessing"),
    "guessing nan": (["--guessing", "nan"], "--guessing"),
    "csv misses an item": ([["item_id", "guessing"], ["a", "0.2"], ["b", "0.2"]], "'c'"),
    "csv unknown item": ([["item_id", "guessing"], ["a", "0.2"], ["b", "0.2"], ["c", "0.2"], ["zz", "0.1"]],
                         "'zz' is not in the matrix"),
    "csv repeated item": ([["item_id", "guessing"], ["a", "0.2"], ["b", "0.2"], ["a", "0.3"], ["c", "0.2"]],
                          "'a' appears more than once"),
    "csv value 1": ([["item_id", "guessing"], ["a", "0.2"], ["b", "1.0"], ["c", "0.2"]], "outside [0, 1)"),
    "csv not a number": ([["item_id", "guessing"], ["a", "x"], ["b", "0.1"], ["c", "0.2"]], "not a number"),
    "csv wrong header": ([["item", "g"], ["a", "0.1"]], "'item_id'"),
}


@pytest.mark.parametrize("case", list(GUESS_CASES))
def test_bad_guessing_rejected(case, tmp_path):
    spec, expected = GUESS_CASES[case]
    if isinstance(spec[0], list):
        spec = ["--guessing-csv", write_csv(tmp_path / "g.csv", spec)]
    out = tmp_path / "out"
    result = run(_good_matrix(tmp_path), "--n-trials", 3, "--output-dir", out, *spec)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], lines
    assert not out.exists()


OPTION_CASES = {
    "n-trials 0": (["--n-trials", "0"], "--n-trials"),
    "missing n-trials": ([], "--n-trials"),
    "chains 0": (["--n-trials", "3", "--chains", "0"], "--chains"),
    "draws 0": (["--n-trials", "3", "--draws", "0"], "--draws"),
    "tune 0 with nutpie": (["--n-trials", "3", "--tune", "0"], "--tune"),
    "target-accept 1": (["--n-trials", "3", "--target-accept", "1"], "--target-accept"),
    "tune 0 with --model 2pl": (["--n-trials", "3", "--model", "2pl", "--tune", "0"], "--tune"),
    "negative seed": (["--n-trials", "3", "--seed", "-3"], "--seed"),
    "unknown sampler": (["--n-trials", "3", "--sampler", "stan"], "--sampler"),
    "unknown method": (["--n-trials", "3", "--method", "vi"], "--method"),
    "both guessing options": (["--n-trials", "3", "--guessing", "0.2", "--guessing-csv", "x.csv"], "not allowed"),
    "missing matrix file": (["--n-trials", "3", "MISSING"], "no such file"),
}


@pytest.mark.parametrize("case", list(OPTION_CASES))
def test_bad_options_rejected(case, tmp_path):
    args, expected = OPTION_CASES[case]
    matrix = _good_matrix(tmp_path)
    if "MISSING" in args:
        args = [a if a != "MISSING" else "" for a in args]
        argv = [tmp_path / "nope.csv", *[a for a in args if a]]
    else:
        argv = [matrix, *args]
    out = tmp_path / "out"
    result = run(*argv, "--output-dir", out)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], lines
    assert not out.exists()


def test_output_dir_that_is_a_file_is_rejected(tmp_path):
    target = tmp_path / "taken"
    target.write_text("keep me")
    result = run(_good_matrix(tmp_path), "--n-trials", 3, "--output-dir", target)
    assert result.returncode == 2 and "not a folder" in result.stderr
    assert target.read_text() == "keep me"


def test_rejection_leaves_an_existing_output_dir_untouched(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "difficulty.csv").write_text("previous results\n")
    path = _bad_matrix(tmp_path, "bad.csv", MATRIX_CASES["empty cell"][0])
    result = run(path, "--n-trials", 3, "--output-dir", out)
    assert result.returncode == 2
    assert [p.name for p in out.iterdir()] == ["difficulty.csv"]
    assert (out / "difficulty.csv").read_text() == "previous results\n"


def test_numpyro_choice_without_numpyro_is_a_clear_error(tmp_path):
    try:
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError:
        result = run(_good_matrix(tmp_path), "--n-trials", 3, "--output-dir", tmp_path / "out",
                     "--sampler", "numpyro")
        assert result.returncode == 2 and "numpyro" in result.stderr and "--sampler nutpie" in result.stderr
        assert not (tmp_path / "out").exists()
    else:
        pytest.skip("numpyro is installed here")


@pytest.mark.slow
def test_progress_bar_on_a_terminal_and_quiet_silences_it(matrix_file, tmp_path):
    import pty

    def stderr_on_a_tty(*extra):
        master, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        proc = subprocess.Popen([sys.executable, str(SCRIPT), str(matrix_file), "--n-trials", str(N_TRIALS),
                                 "--output-dir", str(tmp_path / f"out{len(extra)}"), "--chains", "2", "--tune", "100",
                                 "--draws", "100", "--seed", "1", *extra],
                                stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=300)
        os.close(master)
        return proc.returncode, b"".join(chunks).decode("utf-8", "replace")

    code, text = stderr_on_a_tty()
    assert code == 0, text
    assert "1PL fit: [" in text and "divergences" in text and "\r" in text and "elapsed" in text
    code, text = stderr_on_a_tty("--quiet")
    assert code == 0 and "1PL fit" not in text


@pytest.mark.slow
def test_pymc_sampler_through_the_command_line(matrix_file, tmp_path):
    out = tmp_path / "out"
    result = run(matrix_file, "--n-trials", N_TRIALS, "--output-dir", out, "--sampler", "pymc", "--chains", 2,
                 "--tune", 100, "--draws", 100, "--seed", 4, "--quiet")
    assert result.returncode == 0, result.stderr
    assert all(line.startswith("warning:") for line in result.stderr.splitlines()), result.stderr
    d = json.loads((out / "diagnostics.json").read_text())
    assert d["settings"]["sampler"] == "pymc" and d["max_r_hat"] is not None
    assert len(read_rows(out / "difficulty.csv")) == 13


def test_non_utf8_matrix_is_one_line(tmp_path):
    path = tmp_path / "matrix.csv"
    path.write_bytes("model,a,b\nm\xe8,1,2\nm2,0,1\n".encode("latin-1"))
    result = run(path, "--n-trials", 3, "--output-dir", tmp_path / "out")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "not UTF-8" in result.stderr and str(path) in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_joint_route_through_the_command_line(matrix_file, tmp_path):
    out = tmp_path / "out"
    result = run(matrix_file, "--n-trials", N_TRIALS, "--output-dir", out, "--route", "joint", "--chains", 2,
                 "--tune", 100, "--draws", 100, "--seed", 4, "--quiet")
    assert result.returncode == 0, result.stderr
    d = json.loads((out / "diagnostics.json").read_text())
    assert d["settings"]["route"] == "joint" and d["quadrature"] is None
    assert len(read_rows(out / "difficulty.csv")) == 13


@pytest.mark.parametrize("route", ["collapsed", "joint", "gibbs"])
def test_a_sampling_route_with_the_posterior_mode_is_refused_not_ignored(matrix_file, tmp_path, route):
    result = run(matrix_file, "--n-trials", N_TRIALS, "--output-dir", tmp_path / "out", "--route", route,
                 "--method", "map")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and f"--route {route}" in result.stderr
    assert "--method" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_collapsed_route_with_numpyro_is_rejected(matrix_file, tmp_path):
    result = run(matrix_file, "--n-trials", N_TRIALS, "--output-dir", tmp_path / "out", "--route", "collapsed",
                 "--sampler", "numpyro")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "numpyro" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_progress_lines_in_a_log_at_the_configured_cadence(matrix_file, tmp_path):
    """stderr to a file: a plain progress line every interval (10 s by default; 0.2 s here), whatever the phase."""
    import re

    interval = 0.2
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["BENCHMEASURE_PROGRESS_INTERVAL"] = str(interval)
    log = tmp_path / "fit.log"
    with open(log, "w", encoding="utf-8") as handle:
        proc = subprocess.run([sys.executable, str(SCRIPT), str(matrix_file), "--n-trials", str(N_TRIALS),
                               "--output-dir", str(tmp_path / "out"), "--chains", "2", "--tune", "200",
                               "--draws", "200", "--seed", "2"], stdout=subprocess.DEVNULL, stderr=handle,
                              stdin=subprocess.DEVNULL, env=env, cwd=ROOT, timeout=300)
    text = log.read_text(encoding="utf-8")
    assert proc.returncode == 0, text
    assert "\r" not in text
    lines = [line for line in text.splitlines() if line.startswith("1PL fit: ")]
    elapsed = [float(re.search(r"elapsed ([0-9.]+) s", line).group(1)) for line in lines]
    assert len(lines) >= 4, text                      # the fit lasted several intervals
    assert lines[-1].startswith("1PL fit: done") and "2 chains" in lines[-1]
    # each line comes one interval after the previous one (generous slack for a loaded machine)
    assert max(np.diff(elapsed)) <= interval + 4.0, elapsed
    assert elapsed == sorted(elapsed)
    assert any(re.search(r"NUTS (warm-up|draws), \d+/\d+ \(", line) for line in lines) or \
        any("drawing difficulties" in line for line in lines) or any("compiling" in line for line in lines)
