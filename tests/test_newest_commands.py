"""Issue 32: the newest commands (fit-suite, chain, browse, scope, explore --use-cases, posterior-metrics --calibrate,
fit --allow-missing) hold the project's contract on careless input, each defect class through the real command
line: one ``error:`` line, exit 2, no traceback, nothing partial, no input changed, no number without an estimate.

Everything here is cheap: lexical-only browse indexes (no encoder), EM suite fits, no NUTS.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.base.extras import extra_for
from conftest import ROOT, assert_rejected, run_script

# every character some reader takes for a line break: str.splitlines() breaks at all of them, JSON allows the
# last three raw inside a string
LINE_BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _long(path, models=8, items=30, benchmark=lambda i: "A", seed=0, answered=lambda j, i: True):
    """Long responses ``model,item_id,correct,benchmark`` drawn from a 1PL; returns the path."""
    rng = random.Random(seed)
    rows = ["model,item_id,correct,benchmark"]
    for j in range(models):
        theta = rng.gauss(0, 1)
        for i in range(items):
            if answered(j, i):
                p = 1 / (1 + math.exp(-(theta - (i % 7 - 3) / 2)))
                rows.append(f"m{j},q{i},{int(rng.random() < p)},{benchmark(i)}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- outputs that nest --------------------------------------------------------------------------------------------

def test_a_benchmark_named_like_an_output_file_is_refused_before_anything_is_written(tmp_path):
    """fit-suite wrote DIR/metrics.csv/difficulty.csv, then failed on DIR/metrics.csv, leaving folders behind."""
    data = _long(tmp_path / "r.csv", benchmark=lambda i: "metrics.csv" if i < 15 else "other")
    out = tmp_path / "out"
    assert_rejected(run_script("fit_suite.py", data, "--output-dir", out), "metrics.csv", "output")
    assert not out.exists()
    out.mkdir()  # an existing output folder is left exactly as it was
    (out / "keep.txt").write_text("mine")
    assert_rejected(run_script("fit_suite.py", data, "--output-dir", out), "metrics.csv")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_the_suite_reader_applies_the_strict_csv_rules(tmp_path):
    """pandas renamed a second 'correct' column (the first one was used silently) and read a short row as an
    absent answer; the suite reader now goes through the one strict CSV reader."""
    from benchmeasure.suite.reader import read_suite

    twice = tmp_path / "twice.csv"
    twice.write_text("model,item_id,correct,correct\nm1,q1,1,0\n", encoding="utf-8")
    assert_rejected(run_script("fit_suite.py", twice, "--output-dir", tmp_path / "out"), "twice.csv",
                    "'correct' appears twice in the header")
    short = tmp_path / "short.csv"
    short.write_text("model,item_id,correct\nm1,q1,1\nm2,q1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"short\.csv: line 3: 2 fields, the header has 3"):
        read_suite([short])
    assert not (tmp_path / "out").exists()


def test_plan_outputs_sees_the_whole_tree(tmp_path):
    from benchmeasure.base.files import plan_outputs

    with pytest.raises(InputError, match="is an output file and also the folder of the output"):
        plan_outputs(files=[tmp_path / "a", tmp_path / "a" / "b.csv"])
    with pytest.raises(InputError, match="also the output folder"):
        plan_outputs(files=[tmp_path / "x.csv"], folders=[(tmp_path / "x.csv", ["d.csv"])])
    plan_outputs(files=[tmp_path / "a.csv", tmp_path / "a" / "b.csv"])  # siblings are fine


# -- browse: the index's own files, read back after a hand edit or with Unicode line breaks ------------------------

@pytest.fixture(scope="module")
def lexical_index(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lexical")
    items = tmp / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"q{i}", "text": f"question {i} about a contract and the law"}) + "\n"
                             for i in range(10)), encoding="utf-8")
    difficulty = tmp / "d.csv"
    difficulty.write_text("item,b_mean,b_sd\n" + "".join(f"q{i},{i - 4.5},0.3\n" for i in range(10)), encoding="utf-8")
    index = tmp / "index"
    done = run_script("browse.py", "index", items, "--benchmark", "law", "--id-field", "id", "--text-field", "text",
                      "--difficulty", difficulty, "--lexical-only", "--output-dir", index, "--quiet")
    assert done.returncode == 0, done.stderr
    return {"tmp": tmp, "items": items, "index": index, "difficulty": difficulty}


EDITS = {
    "benchmarks missing": (lambda m: m.pop("benchmarks"), "field 'benchmarks' is missing"),
    "benchmarks a list": (lambda m: m.update(benchmarks=[]), "field 'benchmarks' must be an object"),
    "folder missing": (lambda m: m["benchmarks"]["law"].pop("folder"), "'benchmarks.law.folder'"),
    "folder outside": (lambda m: m["benchmarks"]["law"].update(folder="../../elsewhere"), "'benchmarks.law.folder'"),
    "items a string": (lambda m: m["benchmarks"]["law"].update(items="10"), "'benchmarks.law.items'"),
    "with_difficulty null": (lambda m: m["benchmarks"]["law"].update(with_difficulty=None),
                             "'benchmarks.law.with_difficulty'"),
    "dense missing": (lambda m: m.pop("dense"), "field 'dense' is missing"),
    "lexical null": (lambda m: m.update(lexical=None), "field 'lexical' is null"),
    "lexical folder a number": (lambda m: m["lexical"].update(folder=5), "'lexical.folder'"),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_hand_edited_manifest_is_one_error_line_for_every_subcommand(lexical_index, tmp_path, edit):
    import shutil

    index = tmp_path / "index"
    shutil.copytree(lexical_index["index"], index)
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    change, fragment = EDITS[edit]
    change(manifest)
    (index / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    before = _snapshot(index)
    calls = [["query", index, "contract"]]
    if edit in ("folder outside", "benchmarks a list"):  # every subcommand reads the manifest through one reader
        calls += [["report", index, "contract", "--k", "3"],
                  ["index", lexical_index["items"], "--benchmark", "law", "--replace", "--id-field", "id",
                   "--text-field", "text", "--lexical-only", "--output-dir", index, "--quiet"]]
    for args in calls:
        assert_rejected(run_script("browse.py", *args), "manifest.json", fragment)
    assert _snapshot(index) == before  # nothing written, nothing removed (a folder outside the index least of all)


def test_texts_with_every_unicode_line_break_round_trip_through_the_index(tmp_path):
    """The index wrote U+2028 raw into items.jsonl and read it back with splitlines(): JSONDecodeError."""
    texts = [f"question {k}: before{brk}after{brk}end" for k, brk in enumerate(LINE_BREAKS)]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"q{k}", "text": t}, ensure_ascii=False) + "\n"
                             for k, t in enumerate(texts)), encoding="utf-8")
    index = tmp_path / "index"
    for name in ("first", "second"):  # the second benchmark re-reads the first one's stored texts
        done = run_script("browse.py", "index", items, "--benchmark", name, "--id-field", "id", "--text-field",
                          "text", "--lexical-only", "--output-dir", index, "--quiet")
        assert done.returncode == 0, done.stderr
    found = run_script("browse.py", "query", index, "before after", "--k", "30", "--json")
    assert found.returncode == 0, found.stderr
    assert len(json.loads(found.stdout)) == 2 * len(texts)
    from benchmeasure.browse.index import read_stored_items

    assert [r["text"] for r in read_stored_items(index, "first")] == texts
    stored = next((index / "benchmarks").glob("first-*")) / "items.jsonl"
    assert len(stored.read_text(encoding="utf-8").splitlines()) == len(texts)  # even a splitlines reader agrees


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from([*LINE_BREAKS, "a", "b", " ", "é", "\t", '"', "\\"]), min_size=1,
                               max_size=12).map("".join).filter(str.strip), min_size=1, max_size=5))
def test_stored_items_fuzz_with_line_breaks(tmp_path_factory, texts):
    from benchmeasure.browse.index import add_benchmark, load_index, read_stored_items
    from benchmeasure.browse.items import Item

    folder = tmp_path_factory.mktemp("fuzz")
    items = [Item(f"i{k}", t) for k, t in enumerate(texts)]
    add_benchmark(folder, "b", items, sources=[], settings={}, difficulty=None, difficulty_source=None,
                  lexical_only=True)
    assert [(r["item_id"], r["text"]) for r in read_stored_items(folder, "b")] == [(i.item_id, i.text) for i in items]
    assert load_index(folder).item_ids == [i.item_id for i in items]


def test_browse_report_may_not_write_into_its_index(lexical_index):
    index = lexical_index["index"]
    before = _snapshot(index)
    assert_rejected(run_script("browse.py", "report", index, "contract", "--k", "3", "--output",
                               index / "manifest.json"), "inside the index folder")
    assert _snapshot(index) == before


def test_a_failed_browse_index_leaves_no_folder(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', encoding="utf-8")
    out = tmp_path / "new" / "index"
    assert_rejected(run_script("browse.py", "index", bad, "--benchmark", "b", "--id-field", "id", "--text-field",
                               "text", "--lexical-only", "--output-dir", out, "--quiet"), "repeats")
    assert not (tmp_path / "new").exists()


# -- explore --use-cases ------------------------------------------------------------------------------------------

def test_explore_use_cases_missing_or_with_a_nan_is_refused(lexical_index, tmp_path):
    report = tmp_path / "uc.json"
    done = run_script("browse.py", "report", lexical_index["index"], "contract law", "--k", "6", "--output", report)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "page.html"
    args = [lexical_index["difficulty"], "--output", page, "--use-cases"]
    assert_rejected(run_script("explore_benchmarks.py", *args, tmp_path / "nowhere.json"), "nowhere.json: no such file")
    text = report.read_text(encoding="utf-8")
    for bad, value in (("nan", "NaN"), ("inf", "Infinity"), ("overflow", "1e999")):
        edited = tmp_path / f"{bad}.json"
        edited.write_text(text.replace('"ddm": ', f'"ddm": {value}, "was": ', 1), encoding="utf-8")
        assert_rejected(run_script("explore_benchmarks.py", *args, edited), f"{bad}.json", "finite number")
    assert not page.exists()
    shown = run_script("explore_benchmarks.py", *args, report)
    assert shown.returncode == 0, shown.stderr
    assert "NaN" not in page.read_text(encoding="utf-8").split("explorer-data")[1]


# -- silent answers outside the range where they mean something --------------------------------------------------

def test_chain_refuses_more_anchors_than_items(tmp_path):
    """N = 50 on 30-item benchmarks made every prediction the observation itself: MAE 0, rho 1, coverage 1."""
    data = _long(tmp_path / "r.csv", models=12, items=60, benchmark=lambda i: "A" if i < 30 else "B")
    for anchors in ("5,50", "30"):
        assert_rejected(run_script("chain.py", data, "--anchors", anchors, "--splits", "1", "--quiet",
                                   "--output-dir", tmp_path / "out"), f"--anchors {anchors.split(',')[-1]}",
                        "'A' has 30 items")
    assert not (tmp_path / "out").exists()
    # a split whose calibration models answered only 20 items (m0 alone answered the other 10, and is held out)
    # leaves N = 25 out for that split, said so, instead of labelling 20 anchors N = 25
    sparse = _long(tmp_path / "sparse.csv", models=12, items=30, seed=5, answered=lambda j, i: i < 20 or j == 0)
    done = run_script("chain.py", sparse, "--anchors", "5,25", "--splits", "3", "--seed", "2", "--quiet",
                      "--output-dir", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "1 (split, step, benchmark, N) prediction set(s) left out" in done.stderr
    record = json.loads((tmp_path / "out" / "chain.json").read_text())
    assert record["left_out"] == [{"split": 0, "step": 1, "benchmark": "A", "n_anchors": 25, "answered_items": 20}]
    predictions = (tmp_path / "out" / "predictions.csv").read_text().splitlines()[1:]
    assert not [row for row in predictions if row.startswith("0,") and ",25," in row]
    # without --blend the blended method is not run (its five fold calibrations per split are opt-in)
    assert not [row for row in predictions if ",blended," in row] and "blend" not in record


def test_scope_refuses_an_error_threshold_above_one(tmp_path):
    assert_rejected(run_script("scope.py", "--space", "arithmetic_space", "--generator", "a:b", "--endpoint",
                               "http://127.0.0.1:9/v1", "--model", "m", "--budget", "5", "--threshold", "1.5",
                               "--output-dir", tmp_path / "s"), "--threshold 1.5", "[0, 1]")
    assert not (tmp_path / "s").exists()


def test_a_hand_edited_scope_settings_file_is_one_error(tmp_path):
    from benchmeasure.commands.scope import SETTINGS, check_resume

    for text in ("[]", "{", '"text"'):
        (tmp_path / SETTINGS).write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match="damaged"):
            check_resume(tmp_path, {"seed": 0})


def test_a_correlation_of_benchmarks_no_model_shares_is_not_written_as_zero(tmp_path):
    data = _long(tmp_path / "r.csv", models=16, items=40, benchmark=lambda i: "A" if i < 20 else "B",
                 answered=lambda j, i: (j < 8) == (i < 20))
    done = run_script("fit_suite.py", data, "--abilities", "correlated-eb", "--output-dir", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "correlation A ~ B not estimated: 0 models answered both" in done.stderr
    assert (tmp_path / "out" / "correlation.csv").read_text().splitlines() == [
        "benchmark,A,B", "A,1.0000,", "B,,1.0000"]
    record = json.loads((tmp_path / "out" / "suite.json").read_text())
    assert record["correlation_not_estimated"][0]["models_answering_both"] == 0
    # nor is an ability on a benchmark the model never answered, linked to its own by no estimated correlation
    abilities = (tmp_path / "out" / "ability.csv").read_text().splitlines()
    assert abilities[0].endswith("theta_A,theta_B,sd_A,sd_B")
    first, last = abilities[1].split(","), abilities[-1].split(",")
    assert first[5] == first[7] == "" and first[4] and last[4] == last[6] == "" and last[5]


def test_a_trials_file_beside_a_matrix_is_not_ignored_without_allow_missing(tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("model,q1,q2,q3\na,1,2,0\nb,2,0,1\nc,0,1,2\n", encoding="utf-8")
    (tmp_path / "m.trials.csv").write_text("model,q1,q2,q3\na,1,2,2\nb,2,2,2\nc,2,2,2\n", encoding="utf-8")
    assert_rejected(run_script("check_response_matrix.py", matrix, "--n-trials", "2"), "m.trials.csv",
                    "1 cell fewer than --n-trials 2", "--allow-missing")
    done = run_script("check_response_matrix.py", matrix, "--n-trials", "2", "--allow-missing")
    assert done.returncode == 0, done.stderr
    (tmp_path / "m.trials.csv").write_text("model,q1,q2,q3\na,2,2,2\nb,2,2,2\nc,2,2,2\n", encoding="utf-8")
    assert run_script("check_response_matrix.py", matrix, "--n-trials", "2").returncode == 0  # agrees: read


def test_calibrate_refuses_a_fit_with_holes(tmp_path):
    import numpy as np

    folder = tmp_path / "fit"
    folder.mkdir()
    rng = np.random.default_rng(0)
    np.savez(folder / "draws.npz", b=rng.normal(0, 1, 12) + rng.normal(0, 0.3, (200, 12)),
             items=np.array([f"q{i}" for i in range(12)]))
    (folder / "ability.csv").write_text("model,theta_mean\n" + "".join(f"m{j},{j - 2}\n" for j in range(5)))
    (folder / "diagnostics.json").write_text(json.dumps({"input": {"n_trials": 4}, "absent_cells": {
        "total": 3, "per_model": {"m1": 3}, "per_item": {"q1": 3}}}))
    assert_rejected(run_script("posterior_metrics.py", folder / "draws.npz", "--calibrate", "1"),
                    "--calibrate", "had holes", "3 absent cells")


def test_fit_allow_missing_with_map_is_accepted_as_docs_errors_says(tmp_path):
    matrix = tmp_path / "h.csv"
    matrix.write_text("model,q1,q2,q3,q4\na,1,,0,1\nb,1,1,0,\nc,0,1,1,1\nd,1,0,1,0\n", encoding="utf-8")
    done = run_script("fit_irt.py", matrix, "--n-trials", "1", "--allow-missing", "--method", "map", "--output-dir",
                      tmp_path / "fit")
    assert done.returncode == 0, done.stderr
    assert "`--method map` (the same masked likelihood" in (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")


# -- missing packages name the feature's extra ---------------------------------------------------------------------

def _bare(*argv):
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmeasure.cli import main; "
            f"main({[str(a) for a in argv]!r})")
    return subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("argv", "extra"), [
    (["scope", "--space", "x", "--generator", "a:b", "--endpoint", "http://x/v1", "--model", "m", "--budget", "5",
      "--output-dir", "o"], "benchmeasure[scope]"),
    (["browse", "query", "idx", "text"], "benchmeasure[browse]"),
])
def test_scope_and_browse_name_their_own_extra(argv, extra):
    assert_rejected(_bare(*argv), extra)


def test_every_optional_feature_names_its_extra():
    from benchmeasure.browse import dense, lexical

    for package, feature, extra in [("openai", "scope", "scope"), ("numpy", "browse", "browse"),
                                    ("yaml", None, "scope"), ("Stemmer", None, "browse"),
                                    ("reasoning_gym", None, "scope"), ("openai", "browse", "benchfill")]:
        assert extra_for(package, feature) == extra, (package, feature)
    assert "benchmeasure[browse]" in dense.MISSING and "requirements-dev" not in dense.MISSING
    source = (ROOT / "benchmeasure" / "browse" / "lexical.py").read_text(encoding="utf-8")
    assert "requirements-dev" not in source and lexical  # the lexical index's messages name the extra too


JSON_LEAF = st.none() | st.booleans() | st.integers(-3, 20) | st.floats(allow_nan=False, allow_infinity=False) | \
    st.text(max_size=6) | st.sampled_from(["benchmarks/law-0123456789abcdef", "lexical-0123456789abcdef", "../x"])
JSON_ANY = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=3) |
                        st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=5)


def _paths(obj, prefix=()):
    """Every key path of a JSON value (dict keys and list indices)."""
    yield prefix
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield from _paths(value, (*prefix, key))


def _mutate(obj, data):
    """``obj`` with one key path replaced by a random JSON value, or removed."""
    import copy

    obj = copy.deepcopy(obj)
    path = data.draw(st.sampled_from([p for p in _paths(obj) if p]))
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and data.draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(JSON_ANY)
    return obj


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_manifest_and_use_case_reader_fuzz(lexical_index, tmp_path_factory, data):
    """A randomly edited manifest or use-case report gives the reader a result or one InputError naming the file;
    the index is never changed (in particular no folder outside it is touched)."""
    import shutil

    from benchmeasure.browse.index import load_index, read_stored_items
    from benchmeasure.explorer.use_cases import read_use_cases

    folder = tmp_path_factory.mktemp("edited") / "index"
    shutil.copytree(lexical_index["index"], folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    (folder / "manifest.json").write_text(json.dumps(_mutate(manifest, data)), encoding="utf-8")
    before = _snapshot(folder)
    try:
        index = load_index(folder)
        for name in set(index.benchmarks):
            read_stored_items(folder, name)
    except InputError as exc:
        assert "\n" not in str(exc) and str(folder) in str(exc)
    assert _snapshot(folder) == before
    report = lexical_index.get("report")
    if report is None:
        report = lexical_index["report"] = lexical_index["tmp"] / "uc.json"
        done = run_script("browse.py", "report", lexical_index["index"], "contract law", "--k", "6", "--output",
                          report)
        assert done.returncode == 0, done.stderr
    edited = folder.parent / "uc.json"
    edited.write_text(json.dumps(_mutate(json.loads(report.read_text(encoding="utf-8")), data)), encoding="utf-8")
    try:
        view = read_use_cases(edited)
    except InputError as exc:
        assert "\n" not in str(exc) and str(edited) in str(exc)
    else:
        assert all(isinstance(v, str) for row in view["rows"] for v in row.values())
