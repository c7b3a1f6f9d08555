"""Item texts from JSON Lines files whose id and text fields the user names.

Each non-blank line is one JSON object. The id field holds a string or an integer (kept as its decimal text);
each text field a string or a list of strings (answer options), joined in the order given, blank lines between.
Anything else — a missing field, a float or boolean id, a repeated id, an item with no text, text that is not
valid Unicode (a lone surrogate such as ``"\\udc80"``), a file that is not UTF-8 — is a one-line error naming
the file and line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from benchmeasure.base.errors import fail
from benchmeasure.base.files import read_jsonl_objects


@dataclass(frozen=True)
class Item:
    item_id: str
    text: str


def _check_unicode(text: str, where: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        fail(f"{where}: text is not valid Unicode (a lone surrogate escape such as \\udc80); fix the file")
    return text


def _text_of(value, where: str) -> str:
    if isinstance(value, str):
        return _check_unicode(value, where)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return _check_unicode("\n".join(value), where)
    fail(f"{where}: expected a string or a list of strings, found {type(value).__name__}")


def _id_of(value, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        fail(f"{where}: an item ID must be a string or an integer, found {type(value).__name__} {value!r}")
    # stripped, as every table reader reads an ID (str.strip: Unicode line breaks too): an ID " q1" here did not
    # meet its row "q1" of the --difficulty file
    text = _check_unicode(str(value), where).strip()
    if not text:
        fail(f"{where}: blank item ID")
    return text


def read_items(paths: list, id_field: str, text_fields: list) -> list[Item]:
    """The items of ``paths`` (in file and line order), each text the ``text_fields`` joined."""
    items: list[Item] = []
    seen: dict[str, str] = {}
    for path in paths:
        path = os.fspath(path)
        for line, record in read_jsonl_objects(path, required=(id_field, *text_fields)):
            where = f"{path} line {line}"
            item_id = _id_of(record[id_field], f"{where}: field {id_field!r}")
            if item_id in seen:
                fail(f"{where}: item ID {item_id!r} repeats {seen[item_id]}; IDs must be unique in a benchmark")
            seen[item_id] = where
            parts = [_text_of(record[f], f"{where}: field {f!r}") for f in text_fields]
            text = "\n\n".join(p for p in parts if p.strip())
            if not text.strip():
                fail(f"{where}: item {item_id!r} has no text in {', '.join(text_fields)}")
            items.append(Item(item_id, text))
    if not items:
        fail(f"{', '.join(map(os.fspath, paths))}: no items (every line is blank)")
    return items
