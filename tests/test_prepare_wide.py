"""prepare_response_matrix.py --from wide (benchmeasure.core.wide): wide tables of counts, both orientations."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, assert_rejected, run_script

CHEMBENCH = ROOT / "data" / "chembench" / "binary_matrix.csv"


def prepare_wide(path, out, *flags, n_trials=1):
    return run_script("prepare_response_matrix.py", "--from", "wide", path, "--n-trials", n_trials,
                      "--output", out, *flags)


def read_grid(path):
    with open(path, newline="", encoding="utf-8-sig") as handle:
        return list(csv.reader(handle))


def test_chembench_items_as_rows_and_its_transpose_give_the_same_matrix(tmp_path):
    grid = read_grid(CHEMBENCH)
    assert grid[0][0] == ""  # the blank first header cell of the published file
    models, items = grid[0][1:], [row[0] for row in grid[1:]]
    assert (len(models), len(items)) == (22, 2854)

    out = tmp_path / "chembench" / "response_matrix.csv"
    result = prepare_wide(CHEMBENCH, out, "--items-as-rows")
    assert result.returncode == 0, result.stderr
    assert "22 models x 2854 items" in result.stderr
    matrix = read_grid(out)
    assert matrix[0] == ["model", *items]
    assert [row[0] for row in matrix[1:]] == models
    for j, row in enumerate(matrix[1:], start=1):  # every cell: the published 0.0/1.0 as a count
        assert row[1:] == [str(int(float(source[j]))) for source in grid[1:]]

    record = json.loads((out.parent / "response_matrix.csv.json").read_text())
    assert record["settings"] == {"n_trials": 1, "from": "wide", "items_as_rows": True}
    assert record["inputs"] == [{"path": str(CHEMBENCH),
                                 "sha256": hashlib.sha256(CHEMBENCH.read_bytes()).hexdigest()}]
    assert (record["models"], record["items"]) == (22, 2854)

    # the other orientation: one row per model, written here by transposing the published file
    transposed = tmp_path / "models_as_rows.csv"
    with open(transposed, "w", newline="") as handle:
        csv.writer(handle).writerows([list(column) for column in zip(*grid)])
    out2 = tmp_path / "m2.csv"
    result = prepare_wide(transposed, out2)
    assert result.returncode == 0, result.stderr
    assert out2.read_text() == out.read_text()
    assert json.loads((tmp_path / "m2.csv.json").read_text())["settings"]["items_as_rows"] is False

    # read the wrong way round, the 22 models become items: still a valid matrix, named as such
    out3 = tmp_path / "m3.csv"
    assert prepare_wide(CHEMBENCH, out3).returncode == 0
    assert read_grid(out3)[0][1:] == models


def test_counts_with_several_trials_and_integers_written_as_floats(write_csv, tmp_path):
    source = write_csv("wide.csv", """
    model,q1,q2,007
    a,0.0,2.,1
    b,2.00,1.0, 0
    """)
    out = tmp_path / "m.csv"
    assert prepare_wide(source, out, n_trials=2).returncode == 0
    assert out.read_text() == "model,q1,q2,007\na,0,2,1\nb,2,1,0\n"


BAD = {
    "fraction": ("model,q1,q2\na,0.5,1\nb,1,0", ["line 2, column 2", "model 'a', item 'q1'", "'0.5'"]),
    "nan": ("model,q1,q2\na,1,0\nb,1,NaN", ["line 3, column 3", "model 'b', item 'q2'", "missing value"]),
    "blank cell": ("model,q1,q2\na,1,\nb,1,0", ["line 2, column 3", "empty cell"]),
    "above K": ("model,q1,q2\na,1,2\nb,1,0", ["line 2, column 3", "count 2 is outside [0, 1]"]),
    "negative": ("model,q1,q2\na,1,-1\nb,1,0", ["'-1' is not an integer count"]),
    "exponent": ("model,q1,q2\na,1,1e0\nb,1,0", ["'1e0'"]),
    "huge": ("model,q1,q2\na,1," + "9" * 5000 + "\nb,1,0", ["line 2, column 3", "..."]),
    "short row": ("model,q1,q2\na,1\nb,1,0", ["line 2: 2 fields, the header has 3"]),
    "long row": ("model,q1,q2\na,1,0,1\nb,1,0", ["line 2: 4 fields", "unquoted comma"]),
    "blank row ID": ("model,q1,q2\na,1,0\n ,1,0", ["line 3, column 1: blank model ID"]),
    "duplicate row ID": ("model,q1,q2\na,1,0\na,1,0", ["line 3: model ID 'a' is also on line 2"]),
    "duplicate column ID": ("model,q1,q1\na,1,0\nb,1,0", ["column 'q1' appears twice in the header (columns 2 and 3)"]),
    "blank header cell": ("model,q1,,q3\na,1,0,1\nb,1,0,1", ["line 1: header column 3 is blank"]),
    "one model": ("model,q1,q2\na,1,0", ["need at least 2 models and 2 items", "--items-as-rows"]),
    "empty file": ("", ["file is empty"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_tables_are_one_line_naming_where_and_no_output(case, tmp_path):
    text, fragments = BAD[case]
    path = tmp_path / "wide.csv"
    path.write_text(text + "\n" if text else "")
    before = path.read_bytes()
    out = tmp_path / "out" / "m.csv"
    assert_rejected(prepare_wide(path, out), str(path), *fragments)
    assert not (tmp_path / "out").exists()
    assert path.read_bytes() == before


def test_items_as_rows_names_model_and_item_the_right_way_round(write_csv, tmp_path):
    source = write_csv("wide.csv", """
    ,m1,m2
    q1,1,0
    q2,0,x
    """)
    assert_rejected(prepare_wide(source, tmp_path / "m.csv", "--items-as-rows"),
                    "line 3, column 3 (model 'm2', item 'q2')")
    source = write_csv("dup.csv", ",m1,m2\nq1,1,0\nq1,0,1")
    assert_rejected(prepare_wide(source, tmp_path / "m.csv", "--items-as-rows"), "item ID 'q1' is also on line 2")


def test_non_utf8_and_missing_files(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("model,q1,q2\nmod\xe8le,1,0\nb,0,1\n".encode("latin-1"))
    assert_rejected(prepare_wide(path, tmp_path / "m.csv"), "not UTF-8", "0xe8")
    assert_rejected(prepare_wide(tmp_path / "nope.csv", tmp_path / "m.csv"), "nope.csv: no such file")


def test_flags_that_do_not_apply(write_csv, tmp_path):
    source = write_csv("wide.csv", "model,q1,q2\na,1,0\nb,0,1")
    out = tmp_path / "m.csv"
    assert_rejected(run_script("prepare_response_matrix.py", source, "--items-as-rows", "--n-trials", 1,
                               "--output", out), "--items-as-rows needs --from wide")
    assert_rejected(prepare_wide(source, out, "--metric", "acc"), "--metric applies to harness logs only")
    assert_rejected(run_script("prepare_response_matrix.py", "--from", "wide", source, source, "--n-trials", 1,
                               "--output", out), "--from wide reads one table; 2 paths")
    assert not out.exists()


def test_help_shows_the_wide_example():
    result = run_script("prepare_response_matrix.py", "--help")
    assert result.returncode == 0
    assert "--from wide data/chembench/binary_matrix.csv" in result.stdout and "--items-as-rows" in result.stdout


# --- fuzz: random tables, some malformed, through the command's main() in this process -----------------------

# Each token as written in a cell, and the count it stands for (None: the table must be rejected).
TOKENS = {"0": 0, "1": 1, "2": 2, "1.0": 1, "0.0": 0, "2.": 2, "1.000": 1, " 1 ": 1, "0.5": None, "nan": None,
          "NaN": None, "": None, "-1": None, "1e0": None, "+1": None, "\u0663": None, "x": None, "1,0": None,
          "99999999999999999999999": None, "inf": None, "1.01": None}
IDS = st.sampled_from(["a", "b", " b", "q 1", "007", "7", "", " ", "x,y", 'say "hi"', "line\nbreak", "é", "a"])


@st.composite
def tables(draw):
    n_columns = draw(st.integers(1, 4))
    header = [draw(st.sampled_from(["", "model", "id"]))] + [draw(IDS) for _ in range(n_columns)]
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        width = len(header) if draw(st.integers(0, 9)) else draw(st.integers(1, len(header) + 1))
        rows.append([draw(IDS)] + [draw(st.sampled_from(sorted(TOKENS))) for _ in range(width - 1)])
    return header, rows, draw(st.integers(1, 2)), draw(st.booleans())


def expected(header, rows, n_trials, items_as_rows):
    """What the reader must give: the model × item grid, or None when the table must be rejected.

    IDs lose surrounding spaces; a row whose fields are all blank is skipped (the strict reader's rule).
    """
    columns = [name.strip() for name in header[1:]]
    if any(not name for name in columns) or len(set(columns)) != len(columns):
        return None
    names, grid = [], []
    for row in rows:
        if all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header) or not row[0].strip() or row[0].strip() in names:
            return None
        values = [TOKENS[cell] for cell in row[1:]]
        if any(value is None or value > n_trials for value in values):
            return None
        names.append(row[0].strip())
        grid.append(values)
    if len(names) < 2 or len(columns) < 2:
        return None
    if items_as_rows:
        return columns, names, [list(column) for column in zip(*grid)]
    return names, columns, grid


def run_in_process(argv):
    from benchmeasure.cli import main

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as stop:
        main(argv)
    return stop.value.code, stderr.getvalue()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables())
def test_fuzz_random_tables_clean_error_or_correct_matrix(table, tmp_path):
    header, rows, n_trials, items_as_rows = table
    source = tmp_path / "wide.csv"
    with open(source, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *rows])
    before = source.read_bytes()
    out = tmp_path / "out.csv"
    for stale in (out, tmp_path / "out.csv.json"):
        stale.unlink(missing_ok=True)
    argv = ["prepare", "--from", "wide", str(source), "--n-trials", str(n_trials), "--output", str(out),
            *(["--items-as-rows"] if items_as_rows else [])]
    code, stderr = run_in_process(argv)
    assert source.read_bytes() == before
    want = expected(header, rows, n_trials, items_as_rows)
    if want is None:
        assert code == 2, (header, rows, stderr)
        assert stderr.startswith("error: ") and stderr.count("\n") == 1 and "Traceback" not in stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["wide.csv"]
    else:
        assert code == 0, stderr
        models, items, grid = want
        assert read_grid(out) == [["model", *items], *[[m, *map(str, r)] for m, r in zip(models, grid)]]


def test_without_numpy_the_wide_path_says_what_to_install(tmp_path):
    """``python3 -I -S`` (no site-packages): one line naming numpy; pandas is never needed for a wide table."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "scripts" / "prepare_response_matrix.py"),
                             "--from", "wide", str(CHEMBENCH), "--items-as-rows", "--n-trials", "1",
                             "--output", "m.csv"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert_rejected(result, "--from wide needs the Python package 'numpy'")
    assert not (tmp_path / "m.csv").exists()
