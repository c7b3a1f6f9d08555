"""scripts/prepare_response_matrix.py (benchmeasure.core.responses) through its command line."""

from __future__ import annotations

import pytest

from conftest import assert_rejected, run_script

README_EXAMPLE = """
model,item_id,trial,correct
model-a,q0,0,1
model-a,q0,1,0
model-a,q1,0,1
model-a,q1,1,1
model-b,q0,0,0
model-b,q0,1,0
model-b,q1,0,1
model-b,q1,1,0
"""


def prepare(path, out, n_trials=2):
    return run_script("prepare_response_matrix.py", path, "--n-trials", n_trials, "--output", out)


def test_readme_example_exactly(write_csv, tmp_path):
    out = tmp_path / "my_benchmark" / "response_matrix.csv"  # parent folder does not exist yet
    result = prepare(write_csv("responses.csv", README_EXAMPLE), out)
    assert result.returncode == 0, result.stderr
    assert out.read_text() == "model,q0,q1\nmodel-a,1,2\nmodel-b,0,1\n"
    # no temporary file left; the provenance record beside the matrix
    assert sorted(p.name for p in out.parent.iterdir()) == ["response_matrix.csv", "response_matrix.csv.json"]


def test_provenance_record_names_input_hash_and_settings(write_csv, tmp_path):
    import hashlib
    import json

    source = write_csv("responses.csv", README_EXAMPLE)
    out = tmp_path / "m.csv"
    assert prepare(source, out).returncode == 0
    record = json.loads((tmp_path / "m.csv.json").read_text())
    assert record["inputs"] == [{"path": str(source), "sha256": hashlib.sha256(source.read_bytes()).hexdigest()}]
    assert record["settings"] == {"n_trials": 2} and (record["models"], record["items"]) == (2, 2)
    assert "prepare_response_matrix.py" in record["command"] and record["package_versions"]["pandas"]


def test_ids_kept_exactly_in_first_seen_order_and_extra_columns_ignored(write_csv, tmp_path):
    rows = """
    note,correct,trial,item_id,model
    x,1,t1,007,zeta
    x,0,t2,007,zeta
    x,1,t1,10,zeta
    x,1,t2,10,zeta
    x,0,t2,10,alpha
    x,0,t1,10,alpha
    x,1,t1,007,alpha
    x,1,t2,007,alpha
    """
    out = tmp_path / "m.csv"
    assert prepare(write_csv("r.csv", rows), out).returncode == 0
    assert out.read_text() == "model,007,10\nzeta,1,2\nalpha,2,0\n"


@pytest.mark.parametrize("route", ["arrow", "stdlib"])
def test_ids_are_read_stripped_as_the_matrix_readers_strip_them(tmp_path, route):
    """` q1` and `q1\u2028` are the item q1, as every reader of the written matrix reads them (the two were counted
    as two items, which `fit` then read back as one repeated item); on both reading routes."""
    from benchmeasure.core.matrix import read_matrix

    rows = ("model,item_id,trial,correct\nm1, q1,0,1\nm1,q1\u2028,1,1\nm2,q1,0,0\nm2,q1,1,1\n"
            "m1,q2,0,0\nm1,q2,1,0\nm2,q2,0,1\nm2,q2,1,1\n")
    if route == "stdlib":   # a line of empty fields: the fast route refuses it, the line-by-line reader skips it
        rows += ",,,\n"
    source = tmp_path / "r.csv"
    source.write_text(rows, encoding="utf-8")
    out = tmp_path / "m.csv"
    result = prepare(source, out)
    assert result.returncode == 0, result.stderr
    assert out.read_text() == "model,q1,q2\nm1,2,0\nm2,1,2\n"
    matrix = read_matrix(out, 2)
    assert matrix.items == ["q1", "q2"] and matrix.counts.tolist() == [[2, 0], [1, 2]]
    clash = tmp_path / "clash.csv"   # the same response twice once stripped: one error line naming it
    clash.write_text("model,item_id,trial,correct\nm1,q1,0,1\nm1, q1 ,0,1\n", encoding="utf-8")
    assert_rejected(prepare(clash, tmp_path / "c.csv"), "duplicate")
    assert not (tmp_path / "c.csv").exists()


def test_trial_ids_are_labels_not_positions(write_csv, tmp_path):
    rows = "model,item_id,trial,correct\nm1,a,x,1\nm1,a,y,1\nm1,a,z,0\nm2,a,7,0\nm2,a,8,0\nm2,a,9,1"
    out = tmp_path / "m.csv"
    assert prepare(write_csv("r.csv", rows), out, n_trials=3).returncode == 0
    assert out.read_text() == "model,a\nm1,2\nm2,1\n"


