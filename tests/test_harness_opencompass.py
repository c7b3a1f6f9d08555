"""OpenCompass results through ``prepare_response_matrix.py --from opencompass``, on real OpenCompass output.

The fixtures under tests/fixtures/harness_logs/opencompass/results were written by OpenCompass 0.5.4
(``--dump-eval-details``, a custom dataset of the four sim_arith items, n = 3 replicas, EMEvaluator)
against the simulated OpenAI-compatible server (``make_fixtures_sim.sh``); the expected matrices are
hand counts of their ``correct`` lists (tests/fixtures/harness_logs/README.md). Error cases run on
edited copies.
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
from benchmeasure.core.harness import logs_to_matrix, read_opencompass_log
from conftest import ROOT, assert_rejected, run_script

RESULTS = ROOT / "tests" / "fixtures" / "harness_logs" / "opencompass" / "results"
STRONG, WEAK = RESULTS / "sim-strong", RESULTS / "sim-weak"
HAND_COUNT = {"sim-strong": [3, 3, 3, 2], "sim-weak": [1, 0, 1, 0]}


def prepare(*args):
    return run_script("prepare_response_matrix.py", *args)


def matrix(path: Path) -> tuple[list, dict]:
    lines = path.read_text().splitlines()
    return lines[0].split(",")[1:], {line.split(",")[0]: [int(x) for x in line.split(",")[1:]] for line in lines[1:]}


def load(folder: Path) -> dict:
    return json.loads((folder / "sim-arith.json").read_text())


def edited(tmp_path, folder: Path, change) -> Path:
    target = tmp_path / "results" / folder.name
    shutil.copytree(folder, target)
    (target / "sim-arith.json").write_text(json.dumps(change(load(folder))))
    return target


def test_replicas_become_trials(tmp_path):
    out, rows = tmp_path / "m.csv", tmp_path / "rows.csv"
    result = prepare("--from", "opencompass", STRONG, WEAK, "--n-trials", 3, "--output", out, "--responses-out", rows)
    assert result.returncode == 0, result.stderr
    items, counts = matrix(out)
    assert items == ["0", "1", "2", "3"]  # example_abbr sim-arith_<index>
    assert counts == HAND_COUNT
    long = rows.read_text().splitlines()
    assert len(long) == 1 + 2 * 4 * 3
    assert [line for line in long if line.startswith("sim-strong,3,")] == [
        "sim-strong,3,0,1", "sim-strong,3,1,1", "sim-strong,3,2,0"]
    record = json.loads((tmp_path / "m.csv.json").read_text())
    assert record["settings"]["from"] == "opencompass" and "opencompass" in record["package_versions"]
    assert [i["task"] for i in record["inputs"]] == ["sim-arith"] * 2
    assert record["inputs"][1]["sha256"] == hashlib.sha256((WEAK / "sim-arith.json").read_bytes()).hexdigest()


def test_grading_the_predictions(tmp_path):
    out = tmp_path / "m.csv"
    result = prepare("--from", "opencompass", STRONG / "sim-arith.json", WEAK, "--grade", "math", "--n-trials", 3,
                     "--output", out)
    assert result.returncode == 0, result.stderr
    assert matrix(out)[1] == HAND_COUNT


def test_details_keyed_by_item(tmp_path):
    """The object form of ``details`` (item → detail with a boolean ``correct``), one trial each."""
    def keyed(data):
        data["details"] = {str(i): {"pred": d["pred"][0], "answer": d["answer"][0], "correct": d["correct"][0]}
                           for i, d in enumerate(data["details"])}
        return data
    out = tmp_path / "m.csv"
    result = prepare("--from", "opencompass", edited(tmp_path, STRONG, keyed), "--n-trials", 1, "--output", out)
    assert result.returncode == 0, result.stderr
    assert matrix(out) == (["0", "1", "2", "3"], {"sim-strong": [1, 1, 1, 1]})


def _no_details(data):
    del data["details"]
    return data


def _drop_item(data):
    data["details"] = data["details"][:3]
    return data


def _short_item(data):
    data["details"][1]["correct"] = data["details"][1]["correct"][:2]
    data["details"][1]["pred"] = data["details"][1]["pred"][:2]
    return data


def _twice(data):
    data["details"].append(data["details"][0])
    return data


def _no_abbr(data):
    del data["details"][2]["example_abbr"]
    return data


EDITED = {
    "no details": (_no_details, ("no 'details'", "--dump-eval-details")),
    "item missing from one model's log": (_drop_item, ("(model sim-weak): no response for item 3",)),
    "replicas differ from --n-trials": (_short_item, ("item 1", "has 2 trials, expected --n-trials 3")),
    "an item twice": (_twice, ("details item 0 appears twice (entries 1 and 5)",)),
    "no example_abbr": (_no_abbr, ("details[2]: no 'example_abbr'",)),
}


@pytest.mark.parametrize("case", sorted(EDITED))
def test_rejected_edited_log(case, tmp_path):
    change, fragments = EDITED[case]
    copy = edited(tmp_path, WEAK, change)
    out = tmp_path / "m.csv"
    result = prepare("--from", "opencompass", STRONG, copy, "--n-trials", 3, "--output", out, "--responses-out",
                     tmp_path / "rows.csv")
    line = assert_rejected(result, *fragments)
    assert str(copy) in line
    assert not out.exists() and not (tmp_path / "rows.csv").exists()


CASES = {
    "unknown correctness field": (["--metric", "accuracy"], ("details item 0: no 'accuracy'", "correct")),
    "folder with several logs": ([RESULTS], ("holds 2 opencompass sample logs",)),
    "--filter on an opencompass log": (["--filter", "x"], ("--filter applies to lm-eval logs only",)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected(case, tmp_path):
    args, fragments = CASES[case]
    paths = [a for a in args if isinstance(a, Path)] or [STRONG]
    flags = [a for a in args if not isinstance(a, Path)]
    out = tmp_path / "m.csv"
    result = prepare("--from", "opencompass", *paths, *flags, "--n-trials", 3, "--output", out)
    assert_rejected(result, *fragments)
    assert not out.exists()


def test_not_json(tmp_path):
    folder = tmp_path / "results" / "m"
    folder.mkdir(parents=True)
    (folder / "d.json").write_text('{"details": [')
    result = prepare("--from", "opencompass", folder, "--n-trials", 3, "--output", tmp_path / "m.csv")
    assert_rejected(result, "d.json: not valid JSON")


# ---------------------------------------------------------------- fuzz

SCALARS = st.none() | st.booleans() | st.integers(-2, 9) | st.floats(allow_nan=True) | st.text(max_size=5)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(["correct", "pred", "answer", "example_abbr", "x"]), inner,
                                        max_size=3), max_leaves=8)
FIELDS = ["example_abbr", "correct", "pred", "answer", None]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=st.integers(0, 3), field=st.sampled_from(FIELDS), value=VALUES, delete=st.booleans(),
       replace_all=st.booleans())
def test_fuzz_damaged_results(tmp_path_factory, entry, field, value, delete, replace_all):
    """A field of a real results file replaced or deleted (or ``details`` replaced whole): a clean error or a
    result; never a traceback, never a changed file."""
    data = load(STRONG)
    if replace_all:
        data["details"] = value
    elif field is None:
        data["details"][entry] = value
    elif delete:
        del data["details"][entry][field]
    else:
        data["details"][entry][field] = value
    folder = tmp_path_factory.mktemp("fuzz") / "sim-strong"
    folder.mkdir()
    path = folder / "sim-arith.json"
    path.write_text(json.dumps(data))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        log = read_opencompass_log(folder)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert log.samples
        try:  # the rest of the path: counting the trials
            logs_to_matrix([log], None, 3)
        except InputError as exc:
            assert str(exc) and "\n" not in str(exc)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
