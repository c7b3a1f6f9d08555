"""``benchmeasure drift`` through the command line, and the item/model metadata readers (hypothesis fuzz)."""

from __future__ import annotations

import csv

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.core.item_meta import covariate, read_item_meta, read_model_meta
from conftest import DRIFT_BAD as BAD
from conftest import DRIFT_ITEMS as ITEMS
from conftest import DRIFT_K as K
from conftest import DRIFT_MODELS as MODELS
from conftest import DRIFT_MONTHS as MONTHS
from conftest import assert_rejected, run_script
from conftest import write_rows as _write


@pytest.fixture(scope="module")
def world(drift_world):
    """The shared drift world and its drift output (conftest.drift_world)."""
    return drift_world


def _rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_contaminated_model_is_flagged_with_its_step(world):
    rows = {r["model"]: r for r in _rows(world["out"] / "models.csv")}
    bad = rows[f"m{BAD:02d}"]
    assert bad["flagged"] == "true"
    assert float(bad["delta"]) > 0 and float(bad["delta_lo"]) > 0
    month = int(bad["tau"][5:7]) - 1                 # first month after the step
    assert abs(month - 7) <= 1, bad["tau"]
    assert bad["near_release"] == "true"
    for name, row in rows.items():
        if name != f"m{BAD:02d}":
            assert row["flagged"] == "false", row
    assert (world["out"] / "figures" / f"m{BAD:02d}.png").is_file()
    assert world["json"]["flagged"] == [f"m{BAD:02d}"]
    error = world["json"]["leave_out_error"]["models"]
    assert error and all(e["max_abs_b_error"] < 0.5 for e in error)
    assert _rows(world["out"] / "bins.csv")
    assert world["json"]["items_tested"] >= 0


def test_categorical_covariate_differs_by(world, tmp_path):
    done = run_script("drift.py", world["matrix"], "--n-trials", K, "--item-meta", world["meta"], "--by", "source",
                      "--output-dir", tmp_path / "cat", "--slopes-by", "none")
    assert done.returncode == 0, done.stderr
    assert "differs by source" in done.stdout or "differ by source" in done.stdout
    assert "is not contamination" in done.stdout and "flagged" not in done.stdout
    rows = _rows(tmp_path / "cat" / "models.csv")
    assert len(rows) == MODELS and {"shift", "shift_lo", "shift_hi", "differs"} <= set(rows[0])


