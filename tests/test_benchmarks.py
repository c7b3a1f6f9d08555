"""Tests of the benchmark-folder data layer (data/benchmarks/<benchmark>/difficulty.csv + test.jsonl)."""


import pytest

from benchmeasure.base.errors import InputError
from benchmeasure.core.benchmarks import find_benchmarks, load_benchmark
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


@pytest.mark.parametrize("rows, fragment", [
    ("1,0\n2,1\n3,2\n", "difficulty.csv: item IDs must run 0 … 2; found 3, missing 0 (3 is on line 4)"),
    ("0,0\n5,1\n1,2\n", "difficulty.csv: item IDs must run 0 … 2; found 5, missing 2 (5 is on line 3)"),
    ("0,0\n1,1\n1,2\n", "difficulty.csv: line 4: item_id 1 appears 2 times (first on line 3)"),
    ("0,0\nq1,1\n", "difficulty.csv: line 3: item_id 'q1' is not an integer (expected 0 … 1): in the released "
                    "layout item_id is the item's row index into test.jsonl; a difficulty file naming its items "
                    "otherwise calls the column 'item' (as benchmeasure fit writes it): rename the column"),
])
def test_released_layout_ids_checked_without_test_jsonl(tmp_path, rows, fragment):
    folder = make_benchmark(tmp_path, "x", [0, 1, 2], test_ids=None)
    (folder / "difficulty.csv").write_text("item_id,b_mean\n" + rows)
    with pytest.raises(InputError) as info:
        load_benchmark(folder)
    assert str(info.value) == f"{folder / 'difficulty.csv'}: " + fragment.split(": ", 1)[1]


def test_released_layout_without_test_jsonl_accepts_ids_in_any_order(tmp_path):
    folder = make_benchmark(tmp_path, "x", [0, 1, 2], test_ids=None)
    (folder / "difficulty.csv").write_text("item_id,b_mean\n2,0.5\n\n0,1.5\n1,2.5\n")
    b = load_benchmark(folder)
    assert b.item_ids == ["2", "0", "1"] and b.difficulties == [0.5, 1.5, 2.5] and b.test_items is None


def test_line_numbers_count_blank_rows_and_test_jsonl_lines(tmp_path):
    folder = make_benchmark(tmp_path, "x", [0, 1, 2], test_ids=None)
    (folder / "difficulty.csv").write_text("item_id,b_mean\n0,0\n\n7,1\n1,2\n")
    with pytest.raises(InputError, match=r"found 7, missing 2 \(7 is on line 4\)"):
        load_benchmark(folder)
    folder = make_benchmark(tmp_path, "y", [0, 1], test_ids=None)
    (folder / "test.jsonl").write_text('{"item_id": "a"}\n{"item_id": 1}\n')
    with pytest.raises(InputError, match=r"test.jsonl: line 1: item_id 'a' is not an integer"):
        load_benchmark(folder)


def test_scanning_a_parent_warns_once_per_skipped_folder(tmp_path, capsys):
    make_benchmark(tmp_path, "a", [0, 1, 2])
    (tmp_path / "notes").mkdir()
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "test.jsonl").write_text('{"item_id": 0}\n')
    (tmp_path / "README.md").write_text("not a folder: no warning\n")
    assert [b.name for b in find_benchmarks([tmp_path])] == ["a"]
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"warning: {tmp_path / 'half'}: skipped, not a benchmark folder (no difficulty.csv)",
                     f"warning: {tmp_path / 'notes'}: skipped, not a benchmark folder (no difficulty.csv)"]
    find_benchmarks([tmp_path / "a"])                  # naming a benchmark folder scans nothing
    assert capsys.readouterr().err == ""


def test_skipped_folders_can_be_collected_instead_of_printed(tmp_path, capsys):
    make_benchmark(tmp_path, "a", [0, 1])
    (tmp_path / "notes").mkdir()
    skipped = []
    assert [b.name for b in find_benchmarks([tmp_path], skipped)] == ["a"]
    assert skipped == [tmp_path / "notes"] and capsys.readouterr().err == ""
