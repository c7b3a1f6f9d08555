"""benchmeasure/base/files.py: the shared JSON Lines reader."""

from __future__ import annotations

import pytest

from benchmeasure.base.errors import InputError
from benchmeasure.base.files import read_jsonl_objects, write_json


def test_objects_come_with_their_line_numbers_and_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"item_id": 1, "x": [1]}\n\n  \n{"item_id": "b"}\n', encoding="utf-8")
    assert read_jsonl_objects(path, ("item_id",)) == [(1, {"item_id": 1, "x": [1]}), (4, {"item_id": "b"})]
    (tmp_path / "empty.jsonl").write_text("\n")
    assert read_jsonl_objects(tmp_path / "empty.jsonl") == []


@pytest.mark.parametrize("data, message", [
    (b'{"a": 1}\n\n{"a": 2,}\n', "line 3: not valid JSON ("),
    (b'{"a": 1}\n[1, 2]\n', "line 2: not a JSON object"),
    (b'{"a": 1}\n"a"\n', "line 2: not a JSON object"),
    (b'{"a": 1, "b": 2}\n{"a": 1}\n', "line 2: no field 'b'"),
    (b'{"a": "\xff"}\n', ": not UTF-8 text"),
])
def test_bad_lines_name_file_and_line(tmp_path, data, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        read_jsonl_objects(path, ("a", "b") if "no field" in message else ())
    assert str(caught.value).startswith(f"{path}") and message in str(caught.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"none\.jsonl: no such file"):
        read_jsonl_objects(tmp_path / "none.jsonl")


def test_write_json_is_readable_utf8_with_final_newline(tmp_path):
    path = tmp_path / "new" / "out.json"
    write_json(path, {"b": "é", "a": [1, 2]}, sort_keys=True)
    text = path.read_text(encoding="utf-8")
    assert text == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": "é"\n}\n'
    assert [p.name for p in path.parent.iterdir()] == ["out.json"]


def test_write_json_failure_keeps_the_old_file(tmp_path):
    path = tmp_path / "out.json"
    write_json(path, {"kept": True})
    with pytest.raises(TypeError):
        write_json(path, {"bad": object()})
    assert path.read_text(encoding="utf-8") == '{\n  "kept": true\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
