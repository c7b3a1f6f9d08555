"""benchmeasure check-fit through its command line, on one small fit of a simulated matrix with planted defects
(inverted items, a shuffled model, holes), plus the error contract and a fuzz test of the parameter-table reader."""

from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.analyses.fit_inputs import read_parameter_table
from benchmeasure.analyses.item_fit import benjamini_hochberg
from benchmeasure.base.errors import InputError
from conftest import MISFIT_INVERTED as INVERTED
from conftest import MISFIT_ITEMS as ITEMS
from conftest import MISFIT_SHUFFLED as SHUFFLED
from conftest import ROOT, assert_rejected, run_script


@pytest.fixture(scope="module")
def fit(misfit_fit):
    """The shared small NUTS fit with planted defects (conftest.misfit_fit)."""
    return misfit_fit


@pytest.fixture(scope="module")
def checked(fit):
    out = fit / "check"
    done = run_script("check_fit.py", fit / "fit", "--output-dir", out, "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    return out, json.loads(done.stdout)


def _rows(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_planted_defects_are_flagged(checked):
    out, record = checked
    items = {row["item"]: row for row in _rows(out / "items.csv")}
    assert len(items) == ITEMS
    assert {"item", "p_value", "q_value", "flagged", "reason", "infit", "outfit", "point_biserial"} <= set(
        next(iter(items.values())))
    flagged = {item for item, row in items.items() if row["flagged"] == "true"}
    assert len(flagged & set(INVERTED)) >= 3, flagged
    assert len(flagged - set(INVERTED)) <= 3, flagged
    assert all(items[i]["against_ability"] == "true" for i in flagged & set(INVERTED))
    assert "ability falls" in items[sorted(flagged & set(INVERTED))[0]]["reason"]
    models = {row["model"]: row for row in _rows(out / "models.csv")}
    assert models[SHUFFLED]["flagged"] == "true"
    assert sum(row["flagged"] == "true" for row in models.values()) <= 2
    assert (out / "item_fit.png").stat().st_size > 1000
    # the JSON (stdout and check_fit.json) holds everything, the summary line too
    saved = json.loads((out / "check_fit.json").read_text(encoding="utf-8"))
    assert saved["summary"] == record["summary"] and "items flagged" in record["summary"]
    assert record["input"]["absent_cells"] > 0 and record["settings"]["posterior_used"] is True
    assert 0 <= record["whole_fit"]["score_distribution"]["p_value"] <= 1
    assert len(record["whole_fit"]["accuracy_by_ability"]["observed"]) == record["settings"]["groups"]
    assert record["command"] and record["package_versions"]


def _without_posterior(fit, tmp_path):
    """A copy of the fit folder as benchmeasure fit leaves it without --save-posterior."""
    folder = tmp_path / "fit"
    shutil.copytree(fit / "fit", folder)
    shutil.rmtree(folder / "posterior.zarr")
    diagnostics = json.loads((folder / "diagnostics.json").read_text(encoding="utf-8"))
    diagnostics["outputs"] = [name for name in diagnostics["outputs"] if name != "posterior.zarr"]
    (folder / "diagnostics.json").write_text(json.dumps(diagnostics), encoding="utf-8")
    return folder


def test_without_posterior_uses_the_normal_approximation(fit, tmp_path):
    folder = _without_posterior(fit, tmp_path)
    done = run_script("check_fit.py", folder, "--output-dir", tmp_path / "out", "--draws", 100, "--fdr", 0.1)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("model fit: ") and "normal approximation" in done.stderr
    record = json.loads((tmp_path / "out" / "check_fit.json").read_text(encoding="utf-8"))
    assert "normal approximation" in record["settings"]["draws_source"]
    assert SHUFFLED in record["flagged_models"]


def test_bad_input_is_one_line_and_writes_nothing(fit, tmp_path):
    out = tmp_path / "out"
    assert_rejected(run_script("check_fit.py", tmp_path / "nothing", "--output-dir", out), "no such folder")
    other = tmp_path / "other.csv"
    shutil.copy(fit / "matrix.csv", other)
    assert_rejected(run_script("check_fit.py", other, "--output-dir", out), "is a file, not a fit folder")
    with open(other, "a", encoding="utf-8") as handle:
        handle.write("\n")
    assert_rejected(run_script("check_fit.py", fit / "fit", "--matrix", other, "--output-dir", out), "SHA-256")
    assert_rejected(run_script("check_fit.py", fit / "fit", "--output-dir", fit / "fit"), "fit folder")
    assert_rejected(run_script("check_fit.py", fit / "fit", "--output-dir", out, "--n-trials", 5), "--n-trials")
    assert_rejected(run_script("check_fit.py", fit / "fit", "--output-dir", out, "--fdr", 1.5))
    assert not out.exists()
    assert sorted(p.name for p in (fit / "fit").iterdir()) == ["ability.csv", "check_fit", "diagnostics.json",
                                                               "difficulty.csv", "posterior.zarr"]


def test_ctrl_c_exits_130_and_writes_nothing(fit, tmp_path):
    from test_interrupt_commands import assert_interrupted, interrupt

    folder, out = _without_posterior(fit, tmp_path), tmp_path / "out"
    result = interrupt([ROOT / "scripts" / "check_fit.py", folder, "--output-dir", out, "--draws", 100_000],
                       r"^check-fit: posterior draws")
    assert_interrupted(result, out / "items.csv", out / "check_fit.json")
    assert not out.exists()


def test_benjamini_hochberg_matches_the_definition():
    p = np.array([0.01, 0.04, 0.03, 0.5, 0.002])
    q = benjamini_hochberg(p)
    order = np.argsort(p)
    expected = np.minimum.accumulate((p[order] * 5 / np.arange(1, 6))[::-1])[::-1]
    assert np.allclose(q[order], expected) and (q >= p).all()


def test_saddlepoint_tail_matches_exact_enumeration():
    """The slope score's lower tail against the exact law of a weighted Bernoulli sum (10 models: 1,024 outcomes)."""
    import itertools

    from benchmeasure.analyses.item_fit import saddlepoint_lower

    rng = np.random.default_rng(1)
    theta = np.sort(rng.normal(0.0, 1.5, 10))
    w = theta - theta.mean()
    outcomes = np.array(list(itertools.product([0, 1], repeat=10)))
    for b in (-3.0, -2.0, 0.0, 1.5, 3.0):
        p = 1.0 / (1.0 + np.exp(-(theta - b)))
        prob = np.prod(np.where(outcomes == 1, p, 1 - p), axis=1)
        sums = outcomes @ w
        for level in (0.001, 0.01):
            at = np.argsort(sums)[np.searchsorted(np.cumsum(prob[np.argsort(sums)]), level)]
            s = sums[at]
            exact = prob[sums <= s + 1e-12].sum()
            tail = saddlepoint_lower(np.array([[s]]), w[None, :, None], p[None, :, None], np.ones((10, 1)),
                                     y=outcomes[at][:, None].astype(float))[0, 0]
            assert exact / 3 < tail < exact * 3, (b, level, exact, tail)


CELL = st.text(alphabet=st.sampled_from(list("0123456789.-e+ xnaNIf,\"")), max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.text(alphabet="abq01 ", max_size=4), CELL, CELL), max_size=5),
       header=st.sampled_from(["item,b_mean,b_sd", "item,b_mean", "model,b_mean,b_sd", "item,b_sd"]))
