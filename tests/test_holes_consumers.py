"""Every consumer of a matrix or fit with holes, through the command line: score and calibrate (masked likelihood,
K per cell; checked against brute-force grids), irt-robustness, diagnose, posterior-metrics and the explorer (absent
cells reported), each refusing holes without --allow-missing; and a fuzz test of the readers that keep holes."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.core.matrix_holes import write_counts_and_trials
from conftest import assert_rejected, run_script

K = 2
MODELS = [f"m{j}" for j in range(6)]
ITEMS = [f"q{i}" for i in range(10)]


def _holes():
    rng = np.random.default_rng(3)
    trials = np.full((6, 10), K)
    trials[0, :4] = 0           # m0 did not answer q0–q3
    trials[1, 5] = 1            # one cell with fewer trials
    trials[2, 7] = 0
    counts = rng.binomial(trials, np.linspace(0.2, 0.8, 6)[:, None])
    return counts, trials


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """One small fit with holes (collapsed route, posterior saved) that every consumer reads."""
    folder = tmp_path_factory.mktemp("holes")
    counts, trials = _holes()
    matrix = folder / "m.csv"
    write_counts_and_trials(MODELS, ITEMS, counts, trials, matrix)
    out = folder / "fit"
    result = run_script("fit_irt.py", matrix, "--n-trials", K, "--allow-missing", "--chains", 2, "--tune", 300,
                        "--draws", 500, "--seed", 1, "--save-posterior", "--quiet", "--output-dir", out)
    assert result.returncode == 0, result.stderr
    return folder, matrix, out, counts, trials


def _grid_mean(y, t, fixed, side):
    """Posterior mean of one θ (side 'model') or b (side 'item') on a fine grid, cell by cell with its trials."""
    x = np.linspace(-8, 8, 16_001)
    eta = x[:, None] - fixed[None, :] if side == "model" else fixed[None, :] - x[:, None]
    log = -0.5 * x**2 + (y * eta - t * np.logaddexp(0, eta)).sum(axis=1)
    w = np.exp(log - log.max())
    return float((w * x).sum() / w.sum())


def _rows(path):
    with open(path, encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_score_and_calibrate_with_holes_match_brute_force(fitted):
    folder, matrix, out, counts, trials = fitted
    b = np.array([float(r["b_mean"]) for r in _rows(out / "difficulty.csv")])
    theta = np.array([float(r["theta_mean"]) for r in _rows(out / "ability.csv")])
    assert_rejected(run_script("score_models.py", matrix, "--difficulty", out / "difficulty.csv", "--n-trials", K,
                               "--output", folder / "no.csv"), "empty cell", "--allow-missing")
    scores = folder / "scores.csv"
    result = run_script("score_models.py", matrix, "--difficulty", out / "difficulty.csv", "--n-trials", K,
                        "--output", scores, "--allow-missing", "--quiet")
    assert result.returncode == 0, result.stderr
    rows = _rows(scores)
    for j, row in enumerate(rows):
        present = trials[j] > 0
        assert int(row["n_items_answered"]) == present.sum()
        expected = _grid_mean(counts[j, present], trials[j, present], b[present], "model")
        assert float(row["theta_mean"]) == pytest.approx(expected, abs=2e-3)
        assert float(row["accuracy_observed"]) == pytest.approx(counts[j].sum() / trials[j].sum(), abs=1e-5)
    record = json.loads((folder / "scores.csv.json").read_text())
    assert record["absent_cells_per_model"] == {"m0": 4, "m2": 1}

    calibrated = folder / "new_difficulty.csv"
    result = run_script("calibrate_items.py", matrix, "--abilities", out / "ability.csv", "--n-trials", K,
                        "--output", calibrated, "--allow-missing", "--quiet")
    assert result.returncode == 0, result.stderr
    for i, row in enumerate(_rows(calibrated)):
        present = trials[:, i] > 0
        expected = _grid_mean(counts[present, i], trials[present, i], theta[present], "item")
        assert float(row["b_mean"]) == pytest.approx(expected, abs=2e-3)
    assert json.loads((folder / "new_difficulty.csv.json").read_text())["absent_cells"]["per_item"]["q0"] == 1
    assert_rejected(run_script("calibrate_items.py", matrix, "--abilities", out / "ability.csv", "--n-trials", K,
                               "--output", folder / "no2.csv"), "empty cell", "--allow-missing")
    unanswered = folder / "unanswered.csv"
    unanswered.write_text("model,new0,new1\nm0,1,\nm1,2,\n", encoding="utf-8")
    assert_rejected(run_script("calibrate_items.py", unanswered, "--abilities", out / "ability.csv", "--n-trials", K,
                               "--output", folder / "no3.csv", "--allow-missing"), "item 'new1' has no answers")
    assert not (folder / "no3.csv").exists()


def test_diagnose_posterior_metrics_explorer_and_robustness_report_absent_cells(fitted):
    folder, matrix, out, _, _ = fitted
    result = run_script("diagnose_benchmark.py", out / "difficulty.csv")
    assert result.returncode == 0, result.stderr
    assert "Absent cells: 5 in the fit" in result.stdout and "5 items and 2 models" in result.stdout
    result = run_script("posterior_metrics.py", out / "posterior.zarr", "--replicates", 10)
    assert result.returncode == 0, result.stderr
    assert "absent cells: 5 in the fit" in result.stdout
    page = folder / "explorer.html"
    result = run_script("explore_benchmarks.py", out / "difficulty.csv", "--output", page)
    assert result.returncode == 0, result.stderr
    text = page.read_text(encoding="utf-8")
    assert '"absent":{"total":5,"models":2,"items":5,"per_item":[1,1,1,1,0,0,0,1,0,0]}' in text.replace(" ", "")
    assert_rejected(run_script("irt_robustness.py", matrix, "--n-trials", K, "--output-dir", folder / "r0",
                               "--fit-dir", out), "empty cell", "--allow-missing")
    result = run_script("irt_robustness.py", matrix, "--n-trials", K, "--output-dir", folder / "r",
                        "--fit-dir", out, "--allow-missing")
    assert result.returncode == 0, result.stderr
    assert "Absent cells: 5 of 60, in 2 model(s) and 5 item(s)" in result.stdout
    assert json.loads((folder / "r" / "robustness.json").read_text())["absent_cells"]["per_model"] == {"m0": 4,
                                                                                                       "m2": 1}


def test_robustness_likelihoods_and_refits_keep_the_holes():
    """LOO refits keep the trials; the BIC's likelihood is the masked one over present cells only."""
    from benchmeasure.analyses.robustness import bic_comparison, max_draw_log_likelihood

    counts, trials = _holes()
    matrix = ResponseMatrix(MODELS, ITEMS, counts, K, trials)
    reduced = matrix.drop_model(1)
    assert reduced.trials is not None and np.array_equal(reduced.trials, np.delete(trials, 1, axis=0))
    assert matrix.drop_model(0).drop_model(0).drop_model(0).trials is None   # m0, m1, m2 gone: complete again
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=(3, 6)), rng.normal(size=(3, 10))
    masked = max_draw_log_likelihood(counts, matrix.cell_trials(), theta, b)
    from scipy.stats import binom

    p = 1 / (1 + np.exp(b[:, None, :] - theta[:, :, None]))
    present = trials > 0
    direct = max(float(binom.logpmf(counts[present], trials[present], p[s][present]).sum()) for s in range(3))
    assert masked == pytest.approx(direct, rel=1e-12)
    assert bic_comparison(-10.0, -9.0, 6, 10, matrix.present_cells)["n"] == 55
    # the 2PL of Tables 8-9 with the trials matrix as the binomial n: the masked likelihood (absent cells add 0)
    from benchmeasure.irt.alternatives import build_2pl

    model = build_2pl(counts, matrix.cell_trials())
    point = {"theta": theta[0], "b": b[0], "log_a": rng.normal(0, 0.3, 10)}
    a = np.exp(point["log_a"])
    p2 = 1 / (1 + np.exp(-a[None, :] * (theta[0][:, None] - b[0][None, :])))
    value = model.compile_logp(vars=[model["y"]], jacobian=False)(point)
    assert float(value) == pytest.approx(float(binom.logpmf(counts[present], trials[present], p2[present]).sum()),
                                         rel=1e-10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(1, 3), cells=st.lists(st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=2,
                                                        max_size=4), min_size=1, max_size=4),
       garbage=st.sampled_from(["", "x", "-1", " 1", "1.0", "٣"]))
