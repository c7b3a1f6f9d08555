"""`item` and `item_id`, and one project table given where another is expected (issue 22): every such error names
what the file is and the command that takes it (docs/pip_user.md, "Item columns and the project's tables")."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmeasure.base.csv_table import table_kind
from benchmeasure.base.errors import InputError
from benchmeasure.benchfill.gaps import load_seed_set
from conftest import assert_rejected, run_script

DIFFICULTY = "item,b_mean,b_sd,r_hat,ess_bulk\nq0,-1.0,0.2,1.0,900\nq1,0.5,0.2,1.0,900\nq2,1.5,0.3,1.0,900\n"
ABILITY = "model,theta_mean,theta_sd\na,0.1,0.2\nb,-0.3,0.2\n"
RESPONSES = "model,item_id,trial,correct\na,q0,0,1\na,q1,0,0\nb,q0,0,0\nb,q1,0,1\n"
MATRIX = "model,q0,q1\na,1,0\nb,0,1\n"


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in (("difficulty", DIFFICULTY), ("ability", ABILITY), ("responses", RESPONSES),
                       ("matrix", MATRIX)):
        paths[name] = tmp_path / f"{name}.csv"
        paths[name].write_text(text, encoding="utf-8")
    return paths


@pytest.mark.parametrize(("script", "args", "given", "fragments"), [
    ("prepare_response_matrix.py", ["--n-trials", "1", "--output", "{tmp}/m.csv"], "difficulty",
     ["not graded responses", "this is a difficulty file", "diagnose"]),
    ("prepare_response_matrix.py", ["--n-trials", "1", "--output", "{tmp}/m.csv"], "ability",
     ["this is an ability file", "calibrate --abilities"]),
    ("fit_irt.py", ["--n-trials", "1", "--output-dir", "{tmp}/fit"], "difficulty",
     ["this is a difficulty file", "the count matrix it was fit from"]),
    ("check_response_matrix.py", ["--n-trials", "1"], "difficulty", ["this is a difficulty file"]),
    ("diagnose_benchmark.py", [], "responses", ["no column 'b_mean'", "benchmeasure prepare", "benchmeasure fit"]),
    ("diagnose_benchmark.py", [], "matrix", ["this is a count matrix", "benchmeasure fit MATRIX"]),
    ("posterior_metrics.py", [], "difficulty", ["not a CSV of posterior draws", "--save-posterior"]),
])
def test_a_table_in_the_wrong_place_is_named_with_its_command(files, tmp_path, script, args, given, fragments):
    argv = [files[given], *(a.replace("{tmp}", str(tmp_path)) for a in args)]
    assert_rejected(run_script(script, *argv), *fragments)
    assert not (tmp_path / "m.csv").exists() and not (tmp_path / "fit").exists()


def test_responses_with_an_item_column_say_to_rename_it(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(RESPONSES.replace("item_id", "item"), encoding="utf-8")
    assert_rejected(run_script("prepare_response_matrix.py", path, "--n-trials", "1", "--output", tmp_path / "m.csv"),
                    "no column 'item_id'", "rename the column 'item' to 'item_id'")


def test_a_difficulty_file_takes_either_name(tmp_path):
    for column in ("item", "item_id"):
        path = tmp_path / f"{column}.csv"
        path.write_text(f"{column},b_mean\n0,-1.0\n1,0.5\n2,1.5\n", encoding="utf-8")
        done = run_script("diagnose_benchmark.py", path, "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["items"] == 3


def test_labels_under_item_id_in_the_released_layout_say_what_item_id_means(tmp_path):
    folder = tmp_path / "suite" / "mine"
    folder.mkdir(parents=True)
    (folder / "difficulty.csv").write_text(DIFFICULTY.replace("item,", "item_id,"), encoding="utf-8")
    assert_rejected(run_script("summarize_benchmarks.py", tmp_path / "suite"), "item_id 'q0' is not an integer",
                    "row index into test.jsonl", "calls the column 'item'")
    (folder / "difficulty.csv").write_text(DIFFICULTY, encoding="utf-8")  # the fit's own column: accepted
    done = run_script("summarize_benchmarks.py", tmp_path / "suite")
    assert done.returncode == 0, done.stderr


def test_a_fits_labels_as_benchfill_calibration_say_how_to_join_the_pool(tmp_path):
    calibration = tmp_path / "difficulty.csv"
    calibration.write_text(DIFFICULTY, encoding="utf-8")
    pool = tmp_path / "test.jsonl"
    pool.write_text("".join(json.dumps({"item_id": i, "question": "?", "answer": "1"}) + "\n" for i in range(3)),
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"calibrated item 'q0' is not in the pool .*columns are the pool's item_ids"):
        load_seed_set("b", calibration, pool)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["model", "item", "item_id", "trial", "correct", "b_mean", "theta_mean", "q1", "",
                                 " model ", "x"]), max_size=6))
def test_table_kind_fuzz_names_a_kind_or_none(names):
    kind = table_kind(names)
    assert kind is None or (kind.startswith(("a ", "an ", "graded")) and "benchmeasure" in kind)
    if {"item_id", "trial", "correct"} <= set(names):
        assert kind.startswith("graded responses")
