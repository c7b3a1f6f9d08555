"""Inspect AI logs through ``prepare_response_matrix.py --from inspect``, on real Inspect logs.

The fixtures under tests/fixtures/harness_logs/inspect (inspect-ai 0.3.285, ``.eval``), inspect-0.3.40
(``.json``, schema version 2) and inspect-0.3.10 (``.json``, schema version 1) were written by Inspect
itself against the simulated OpenAI-compatible server (``make_fixtures_sim.sh``); the expected matrices
below are hand counts of their scores (listed in tests/fixtures/harness_logs/README.md). Edited copies are written with
Inspect's own ``write_eval_log``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.core.harness import read_inspect_log
from conftest import ROOT, assert_rejected, run_in_process, run_script

pytest.importorskip("inspect_ai")
from inspect_ai.log import read_eval_log, write_eval_log

FIX = ROOT / "tests" / "fixtures" / "harness_logs"
NEW, OLD, OLDEST = FIX / "inspect", FIX / "inspect-0.3.40", FIX / "inspect-0.3.10"
ITEMS = ["add-10-7", "add-2-3", "mul-3-4", "sub-9-4"]  # the order of the logs (Inspect sorts samples by id)


def log_file(folder: Path) -> Path:
    (path,) = [p for p in folder.iterdir() if p.suffix in (".eval", ".json")]
    return path


def prepare(*args, process=False):
    """``prepare_response_matrix.py ARGS``: through its entry point in this process (Inspect's import, about 2 s of
    CPU, paid once per test file), or in a real process (``process=True``, for a representative few)."""
    if process:
        return run_script("prepare_response_matrix.py", *args)
    return run_in_process("prepare", *args, prog="prepare_response_matrix.py")


def matrix(path: Path) -> tuple[list, dict]:
    lines = path.read_text().splitlines()
    return lines[0].split(",")[1:], {line.split(",")[0]: [int(x) for x in line.split(",")[1:]] for line in lines[1:]}


def convert(tmp_path, *args) -> tuple[list, dict]:
    out = tmp_path / "m.csv"
    result = prepare("--from", "inspect", *args, "--output", out)
    assert result.returncode == 0, result.stderr
    return matrix(out)


def test_two_models_epochs_become_trials(tmp_path):
    out, rows = tmp_path / "m.csv", tmp_path / "rows.csv"
    result = prepare("--from", "inspect", NEW / "sim-strong", NEW / "sim-weak", "--n-trials", 2, "--output", out,
                     "--responses-out", rows, process=True)
    assert result.returncode == 0, result.stderr
    items, counts = matrix(out)
    assert items == ITEMS
    assert counts == {"openai/sim-strong": [2, 2, 0, 1], "openai/sim-weak": [1, 1, 0, 0]}
    long = rows.read_text().splitlines()
    assert long[0] == "model,item_id,trial,correct" and len(long) == 1 + 2 * 4 * 2
    assert "openai/sim-strong,sub-9-4,0,1" in long and "openai/sim-strong,sub-9-4,1,0" in long  # epoch 1, epoch 2
    record = json.loads((tmp_path / "m.csv.json").read_text())
    assert record["settings"]["from"] == "inspect" and record["package_versions"]["inspect_ai"]
    for entry, model in zip(record["inputs"], ("openai/sim-strong", "openai/sim-weak")):
        assert entry["model"] == model and entry["task"] == "sim_arith"
        assert entry["sha256"] == hashlib.sha256(Path(entry["path"]).read_bytes()).hexdigest()


def test_older_json_logs_read():
    # inspect-ai 0.3.40 wrote these .json logs (schema version 2); the pinned reader still reads them
    assert json.loads(log_file(OLD / "sim-strong").read_text())["version"] == 2
    log = read_inspect_log(OLD / "sim-weak")
    assert (log.model, log.task, log.metric) == ("openai/sim-weak", "sim_arith", "pattern")


def test_older_json_logs_matrix(tmp_path):
    items, counts = convert(tmp_path, OLD / "sim-strong", OLD / "sim-weak", "--n-trials", 2)
    assert items == ITEMS
    assert counts == {"openai/sim-strong": [2, 2, 2, 0], "openai/sim-weak": [2, 2, 0, 0]}


def test_schema_version_1_logs(tmp_path):
    # inspect-ai 0.3.10 wrote one `score` per sample (schema version 1, no `scores`); its samples are in the
    # dataset's order, which the matrix keeps
    doc = json.loads(log_file(OLDEST / "sim-strong").read_text())
    assert doc["version"] == 1 and "score" in doc["samples"][0] and "scores" not in doc["samples"][0]
    items, counts = convert(tmp_path, OLDEST / "sim-strong", OLDEST / "sim-weak", "--n-trials", 2)
    assert items == ["add-2-3", "add-10-7", "mul-3-4", "sub-9-4"]
    assert counts == {"openai/sim-strong": [1, 2, 1, 2], "openai/sim-weak": [2, 1, 1, 1]}


def test_log_file_itself_and_model_rename(tmp_path):
    _, counts = convert(tmp_path, log_file(NEW / "sim-weak"), "--model", "weak", "--n-trials", 2)
    assert counts == {"weak": [1, 1, 0, 0]}


def test_several_scorers_need_scorer(tmp_path):
    assert convert(tmp_path, NEW / "scorers", "--scorer", "pattern", "--n-trials", 2)[1] == {
        "openai/sim-strong": [2, 2, 0, 0]}
    # numeric scores 1.0 / 0.0 pass as they are
    assert convert(tmp_path, NEW / "scorers", "--scorer", "numeric", "--n-trials", 2)[1] == {
        "openai/sim-strong": [2, 2, 0, 0]}


def test_partial_scores_follow_the_chosen_policy(tmp_path):
    # near: mul-3-4 is P then I, sub-9-4 is P, P
    assert convert(tmp_path, NEW / "scorers", "--scorer", "near", "--partial", "as-wrong", "--n-trials", 2)[1] == {
        "openai/sim-strong": [2, 2, 0, 0]}
    assert convert(tmp_path, NEW / "scorers", "--scorer", "near", "--partial", "as-right", "--n-trials", 2)[1] == {
        "openai/sim-strong": [2, 2, 1, 2]}


def test_grade_the_completions(tmp_path):
    # the completions box the answer, so grading them gives the pattern scorer's counts
    assert convert(tmp_path, NEW / "sim-strong", "--grade", "math", "--n-trials", 2)[1] == {
        "openai/sim-strong": [2, 2, 0, 1]}


def edited_copy(tmp_path, folder: Path, change) -> Path:
    """A copy of ``folder``'s log rewritten by Inspect after ``change(EvalLog)``."""
    target = tmp_path / "edited" / folder.name
    target.mkdir(parents=True)
    log = read_eval_log(str(log_file(folder)))
    change(log)
    path = target / log_file(folder).name
    write_eval_log(log, str(path))
    return path


