"""scripts/diagnose_benchmark.py through its command line, on every Python from 3.9 to 3.13."""

from __future__ import annotations

import glob
import json
import os
import shutil

import pytest

from conftest import assert_rejected, run_script

DIFFICULTY = """
item,b_mean,b_sd
q0,-1,0.1
q1,0,0.1
q2,0.5,0.1
q3,2,0.1
"""


def interpreters():
    """One interpreter per Python 3.9 … 3.13 found on PATH or in pyenv."""
    found = {}
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for minor in range(9, 14):
        candidates = [*sorted(glob.glob(f"{root}/versions/3.{minor}*/bin/python3")), shutil.which(f"python3.{minor}")]
        path = next((c for c in candidates if c and os.access(c, os.X_OK) and "shims" not in c), None)
        if path:
            found[f"3.{minor}"] = path
    return found


PYTHONS = interpreters()


def test_some_old_and_new_pythons_are_available():
    assert len(PYTHONS) >= 2, f"need several Pythons to test stdlib-only portability, found {PYTHONS}"


@pytest.mark.parametrize("version", ["3.9", "3.10", "3.11", "3.12", "3.13"])
def test_runs_isolated_without_site_packages(version, write_csv):
    if version not in PYTHONS:
        pytest.skip(f"Python {version} not installed here")
    path = write_csv("difficulty.csv", DIFFICULTY)
    result = run_script("diagnose_benchmark.py", path, python=PYTHONS[version], flags=("-I", "-S"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:5] == [
        "Items: 4",
        "Normalization: per-benchmark min-max to [0, 1]",
        "DDM: 0.104167",
        "Max Gap: 0.500000",
        "Top-5 Gap Sum: 1.000000",
    ]


def test_json_output_keys_and_gaps(write_csv):
    path = write_csv("difficulty.csv", DIFFICULTY)
    result = run_script("diagnose_benchmark.py", path, "--json", "--top-k", "2")
    record = json.loads(result.stdout)
    assert record["items"] == 4
    assert record["ddm"] == pytest.approx(0.1041666667)
    assert record["max_gap"] == pytest.approx(0.5)
    assert record["top2_gap_sum"] == pytest.approx(0.5 + 1 / 3)
    assert [(g["left"], g["right"]) for g in record["largest_gaps"]] == [
        pytest.approx((0.5, 1.0)), pytest.approx((0.0, 1 / 3))]


def test_item_id_column_and_other_value_column(write_csv):
    path = write_csv("d.csv", "item_id,difficulty\n0,3\n1,1\n2,2")
    result = run_script("diagnose_benchmark.py", path, "--column", "difficulty", "--json")
    assert json.loads(result.stdout)["ddm"] == pytest.approx((1 / 6 + 0 + 1 / 6) / 3)


def test_normalized_values_keep_their_scale(write_csv):
    path = write_csv("z.csv", "item,z\na,0.2\nb,0.4")
    record = json.loads(run_script("diagnose_benchmark.py", path, "--column", "z", "--normalized", "--json").stdout)
    assert record["max_gap"] == pytest.approx(0.6)
    assert record["normalization"].startswith("none")


def test_several_files_print_table_one_layout(tmp_path):
    for name, values in (("AIME-like", "0\n1\n3"), ("Even", "0\n1\n2")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "difficulty.csv").write_text("b_mean\n" + values + "\n")
    files = sorted(str(p) for p in tmp_path.glob("*/difficulty.csv"))
    text = run_script("diagnose_benchmark.py", *files).stdout.splitlines()
    assert text[0].split()[:7] == ["Benchmark", "DDM", "Max", "Gap", "Top-5", "Sum", "#"]
    assert "calibrated intervals" in text[0] and "widest gap resolved" in text[0]
    # hand-made files: no fit beside them, so no calibrated interval, no b_sd to resolve gaps by and no model-fit check;
    # the row says so
    assert "flagged: items; models" in text[0]
    assert text[1].split()[0] == "AIME-like" and text[1].split()[-5:] == ["3", "?", "not", "checked", "uncalibrated"]
    records = json.loads(run_script("diagnose_benchmark.py", *files, "--json").stdout)
    assert [r["benchmark"] for r in records] == ["AIME-like", "Even"]
    assert records[1]["ddm"] == pytest.approx(1 / 6 * 2 / 3)


@pytest.mark.parametrize("content, args, fragment", [
    (None, (), "no such file"),
    ("item,b\nq0,1\nq1,2", (), "no column 'b_mean'"),
    ("item,b_mean\nq0,1\nq1,abc", (), "line 3, item 'q1'"),
    ("item,b_mean\nq0,1\nq1,nan", (), "not a finite"),
    ("item,b_mean\nq0,1\nq1,inf", (), "not a finite"),
    ("item,b_mean\nq0,1", (), "at least 2 items"),
    ("item,b_mean\nq0,1\nq1,1", (), "all 2 difficulties equal"),
    ("item,b_mean\nq0,0.5\nq1,1.5", ("--normalized",), "outside [0, 1]"),
    ("", (), "empty"),
])
def test_rejects_bad_input(tmp_path, content, args, fragment):
    path = tmp_path / "difficulty.csv"
    if content is not None:
        path.write_text(content + "\n")
    assert_rejected(run_script("diagnose_benchmark.py", path, *args), fragment)
