"""bench/bench_regression.py's masking and diff logic on two small hand-made output folders (not the bench itself)."""

import importlib.util
import json
import sys

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("bench_regression", ROOT / "bench" / "bench_regression.py")
bench = sys.modules.setdefault("bench_regression", importlib.util.module_from_spec(spec))
spec.loader.exec_module(bench)


def write_side(folder, b_mean="0.52", seconds=1.25, versions="2.5.5", extra=None):
    """One side's output of a case: a CSV, a provenance JSON naming the side's own folder, a stdout, a JSONL."""
    folder.mkdir(parents=True)
    (folder / "difficulty.csv").write_text(f"item,b_mean,b_sd\nq0,-1.10,0.31\nq1,{b_mean},0.29\n")
    record = {"max_r_hat": 1.004, "settings": {"seed": 1, "route": "collapsed"},
              "input": {"path": str(folder / "m.csv"), "sha256": "ab12"},
              "wall_time_s": seconds, "timing": {"sampling_time_s": seconds / 2},
              "package_versions": {"numpy": versions}, "created": f"2026-12-07T0{seconds}"}
    (folder / "diagnostics.json").write_text(json.dumps(record, indent=1))
    (folder / "stdout.0.txt").write_text(f"done in {seconds} s; outputs in {folder}/run\n")
    (folder / "stderr.0.txt").write_text(f"1PL fit: done, elapsed {seconds} s\n")
    (folder / "events.jsonl").write_text("".join(json.dumps({"type": "call", "n": n, "time": seconds * n}) + "\n"
                                                 for n in ((1, 2) if seconds < 2 else (2, 1))))  # arrival order
    for name, text in (extra or {}).items():
        (folder / name).write_text(text)
    return folder


def test_two_runs_of_one_revision_are_the_same(tmp_path):
    a = write_side(tmp_path / "before" / "fit")
    b = write_side(tmp_path / "after" / "fit", seconds=3.5, versions="2.6.0")
    assert bench.compare_trees(a, b) == []


def test_a_changed_csv_cell_is_reported_with_file_line_and_column(tmp_path):
    a = write_side(tmp_path / "before" / "fit")
    b = write_side(tmp_path / "after" / "fit", b_mean="0.53")
    assert bench.compare_trees(a, b) == [("difficulty.csv", "line 3, column b_mean: '0.52' != '0.53'")]


def test_volatile_json_fields_are_ignored_and_the_rest_compared_exactly(tmp_path):
    a = write_side(tmp_path / "before" / "fit")
    b = write_side(tmp_path / "after" / "fit", seconds=9.0, versions="3.0")
    record = json.loads((b / "diagnostics.json").read_text())
    assert bench.compare_trees(a, b) == []
    # without the masks (--raw) the volatile fields show; the side's own folder still counts as the same
    found = dict(bench.compare_trees(a, b, raw=True))
    assert found["diagnostics.json"] == "$.wall_time_s: 1.25 != 9.0"
    assert "events.jsonl" in found and "stdout.0.txt" in found
    record["settings"]["route"] = "joint"
    (b / "diagnostics.json").write_text(json.dumps(record))
    assert bench.compare_trees(a, b) == [("diagnostics.json", '$.settings.route: "collapsed" != "joint"')]


def test_files_on_one_side_only_and_a_run_time_stamp(tmp_path):
    a = write_side(tmp_path / "before" / "x", extra={"sim-seed1-20261207-035007.txt": "same\n"})
    b = write_side(tmp_path / "after" / "x", extra={"sim-seed1-20261207-041512.txt": "same\n", "new.csv": "a\n"})
    assert bench.compare_trees(a, b) == [("new.csv", "only in after")]


@pytest.mark.parametrize("option", ["--only", "--allow"])
def test_unknown_case_names_are_refused(option, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--before", "HEAD", option, "fit_nope", "--compare-only"])
    assert "unknown case 'fit_nope'" in str(stop.value)
