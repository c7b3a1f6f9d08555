"""evalscope review logs through ``prepare_response_matrix.py --from evalscope``, on real evalscope output.

The fixtures under tests/fixtures/harness_logs/evalscope/reviews were written by evalscope 1.14.1 (its
gsm8k benchmark on the four sim_arith items, ``--repeats 2``) against the simulated OpenAI-compatible
server (``make_fixtures_sim.sh``); the expected matrices are hand counts of their ``accuracy`` values
(tests/fixtures/harness_logs/README.md). Error cases run on edited copies.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.core.harness import logs_to_matrix, read_evalscope_log
from conftest import ROOT, assert_rejected, run_script

REVIEWS = ROOT / "tests" / "fixtures" / "harness_logs" / "evalscope" / "reviews"
STRONG, WEAK = REVIEWS / "sim-strong", REVIEWS / "sim-weak"


def prepare(*args):
    return run_script("prepare_response_matrix.py", *args)


def matrix(path: Path) -> tuple[list, dict]:
    lines = path.read_text().splitlines()
    return lines[0].split(",")[1:], {line.split(",")[0]: [int(x) for x in line.split(",")[1:]] for line in lines[1:]}


def records(folder: Path) -> list:
    return [json.loads(line) for line in (folder / "gsm8k_default.jsonl").read_text().splitlines()]


def edited(tmp_path, folder: Path, change) -> Path:
    """A copy of ``folder`` (keeping the model folder's name) with its review lines changed."""
    target = tmp_path / "reviews" / folder.name
    shutil.copytree(folder, target)
    path = target / "gsm8k_default.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in change(records(folder))))
    return target


def test_repeats_become_trials(tmp_path):
    out, rows = tmp_path / "m.csv", tmp_path / "rows.csv"
    result = prepare("--from", "evalscope", STRONG, WEAK, "--n-trials", 2, "--output", out, "--responses-out", rows)
    assert result.returncode == 0, result.stderr
    items, counts = matrix(out)
    assert items == ["0", "1", "2", "3"]  # group_id: the original items; index runs over the 8 repeated samples
    assert counts == {"sim-strong": [2, 2, 1, 0], "sim-weak": [2, 0, 1, 0]}
    long = rows.read_text().splitlines()
    assert len(long) == 1 + 2 * 4 * 2
    assert "sim-strong,2,0,1" in long and "sim-strong,2,1,0" in long  # item 2: repeat 0 right, repeat 1 wrong
    record = json.loads((tmp_path / "m.csv.json").read_text())
    assert record["settings"]["from"] == "evalscope" and "evalscope" in record["package_versions"]
    assert [i["task"] for i in record["inputs"]] == ["gsm8k_default"] * 2
    assert record["inputs"][0]["sha256"] == hashlib.sha256((STRONG / "gsm8k_default.jsonl").read_bytes()).hexdigest()


def test_grading_the_predictions_and_naming_the_metric(tmp_path):
    out = tmp_path / "m.csv"
    for extra in (["--grade", "math"], ["--metric", "accuracy"]):
        result = prepare("--from", "evalscope", STRONG / "gsm8k_default.jsonl", WEAK, "--n-trials", 2, *extra,
                         "--output", out)
        assert result.returncode == 0, result.stderr
        assert matrix(out)[1] == {"sim-strong": [2, 2, 1, 0], "sim-weak": [2, 0, 1, 0]}


def _status(value):
    def change(rows):
        rows[3]["sample_score"]["score"]["status"] = value
        return rows
    return change


def _drop(rows):
    return [r for r in rows if r["sample_score"]["group_id"] != 3]


def _drop_one_repeat(rows):
    return [r for r in rows if r["index"] != 7]


def _duplicate(rows):
    return [*rows, rows[0]]


def _legacy(rows):  # an older log: no group_id / generation_index, one line per sample
    for r in rows:
        del r["sample_score"]["group_id"], r["sample_score"]["generation_index"]
    return rows


EDITED = {
    "unusable score status": (_status("parse_error"), ("line 4 (item", "score status 'parse_error'")),
    "item missing from one model's log": (_drop, ("(model sim-weak): no response for item 3", "model sim-strong")),
    "a repeat missing": (_drop_one_repeat, ("item 3", "has 1 trial, expected --n-trials 2")),
    "a line twice": (_duplicate, ("line 9: item 3 repeat 0 appears twice (also line 1)",)),
    "no group ids": (_legacy, ("every document has one response but --n-trials is 2", "--repeats K")),
}


@pytest.mark.parametrize("case", sorted(EDITED))
def test_rejected_edited_log(case, tmp_path):
    change, fragments = EDITED[case]
    copy = edited(tmp_path, WEAK, change)
    out = tmp_path / "m.csv"
    result = prepare("--from", "evalscope", STRONG, copy, "--n-trials", 2, "--output", out, "--responses-out",
                     tmp_path / "rows.csv")
    line = assert_rejected(result, *fragments)
    assert str(copy) in line
    assert not out.exists() and not (tmp_path / "rows.csv").exists()


CASES = {
    "unknown metric": (["--metric", "bleu"], ("no metric 'bleu'", "accuracy")),
    "folder with several logs": ([REVIEWS.parent], ("holds 2 evalscope sample logs",)),
    "--scorer on an evalscope log": (["--scorer", "x"], ("--scorer applies to inspect logs only",)),
    "not a review file": ([ROOT / "tests" / "fixtures" / "harness_logs" / "tasks" / "sim_arith.jsonl"],
                          ("line 1: no 'index' and 'sample_score.score'",)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected(case, tmp_path):
    args, fragments = CASES[case]
    paths = [a for a in args if isinstance(a, Path)] or [STRONG]
    flags = [a for a in args if not isinstance(a, Path)]
    out = tmp_path / "m.csv"
    result = prepare("--from", "evalscope", *paths, *flags, "--n-trials", 2, "--output", out)
    assert_rejected(result, *fragments)
    assert not out.exists()


# ---------------------------------------------------------------- fuzz

SCALARS = st.none() | st.booleans() | st.integers(-2, 9) | st.floats(allow_nan=True) | st.text(max_size=5)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(["index", "accuracy", "score", "value", "x"]), inner,
                                        max_size=3), max_leaves=6)
FIELDS = [("index",), ("target",), ("sample_score",), ("sample_score", "score"), ("sample_score", "group_id"),
          ("sample_score", "generation_index"), ("sample_score", "score", "value"),
          ("sample_score", "score", "value", "accuracy"), ("sample_score", "score", "status"),
          ("sample_score", "score", "main_score_name"), ("sample_score", "score", "prediction")]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=st.integers(0, 7), where=st.sampled_from(FIELDS), value=VALUES, delete=st.booleans(),
       garbage=st.text(max_size=30))
def test_fuzz_damaged_reviews(tmp_path_factory, line, where, value, delete, garbage):
    """A field of a real review replaced or deleted, or a line of garbage: a clean error or a result whose
    values are 0/1-able numbers; never a traceback, never a changed file."""
    rows = records(STRONG)
    parent = rows[line]
    for key in where[:-1]:
        parent = parent[key]
    if delete:
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if garbage:
        text += garbage + "\n"
    folder = tmp_path_factory.mktemp("fuzz") / "sim-strong"
    folder.mkdir()
    path = folder / "gsm8k_default.jsonl"
    path.write_text(text)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        log = read_evalscope_log(folder)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert log.samples and all(isinstance(s.doc_id, int) for s in log.samples)
        try:  # the rest of the path: counting the trials
            logs_to_matrix([log], None, 2)
        except InputError as exc:
            assert str(exc) and "\n" not in str(exc)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