def test_read_counts_with_holes_fuzz(tmp_path, k, cells, garbage):
    """read_counts(..., allow_missing=True): a matrix with blanks (and some garbage) is read or refused with an
    InputError; what is read has counts within each cell's trials and trials 0 exactly where the file is blank."""
    from benchmeasure.core.fixed_scale_inputs import absent_counts, cells_of, read_counts

    width = max(len(r) for r in cells)
    rows = [r + [None] * (width - len(r)) for r in cells]
    lines = ["model," + ",".join(f"q{i}" for i in range(width))]
    for j, row in enumerate(rows):
        text = ["" if v is None else str(v) for v in row]
        if j == 0 and garbage:
            text[0] = garbage
        lines.append(f"m{j}," + ",".join(text))
    path = tmp_path / "m.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        matrix = read_counts(str(path), k, allow_missing=True)
    except InputError:
        return
    trials = matrix.trials if matrix.trials is not None else np.full(matrix.counts.shape, k)
    assert np.all(matrix.counts <= trials) and np.all(trials <= k)
    assert absent_counts(matrix)["total"] == int((trials == 0).sum())
    for j in range(len(matrix.models)):
        present, counts, _ = cells_of(matrix, j)
        assert present.size > 0 and np.array_equal(counts, matrix.counts[j, present])