def _cancel(log):
    log.status = "cancelled"


def _drop_item(log):
    log.samples = [s for s in log.samples if s.id != "sub-9-4"]


CASES = {
    "several scorers": (lambda t: [NEW / "scorers"], ("has 3 scorers (pattern, numeric, near)", "--scorer NAME")),
    "unknown scorer": (lambda t: [NEW / "scorers", "--scorer", "f1"], ("no scorer 'f1'", "pattern, numeric, near")),
    "partial credit without --partial": (
        lambda t: [NEW / "scorers", "--scorer", "near"],
        ("sample id 'mul-3-4' epoch 1 scorer 'near'", "score 'P' (partial credit)", "--partial as-wrong")),
    "error status": (lambda t: [NEW / "error"], ("the evaluation's status is 'error'", "sim-missing")),
    "epochs differ from --n-trials": (lambda t: [NEW / "sim-strong", "--n-trials", 3],
                                      ("sample id add-10-7", "has 2 trials, expected --n-trials 3")),
    "--metric on an inspect log": (lambda t: [NEW / "sim-strong", "--metric", "pattern"],
                                   ("--metric applies to", "logs only")),
    "folder with several logs": (lambda t: [NEW], ("holds 4 Inspect logs", "give one log per model")),
    "logs of two schema versions are one matrix only if the models differ": (
        lambda t: [OLDEST / "sim-strong", OLD / "sim-strong"], ("model 'openai/sim-strong' already comes from",)),
    "not a log": (lambda t: [FIX / "tasks" / "sim_arith.jsonl"], ("sim_arith.jsonl: not a readable Inspect log",)),
    "same model twice": (lambda t: [NEW / "sim-strong", NEW / "scorers", "--scorer", "pattern"],
                         ("model 'openai/sim-strong' already comes from",)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected(case, tmp_path):
    make_args, fragments = CASES[case]
    args = make_args(tmp_path)
    if "--n-trials" not in args:
        args = [*args, "--n-trials", 2]
    out = tmp_path / "m.csv"
    result = prepare("--from", "inspect", *args, "--output", out, "--responses-out", tmp_path / "rows.csv",
                     process=case == "not a log")   # one in a real process, the rest through the same entry point
    assert_rejected(result, *fragments)
    assert not out.exists() and not (tmp_path / "rows.csv").exists()


EDITED = {
    "cancelled log": (_cancel, ("the evaluation's status is 'cancelled'",)),
    "item missing from one model's log": (
        _drop_item, ("(model openai/sim-weak): no response for sample id sub-9-4", "model openai/sim-strong")),
}


@pytest.mark.parametrize("case", sorted(EDITED))
def test_rejected_edited_log(case, tmp_path):
    change, fragments = EDITED[case]
    edited = edited_copy(tmp_path, NEW / "sim-weak", change)
    out = tmp_path / "m.csv"
    result = prepare("--from", "inspect", NEW / "sim-strong", edited, "--n-trials", 2, "--output", out)
    line = assert_rejected(result, *fragments)
    assert str(edited) in line
    assert not out.exists()


def test_partial_option_on_another_format(tmp_path):
    result = prepare("--from", "lm-eval", FIX / "lm-eval" / "smollm2-greedy", "--metric", "exact_match",
                     "--partial", "as-wrong", "--n-trials", 1, "--output", tmp_path / "m.csv")
    assert_rejected(result, "--partial applies to inspect logs only")


def test_without_inspect_installed_one_line_names_the_install(tmp_path):
    # a package named inspect_ai that fails to import stands in for a missing installation
    shadow = tmp_path / "shadow" / "inspect_ai"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named inspect_ai')\n")
    (shadow / "log.py").write_text("raise ImportError('No module named inspect_ai.log')\n")
    code = (f"import sys; sys.path.insert(0, {str(tmp_path / 'shadow')!r}); sys.argv[0] = 'prepare_response_matrix.py';"
            f"import runpy; runpy.run_path({str(ROOT / 'scripts' / 'prepare_response_matrix.py')!r}, "
            "run_name='__main__')")
    import subprocess

    result = subprocess.run([sys.executable, "-c", code, "--from", "inspect", str(NEW / "sim-strong"), "--n-trials",
                             "2", "--output", str(tmp_path / "m.csv")], capture_output=True, text=True, cwd=ROOT)
    assert_rejected(result, "needs the inspect-ai package", "benchmeasure[harness]")
    assert not (tmp_path / "m.csv").exists()


# ---------------------------------------------------------------- fuzz: damaged logs

SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.text(max_size=4)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)


def _paths(value, prefix=()):
    """Every (path, value) inside a JSON document."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


OLD_DOC = json.loads(log_file(OLD / "sim-strong").read_text())
OLD_PATHS = [p for p in _paths(OLD_DOC) if p and p[0] in ("version", "status", "eval", "results", "samples")
             and len(p) <= 5]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(OLD_PATHS), value=JSON_VALUES, delete=st.booleans())
def test_fuzz_damaged_json_log(tmp_path_factory, where, value, delete):
    """A field of a real log replaced or deleted: a clean error or a result, never a traceback or a changed file."""
    doc = json.loads(json.dumps(OLD_DOC))
    parent = doc
    for key in where[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    path = tmp_path_factory.mktemp("fuzz") / "2026-01-01T00-00-00+00-00_sim-arith_abc.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        log = read_inspect_log(path)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        for sample in log.samples:
            assert all(v in (0, 1) for v in sample.values[log.metric])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300), cut=st.integers(0, 4000))
def test_fuzz_random_and_truncated_eval_files(tmp_path_factory, data, cut):
    """Random bytes, and a real .eval zip cut short: one clean error, the file left as it was."""
    folder = tmp_path_factory.mktemp("fuzz")
    for name, content in (("a.eval", data), ("b.eval", log_file(NEW / "sim-strong").read_bytes()[:cut])):
        path = folder / name
        path.write_bytes(content)
        with pytest.raises(InputError):
            read_inspect_log(path)
        assert path.read_bytes() == content


def test_fixture_copy_is_read_unchanged(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(NEW / "sim-strong", copy)
    before = hashlib.sha256(log_file(copy).read_bytes()).hexdigest()
    convert(tmp_path, copy, "--n-trials", 2)
    assert hashlib.sha256(log_file(copy).read_bytes()).hexdigest() == before