def test_parameter_table_reader_fuzz(tmp_path, rows, header):
    """Any text: a table or one InputError, never another exception; what it returns is finite."""
    path = tmp_path / "difficulty.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header.split(","))
        for row in rows:
            writer.writerow(row[: len(header.split(","))])
    try:
        table = read_parameter_table(path, "item", "b_mean", "b_sd")
    except InputError:
        return
    assert len(table.names) == len(set(table.names)) == len(table.mean) == len(table.sd) > 0
    assert np.isfinite(table.mean).all() and (table.sd >= 0).all()


def test_benchfills_fixed_ability_entry_point_is_check_fits_item_test(checked_fit):
    # BenchFill tests a child with the panel's abilities held fixed (analyses.item_fit.fixed_ability_fit); on a MAP
    # fit check-fit conditions on the one fitted point, so the two must give every item the same p-values
    from benchmeasure.analyses.fit_inputs import read_parameter_table
    from benchmeasure.analyses.item_fit import fixed_ability_fit
    from benchmeasure.core.matrix import read_matrix

    matrix = read_matrix(str(checked_fit["matrix"]), 3)
    theta = read_parameter_table(checked_fit["fit"] / "ability.csv", "model", "theta_mean", "theta_sd")
    b = read_parameter_table(checked_fit["fit"] / "difficulty.csv", "item", "b_mean", "b_sd")
    assert theta.names == list(matrix.models) and b.names == list(matrix.items)
    y = matrix.counts.astype(float)
    fit = fixed_ability_fit(y, np.full(y.shape, 3.0), theta.mean, b.mean[None, :])
    rows = _rows(checked_fit["check"] / "items.csv")
    for name in ("p_value", "p_curve", "p_slope", "z_slope", "point_biserial"):
        assert fit[name] == pytest.approx([float(r[name]) for r in rows], rel=1e-5, abs=1e-12), name
