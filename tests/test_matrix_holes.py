"""prepare --allow-missing: absent cells and K per cell from long responses, wide tables and harness logs;
the companion trials file and its reader (with a hypothesis fuzz)."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_harness_logs import MODELS, _drop_doc, copy_log, edit_samples, lmms

from benchmeasure.base.errors import InputError
from benchmeasure.core.matrix_holes import read_counts_and_trials, trials_path, write_counts_and_trials
from benchmeasure.core.response_counts import count_responses
from benchmeasure.core.responses import _read_arrow
from conftest import assert_rejected, run_script

ROWS = [("a", "q1", "0", "1"), ("a", "q1", "1", "1"), ("a", "q2", "0", "0"), ("a", "q2", "1", "1"),
        ("b", "q1", "0", "0"),                                      # b: q1 with 1 of 2 trials, q2 absent
        ("c", "q1", "0", "1"), ("c", "q1", "1", "0"), ("c", "q2", "0", "1"), ("c", "q2", "1", "1")]


def write(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_refusal_names_the_option_and_allow_missing_writes_both_files(tmp_path):
    src = write(tmp_path / "r.csv", ["model", "item_id", "trial", "correct"], ROWS)
    out = tmp_path / "m.csv"
    assert_rejected(run_script("prepare_response_matrix.py", src, "--n-trials", 2, "--output", out),
                    "has 1 trial", "--allow-missing")
    for python in (sys.executable, "python3"):  # the venv and a bare Python (standard library only)
        result = run_script("prepare_response_matrix.py", src, "--n-trials", 2, "--output", out, "--allow-missing",
                            python=python)
        assert result.returncode == 0, result.stderr
        assert "1 absent cells" in result.stderr
        assert out.read_text() == "model,q1,q2\na,2,1\nb,0,\nc,1,2\n"
        assert (tmp_path / "m.trials.csv").read_text() == "model,q1,q2\na,2,2\nb,1,\nc,2,2\n"
    _, _, counts, trials = read_counts_and_trials(out, 2)
    assert counts == [[2, 1], [0, 0], [1, 2]] and trials == [[2, 2], [1, 0], [2, 2]]
    import json

    record = json.loads((tmp_path / "m.csv.json").read_text())
    assert record["absent_cells"] == {"total": 1, "per_model": {"b": 1}, "per_item": {"q2": 1}}
    # the fast reader agrees with the standard-library one
    fast = _read_arrow(str(src), 2, allow_missing=True)
    table = count_responses(src, 2, allow_missing=True)
    assert fast.counts.tolist() == table.counts and fast.trials.tolist() == table.trials
    # more trials than K stays an error
    write(tmp_path / "r3.csv", ["model", "item_id", "trial", "correct"], [*ROWS, ("b", "q1", "1", "1"),
                                                                          ("b", "q1", "2", "1")])
    assert_rejected(run_script("prepare_response_matrix.py", tmp_path / "r3.csv", "--n-trials", 2, "--output",
                               tmp_path / "x.csv", "--allow-missing"), "has 3 trials")


def test_complete_matrix_is_byte_identical_with_the_option(tmp_path):
    rows = [(m, q, "0", str((i + j) % 2)) for i, m in enumerate("ab") for j, q in enumerate(("q1", "q2"))]
    src = write(tmp_path / "r.csv", ["model", "item_id", "trial", "correct"], rows)
    run_script("prepare_response_matrix.py", src, "--n-trials", 1, "--output", tmp_path / "plain.csv")
    run_script("prepare_response_matrix.py", src, "--n-trials", 1, "--output", tmp_path / "holes.csv",
               "--allow-missing")
    assert (tmp_path / "plain.csv").read_bytes() == (tmp_path / "holes.csv").read_bytes()
    assert not (tmp_path / "holes.trials.csv").exists()


def test_wide_table_with_empty_cells(tmp_path):
    src = write(tmp_path / "w.csv", ["", "m1", "m2", "m3"], [("q1", "1", "", "0"), ("q2", "0", "1", "1")])
    out = tmp_path / "m.csv"
    assert_rejected(run_script("prepare_response_matrix.py", "--from", "wide", src, "--items-as-rows",
                               "--n-trials", 1, "--output", out), "empty cell")
    result = run_script("prepare_response_matrix.py", "--from", "wide", src, "--items-as-rows", "--n-trials", 1,
                        "--output", out, "--allow-missing")
    assert result.returncode == 0, result.stderr
    assert out.read_text() == "model,q1,q2\nm1,1,0\nm2,,1\nm3,0,1\n"
    silent = write(tmp_path / "s.csv", ["", "m1", "m2"], [("q1", "1", ""), ("q2", "0", "")])
    assert_rejected(run_script("prepare_response_matrix.py", "--from", "wide", silent, "--items-as-rows",
                               "--n-trials", 1, "--output", tmp_path / "s_out.csv", "--allow-missing"),
                    "model 'm2' has no answers at all")


def test_harness_log_with_a_missing_document(tmp_path):
    edited = copy_log(tmp_path, lmms(MODELS[1]))
    edit_samples(edited, _drop_doc)
    out = tmp_path / "m.csv"
    result = run_script("prepare_response_matrix.py", "--from", "lmms-eval", lmms(MODELS[0]), edited, "--grade",
                        "math", "--n-trials", 3, "--output", out, "--allow-missing")
    assert result.returncode == 0, result.stderr
    _, items, _, trials = read_counts_and_trials(out, 3)
    assert sum(t == 0 for row in trials for t in row) == 1 and trials[1][items.index("3")] == 0


def test_reader_rejects_inconsistent_companions(tmp_path):
    path = tmp_path / "m.csv"
    write_counts_and_trials(["a", "b"], ["q1", "q2"], [[2, 0], [1, 1]], [[2, 0], [1, 3]], path)
    assert path.read_text() == "model,q1,q2\na,2,\nb,1,1\n"
    write(trials_path(path), ["model", "q1", "q2"], [("a", "1", ""), ("b", "1", "3")])
    try:
        read_counts_and_trials(path, 3)
    except InputError as exc:
        assert "count 2 is above the cell's 1 trial" in str(exc)
    else:
        raise AssertionError("a count above its trials was accepted")
    assert_rejected(run_script("check_response_matrix.py", path, "--n-trials", 3, "--allow-missing"),
                    "count 2 is above the cell's 1 trial")
    result = subprocess.run([sys.executable, "-c", "from benchmeasure.core.matrix import read_matrix; "
                             f"read_matrix({str(path)!r}, 3)"], capture_output=True, text=True)
    assert "empty cell" in result.stderr and "--allow-missing" in result.stderr


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 4), st.lists(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=3,
                                            max_size=3), min_size=1, max_size=4),
       st.lists(st.sampled_from(["", " ", "x", "-1", "1.5", "٣", "9"]), max_size=3))
def test_round_trip_and_garbage_fuzz(tmp_path, k, cells, garbage):
    """Written tables read back the same; any edited cell is read or refused with an InputError."""
    trials = [[min(t, k) for c, t in row] for row in cells]
    counts = [[min(c, t) for (c, _), t in zip(row, t_row)] for row, t_row in zip(cells, trials)]
    models = [f"m{j}" for j in range(len(cells))]
    path = tmp_path / "f.csv"
    write_counts_and_trials(models, ["a", "b", "c"], counts, trials, path)
    try:
        got = read_counts_and_trials(path, k)
    except InputError as exc:
        assert "no answers at all" in str(exc) and any(all(t == 0 for t in row) for row in trials)
    else:
        assert got == (models, ["a", "b", "c"], counts, trials)
    lines = path.read_text().splitlines()
    for n, text in enumerate(garbage):
        row = lines[1 + n % (len(lines) - 1)].split(",")
        row[1 + n % 3] = text
        lines[1 + n % (len(lines) - 1)] = ",".join(row)
    path.write_text("\n".join(lines) + "\n")
    try:
        _, _, c2, t2 = read_counts_and_trials(path, k)
    except InputError:
        return
    assert all(c <= t for cr, tr in zip(c2, t2) for c, t in zip(cr, tr))
    assert np.all(np.asarray(t2) <= k)


def test_checks_with_holes_reduce_to_table5_and_run_through_check(tmp_path):
    from benchmeasure.analyses.checks import check_matrix
    from benchmeasure.analyses.checks_holes import check_matrix_with_holes
    from benchmeasure.core.matrix import ResponseMatrix

    counts = np.array([[2, 2, 1, 0], [2, 1, 0, 1], [1, 0, 1, 0]])   # the worked example of benchmeasure.analyses.checks
    full = check_matrix(ResponseMatrix(["m0", "m1", "m2"], list("abcd"), counts, 2))
    holes = check_matrix_with_holes(counts, np.full(counts.shape, 2))
    assert holes.as_dict() == pytest.approx(full.as_dict(), abs=1e-12)
    assert round(full.model_inversion_rate, 6) == 0.285714
    rng = np.random.default_rng(0)
    big = rng.binomial(3, 0.5, (5, 300))
    assert check_matrix_with_holes(big, np.full(big.shape, 3)).as_dict() == pytest.approx(
        check_matrix(ResponseMatrix(list("abcde"), [str(i) for i in range(300)], big, 3)).as_dict(), abs=1e-12)
    src = write(tmp_path / "r.csv", ["model", "item_id", "trial", "correct"], ROWS)
    out = tmp_path / "m.csv"
    run_script("prepare_response_matrix.py", src, "--n-trials", 2, "--output", out, "--allow-missing")
    assert_rejected(run_script("check_response_matrix.py", out, "--n-trials", 2), "empty cell", "--allow-missing")
    result = run_script("check_response_matrix.py", out, "--n-trials", 2, "--allow-missing")
    assert result.returncode == 0, result.stderr
    assert "Absent cells: 1 of 6" in result.stdout


@pytest.mark.parametrize("flags, fragment", [
    (("--observation", "beta-binomial"), "binomial --observation model only"),
])
def test_fit_refuses_what_it_cannot_do_with_holes_before_any_output(tmp_path, flags, fragment):
    """Holes need the binomial, fitted by NUTS with nutpie or pymc or by the marginal mode: one error line,
    nothing printed or written first."""
    matrix = tmp_path / "m.csv"
    matrix.write_text("model,q0,q1,q2\na,1,,0\nb,0,1,1\nc,1,1,\n", encoding="utf-8")
    out = tmp_path / "fit"
    assert_rejected(run_script("fit_irt.py", matrix, "--n-trials", "1", "--allow-missing", "--output-dir", out,
                               *flags), "absent cells", fragment)
    assert not out.exists()


def _masked_marginal_log_posterior(b, counts, trials):
    """log p(b | Y) + const computed independently: one scipy ``quad`` per model over θ, absent cells left out."""
    from scipy import integrate, stats

    total = stats.norm.logpdf(b).sum()
    for y, t in zip(counts, trials):
        present = t > 0

        def integrand(theta, y=y[present], t=t[present], b=b[present]):
            p = 1.0 / (1.0 + np.exp(-(theta - b)))
            return stats.norm.pdf(theta) * np.prod(stats.binom.pmf(y, t, p))

        total += np.log(integrate.quad(integrand, -12, 12, epsabs=0, epsrel=1e-12, limit=200)[0])
    return total


def test_map_with_holes_is_the_mode_of_the_masked_marginal_posterior(tmp_path):
    """``fit --method map --allow-missing``: its b is the mode of p(b | Y) with θ integrated out and absent cells
    left out, checked against an independent quadrature (gradient zero, every nearby b lower); with no holes the
    trials matrix gives the plain marginal mode exactly."""
    from benchmeasure.irt.routes.map.mode import marginal_mode

    rng = np.random.default_rng(3)
    trials = rng.integers(0, 4, (6, 5))
    trials[:, 0] = 3                                     # every model answers something
    counts = rng.binomial(trials, 0.55)
    _, b, info = marginal_mode(counts, 3, trials=trials)
    assert info["success"]
    f0 = _masked_marginal_log_posterior(b, counts, trials)
    h = 1e-4
    grad = [(_masked_marginal_log_posterior(b + h * e, counts, trials)
             - _masked_marginal_log_posterior(b - h * e, counts, trials)) / (2 * h) for e in np.eye(b.size)]
    assert np.max(np.abs(grad)) < 1e-4
    for step in rng.normal(0, 0.05, (5, b.size)):
        assert _masked_marginal_log_posterior(b + step, counts, trials) < f0
    full = rng.binomial(3, 0.5, (6, 5))
    assert marginal_mode(full, 3, trials=np.full(full.shape, 3))[1] == pytest.approx(marginal_mode(full, 3)[1],
                                                                                     abs=1e-10)
    src = write(tmp_path / "r.csv", ["model", "item_id", "trial", "correct"], ROWS)
    matrix = tmp_path / "m.csv"
    run_script("prepare_response_matrix.py", src, "--n-trials", 2, "--output", matrix, "--allow-missing")
    result = run_script("fit_irt.py", matrix, "--n-trials", 2, "--allow-missing", "--method", "map",
                        "--output-dir", tmp_path / "fit")
    assert result.returncode == 0, result.stderr
    assert "masked likelihood (marginal mode)" in result.stderr + result.stdout
    _, items, y, t = read_counts_and_trials(matrix, 2)
    with open(tmp_path / "fit" / "difficulty.csv", encoding="utf-8") as handle:
        written = {row["item"]: float(row["b_mean"]) for row in csv.DictReader(handle)}
    expected = marginal_mode(np.array(y), 2, trials=np.array(t))[1]
    assert [written[i] for i in items] == pytest.approx(list(expected), abs=1e-6)