def test_predict_after_drops_a_flagged_models_items_before_its_step(world):
    rows = {r["model"]: r for r in _rows(world["out"] / "predict.csv")}
    assert set(rows) == set(world["models"])
    bad = rows[f"m{BAD:02d}"]
    tau_month = int(_rows(world["out"] / "models.csv")[BAD]["tau"][5:7]) - 1
    assert bad["flagged"] == "true" and int(bad["items_used"]) == (ITEMS // MONTHS) * (MONTHS - tau_month)
    # the boost before τ inflated the all-items ability; the after-τ one predicts less on the newest items
    assert float(bad["theta"]) < float(bad["theta_all"]) - 0.5
    low, mid, high = (float(bad[k]) for k in ("accuracy_predicted_lo", "accuracy_predicted", "accuracy_predicted_hi"))
    assert low < mid < high < float(bad["accuracy_predicted_all"])
    assert int(bad["target_items"]) == ITEMS // 2 == int(bad["target_answered"])     # the newest release, 'r2'
    for name, row in rows.items():
        if name != f"m{BAD:02d}":
            assert row["items_used"] == row["items_all"] and row["theta"] == row["theta_all"]
            assert row["accuracy_predicted"] == row["accuracy_predicted_all"]
            assert abs(float(row["accuracy_predicted"]) - float(row["accuracy_observed"])) < 0.1
    record = world["json"]["predict"]
    assert "newest release, 'r2'" in record["target"] and len(record["models"]) == MODELS


def test_tau_near_cutoff_searches_only_near_each_models_date(world, tmp_path):
    # m{BAD}'s cut-off is 2024-06-20: τ in June–August 2024 (its step is at August); the others have only a
    # release date, 2024-09-01: τ in September–November
    done = run_script("drift.py", world["matrix"], "--n-trials", K, "--item-meta", world["meta"], "--by", "date",
                      "--model-meta", world["folder"] / "models.csv", "--tau-near-cutoff", "--output-dir",
                      tmp_path / "near", "--max-replicates", 500, "--check-leave-out", 0, "--quiet")
    assert done.returncode == 0, done.stderr
    rows = {r["model"]: r for r in _rows(tmp_path / "near" / "models.csv")}
    bad = rows.pop(f"m{BAD:02d}")
    assert bad["flagged"] == "true" and bad["tau"] == "2024-08-01" and bad["tau_search"] == "cut-off ± 1 month"
    for row in rows.values():
        assert row["tau"] in {"2024-09-01", "2024-10-01", "2024-11-01"} and row["tau_search"] == "release ± 1 month"
        assert row["flagged"] == "false" and 0 < float(row["p_value"]) <= 1


@pytest.mark.parametrize("case", ["unknown_item", "not_a_date", "output_is_input", "unknown_column",
                                  "predict_category", "predict_not_a_date", "predict_after_newest",
                                  "near_without_dates", "near_category"])
def test_bad_input_is_one_line_and_writes_nothing(world, tmp_path, case):
    meta, out = world["meta"], tmp_path / "out"
    fragment, extra = "", []
    if case == "unknown_item":
        rows = [*_rows(world["meta"]), {"item": "zz-extra", "date": "2024-01-02", "source": "old", "release": "r1"}]
        meta = _write(tmp_path / "m.csv", ["item", "date", "source", "release"], [list(r.values()) for r in rows])
        fragment = "zz-extra"
    elif case == "not_a_date":
        rows = _rows(world["meta"])
        rows[5]["date"] = "June 2024"
        meta = _write(tmp_path / "m.csv", ["item", "date", "source", "release"], [list(r.values()) for r in rows])
        fragment = "not a date"
    elif case == "output_is_input":
        out = world["matrix"]
    elif case == "predict_category":
        extra, fragment = ["--predict-after"], "needs an ordered --by column"
    elif case == "predict_not_a_date":
        extra, fragment = ["--predict-after", "2024/06/01"], "not a date"
    elif case == "predict_after_newest":
        extra, fragment = ["--predict-after", "2025-01-01"], "no item of the matrix has date at or after it"
    elif case == "near_without_dates":
        extra, fragment = ["--tau-near-cutoff"], "--tau-near-cutoff needs --model-meta"
    elif case == "near_category":
        extra = ["--tau-near-cutoff", "--model-meta", world["folder"] / "models.csv"]
        fragment = "--tau-near-cutoff needs a date --by column; 'source' is a category column"
    else:
        fragment = "no column 'nope'"
    by = {"unknown_column": "nope", "predict_category": "source", "near_category": "source"}.get(case, "date")
    done = run_script("drift.py", world["matrix"], "--n-trials", K, "--item-meta", meta, "--by", by,
                      "--output-dir", out, *extra)
    assert_rejected(done, fragment)
    if case != "output_is_input":
        assert not out.exists()


# --- the readers, fuzzed -------------------------------------------------------------------------------------

cells = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(cells, min_size=0, max_size=4), max_size=6), header=st.lists(cells, max_size=4),
       by=cells)
def test_item_meta_reader_fails_only_with_input_error(tmp_path, rows, header, by):
    path = tmp_path / "items.csv"
    _write(path, header, rows)
    try:
        meta = read_item_meta(str(path), ["a", "b"])
        cov = covariate(str(path), meta, by)
    except InputError:
        return
    assert len(cov.values) == 2
    assert cov.kind in ("date", "number", "category")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(["x", "y", "z", ""]), cells, cells), max_size=5))
def test_model_meta_reader_fails_only_with_input_error(tmp_path, rows):
    path = tmp_path / "models.csv"
    _write(path, ["model", "release", "cutoff"], rows)
    try:
        dates = read_model_meta(str(path), ["x", "y"])
    except InputError:
        return
    assert set(dates) == {"release", "cutoff"} and all(len(v) == 2 for v in dates.values())


def test_ctrl_c_exits_130_at_once_and_writes_nothing(world, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "drift.py"), str(world["matrix"]), "--n-trials",
                             str(K), "--item-meta", str(world["meta"]), "--by", "date", "--output-dir", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in proc.stderr:
        if "fitting the 1PL" in line:
            break
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert proc.returncode == 130, proc.stderr.read()
    assert time.monotonic() - sent < 5
    assert not out.exists()
