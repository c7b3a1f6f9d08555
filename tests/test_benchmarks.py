"""Tests of the benchmark-folder data layer (data/benchmarks/<benchmark>/difficulty.csv + test.jsonl)."""


import pytest

from benchmeasure.benchmarks import find_benchmarks, load_benchmark
from benchmeasure.errors import InputError
from conftest import make_benchmark


def test_load_released_layout(tmp_path):
    folder = make_benchmark(tmp_path, "AIME24", [0.5, -1.0, 2.0])
    b = load_benchmark(folder)
    assert b.name == "AIME24" and b.difficulties == [0.5, -1.0, 2.0]
    assert b.item_ids == ["0", "1", "2"] and b.test_items == 3


def test_folder_without_test_file_accepts_any_unique_ids(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "difficulty.csv").write_text("item,b_mean,b_sd\nq7,0.1,0.2\nq3,0.4,0.2\n")
    b = load_benchmark(folder)
    assert b.item_ids == ["q7", "q3"] and b.test_items is None


def test_find_benchmarks_in_a_folder_of_folders_sorted(tmp_path):
    make_benchmark(tmp_path, "b", [0, 1])
    make_benchmark(tmp_path, "a", [0, 1, 2])
    (tmp_path / "notes").mkdir()
    assert [b.name for b in find_benchmarks([tmp_path])] == ["a", "b"]
    assert [b.name for b in find_benchmarks([tmp_path / "b" / "difficulty.csv", tmp_path / "a"])] == ["b", "a"]


@pytest.mark.parametrize("setup, fragment", [
    (lambda r: r / "nope", "no such benchmark folder"),
    (lambda r: (r / "empty").mkdir() or r / "empty", "no benchmark folders"),
    (lambda r: make_benchmark(r, "x", [0, 1, 2], test_ids=[0, 1]), "has 3 items but test.jsonl has 2"),
    (lambda r: make_benchmark(r, "x", [0, 1, 2], test_ids=[0, 1, 5]), "found 5, missing 2"),
    (lambda r: make_benchmark(r, "x", [0, 1, 2], test_ids=[0, 1, 1]), "item_id 1 appears 2 times"),
])
def test_rejections_name_the_problem(tmp_path, setup, fragment):
    with pytest.raises(InputError) as info:
        find_benchmarks([setup(tmp_path)])
    assert fragment in str(info.value)


def test_difficulty_ids_must_run_from_zero(tmp_path):
    folder = make_benchmark(tmp_path, "x", [0, 1, 2])
    (folder / "difficulty.csv").write_text("item_id,b_mean\n1,0\n2,1\n3,2\n")
    with pytest.raises(InputError, match="must run 0 … 2; found 3, missing 0"):
        load_benchmark(folder)


def test_test_jsonl_record_without_id(tmp_path):
    folder = make_benchmark(tmp_path, "x", [0, 1])
    (folder / "test.jsonl").write_text('{"item_id": 0}\n{"question": "?"}\n')
    with pytest.raises(InputError, match=r"test.jsonl line 2: no field 'item_id'"):
        load_benchmark(folder)


def test_released_ids_must_be_integers(tmp_path):
    folder = make_benchmark(tmp_path, "x", [0, 1])
    (folder / "difficulty.csv").write_text("item_id,b_mean\n0,0\nq1,1\n")
    with pytest.raises(InputError, match="line 3: item_id 'q1' is not an integer"):
        load_benchmark(folder)