def test_absent_cells_are_found_beside_a_fit_and_a_suite_benchmark(tmp_path):
    """A fit folder's diagnostics.json, else fit-suite's DIR/suite.json for DIR/<benchmark>/difficulty.csv; the
    explorer counts only the benchmark's own items."""
    from benchmeasure.core.matrix_holes import absent_cells_beside
    from benchmeasure.explorer.collect import absent_view

    record = {"absent_cells": {"total": 3, "per_model": {"a": 3}, "per_item": {"x1": 2, "y0": 1}}}
    (tmp_path / "suite.json").write_text(json.dumps(record), encoding="utf-8")
    for name, items in (("x", ["x0", "x1"]), ("y", ["y0"]), ("z", ["z0"])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "difficulty.csv").write_text("item,b_mean\n" + "".join(f"{i},0\n" for i in items))
    assert absent_cells_beside(tmp_path / "x" / "difficulty.csv")["total"] == 3
    assert absent_view(tmp_path / "x" / "difficulty.csv", ["x0", "x1"]) == {"total": 2, "models": 1, "items": 1,
                                                                           "per_item": [0, 2]}
    assert absent_view(tmp_path / "z" / "difficulty.csv", ["z0"]) is None
    (tmp_path / "x" / "diagnostics.json").write_text(json.dumps({"absent_cells": {"total": 0}}), encoding="utf-8")
    assert absent_cells_beside(tmp_path / "x" / "difficulty.csv")["total"] == 3   # no holes in the fit: the suite's
    assert absent_cells_beside(tmp_path / "nowhere.csv") is None


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 5) | st.floats(allow_nan=False) | st.text(max_size=3),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                 max_size=3), max_leaves=8)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(absent=st.one_of(_JSON, st.fixed_dictionaries({"total": _JSON, "per_model": _JSON, "per_item": _JSON})),
       raw=st.sampled_from(["", "{", "[]", "null"]))
def test_absent_cells_reader_fuzz(tmp_path, absent, raw):
    """Whatever diagnostics.json holds, absent_cells_beside returns None or a well-formed record, never raises;
    the explorer's view of it is then well-formed too."""
    from benchmeasure.core.matrix_holes import absent_cells_beside
    from benchmeasure.explorer.collect import absent_view

    text = raw or json.dumps({"absent_cells": absent})
    (tmp_path / "diagnostics.json").write_text(text, encoding="utf-8")
    found = absent_cells_beside(tmp_path / "difficulty.csv")
    if found is not None:
        assert isinstance(found["total"], int) and found["total"] >= 1
        assert all(isinstance(v, int) and v >= 0 for v in (*found["per_model"].values(), *found["per_item"].values()))
        view = absent_view(tmp_path / "difficulty.csv", list(found["per_item"]))
        assert view is None or view["total"] == sum(view["per_item"])


def test_fit_ability_refuses_holes_without_the_option_and_keys_the_cache_on_the_trials(tmp_path):
    import subprocess
    import sys

    from benchmeasure.benchfill.abilities import cache_key

    counts, trials = _holes()
    matrix = tmp_path / "m.csv"
    write_counts_and_trials(MODELS, ITEMS, counts, trials, matrix)
    result = subprocess.run([sys.executable, "-m", "benchmeasure", "fit-ability", str(matrix), "--n-trials", str(K),
                             "--cache", str(tmp_path / "cache")], capture_output=True, text=True)
    assert_rejected(result, "empty cell", "--allow-missing")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    key = cache_key(matrix, K, 0.0, allow_missing=True)
    trials[1, 5] = 2
    counts[1, 5] = min(counts[1, 5], 2)
    write_counts_and_trials(MODELS, ITEMS, counts, trials, matrix)  # same counts file, other trials file
    assert cache_key(matrix, K, 0.0, allow_missing=True) != key