BAD = {
    "missing column": ("model,item_id,correct\nm,q,1", "no column 'trial'"),
    "correct not 0/1": (README_EXAMPLE.replace("model-b,q1,1,0", "model-b,q1,1,yes"), "line 9"),
    "correct blank": (README_EXAMPLE.replace("model-a,q0,1,0", "model-a,q0,1,"), "line 3"),
    "too few trials": (README_EXAMPLE.replace("model-b,q1,1,0\n", ""), "has 1 trial, expected --n-trials 2"),
    "too many trials": (README_EXAMPLE + "model-b,q1,2,1\n", "has 3 trials"),
    "duplicate trial": (README_EXAMPLE.replace("model-b,q1,1,0", "model-b,q1,0,0"), "duplicate response"),
    "missing pair": (README_EXAMPLE.replace("model-b,q1,0,1\n", "").replace("model-b,q1,1,0\n", ""),
                     "model 'model-b' has no responses for item 'q1'"),
    "empty file": ("", "empty"),
    "header only": ("model,item_id,trial,correct", "no responses"),
    "blank model": (README_EXAMPLE.replace("model-b,q1,1,0", " ,q1,1,0"), "line 9: blank model ID"),
    "blank item": (README_EXAMPLE.replace("model-b,q1,1,0", "model-b,,1,0"), "line 9: blank item ID"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_rejected_inputs_leave_no_output(case, tmp_path):
    text, fragment = BAD[case]
    path = tmp_path / "responses.csv"
    path.write_text(text.strip() + "\n" if text.strip() else "")
    out = tmp_path / "out" / "matrix.csv"
    assert_rejected(prepare(path, out), fragment)
    assert not out.exists()
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_bad_correct_value_names_model_item_trial_and_line(write_csv, tmp_path):
    text = README_EXAMPLE.replace("model-b,q1,1,0", "model-b,q1,1,2")
    assert_rejected(prepare(write_csv("r.csv", text), tmp_path / "m.csv"),
                    "line 9", "'model-b'", "'q1'", "trial '1'", "'2'")


def test_non_utf8_input_is_one_line(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(README_EXAMPLE.strip().replace("model-b", "mod\xe8le-b").encode("latin-1") + b"\n")
    assert_rejected(prepare(path, tmp_path / "m.csv"), str(path), "not UTF-8", "0xe8")
    assert not (tmp_path / "m.csv").exists()


def test_unwritable_output_path_is_refused_before_reading(write_csv, tmp_path):
    source = write_csv("r.csv", README_EXAMPLE)
    (tmp_path / "folder").mkdir()
    assert_rejected(prepare(source, tmp_path / "folder"), "is a folder")
    (tmp_path / "afile.csv").write_text("x\n")
    assert_rejected(prepare(source, tmp_path / "afile.csv" / "m.csv"), "is a file")
    assert (tmp_path / "afile.csv").read_text() == "x\n"


def test_error_names_model_item_trial_and_line(write_csv, tmp_path):
    text = README_EXAMPLE.replace("model-b,q1,1,0", "model-b,q1,0,0")
    line = assert_rejected(prepare(write_csv("r.csv", text), tmp_path / "m.csv"))
    for fragment in ("line 9", "'model-b'", "'q1'", "trial '0'", "line 8"):
        assert fragment in line


def test_existing_output_survives_a_rejected_run(write_csv, tmp_path):
    out = tmp_path / "m.csv"
    out.write_text("keep me\n")
    bad = write_csv("r.csv", README_EXAMPLE.replace("model-b,q1,1,0\n", ""))
    assert_rejected(prepare(bad, out))
    assert out.read_text() == "keep me\n"


def test_bad_n_trials(write_csv, tmp_path):
    assert_rejected(prepare(write_csv("r.csv", README_EXAMPLE), tmp_path / "m.csv", n_trials=0), "--n-trials")


def test_matrix_counts_match_simulation(tmp_path):
    """The bundled example converts to the counts implied by its rows."""
    import csv

    from conftest import ROOT
    source = ROOT / "data/example_simulated/responses.csv"
    out = tmp_path / "m.csv"
    assert prepare(source, out, n_trials=8).returncode == 0
    expected = {}
    with open(source) as handle:
        for row in csv.DictReader(handle):
            key = (row["model"], row["item_id"])
            expected[key] = expected.get(key, 0) + int(row["correct"])
    with open(out) as handle:
        reader = csv.reader(handle)
        items = next(reader)[1:]
        got = {(row[0], item): int(v) for row in reader for item, v in zip(items, row[1:])}
    assert got == expected
