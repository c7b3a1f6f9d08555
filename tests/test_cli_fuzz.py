"""Hypothesis fuzz of the newest commands through the real command line (issue 32, item 5).

``fit-suite``, ``chain``, ``scope``, ``browse index`` / ``query``, ``explore --use-cases`` and ``fit
--allow-missing`` with its trials file get valid small inputs that hypothesis then damages: every character some
reader takes for a line break (``\\n \\r \\x0b \\x0c \\x1c \\x1d \\x1e \\x85 \\u2028 \\u2029``) inside names and texts,
byte-order marks, NULs, and the file's container (gzip under a plain name, plain text under ``.gz``, a cut
archive). The contract: success, or exactly one ``error:`` line on stderr with exit status 2; never a traceback,
no output of a refused run, the input unchanged. The commands run in this process (``benchmeasure.cli.main``,
stderr captured), so an exception that escapes the command's error handling fails the test with its traceback.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LINE_BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
ODD = [*LINE_BREAKS, "\x00", "\ufeff", '"', ",", " ", "é"]
FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])


@st.composite
def damaged(draw, text: str) -> bytes:
    """``text`` with odd characters put in, perhaps a byte-order mark, encoded; then perhaps a wrong container."""
    chars = list(text)
    for _ in range(draw(st.integers(0, 3))):
        chars.insert(draw(st.integers(0, len(chars))), draw(st.sampled_from(ODD)))
    data = "".join(chars).encode("utf-8")
    bom = draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf", b"\xff\xfe"]))
    data = bom + data
    container = draw(st.sampled_from(["plain", "plain", "gzip", "gzip-misnamed", "plain-as-gz", "cut-gzip"]))
    return container, data


def _store(folder, name: str, container: str, data: bytes):
    """Write ``data`` as ``name`` in the container drawn; return the path the command is given."""
    if container == "plain":
        path = folder / name
        path.write_bytes(data)
    elif container == "gzip":
        path = folder / f"{name}.gz"
        path.write_bytes(gzip.compress(data, mtime=0))
    elif container == "gzip-misnamed":
        path = folder / name
        path.write_bytes(gzip.compress(data, mtime=0))
    elif container == "plain-as-gz":
        path = folder / f"{name}.gz"
        path.write_bytes(data)
    else:  # a cut archive
        path = folder / f"{name}.gz"
        whole = gzip.compress(data, mtime=0)
        path.write_bytes(whole[: max(10, len(whole) // 2)])
    return path


def _digest(paths):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def run(argv, inputs, outputs=()):
    """Run ``benchmeasure ARGV`` in this process; check the contract; return (status, stdout, stderr)."""
    from benchmeasure.cli import main

    before = _digest(inputs)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in argv])
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
    stderr = err.getvalue()
    assert "Traceback" not in stderr, stderr
    if code != 0:
        lines = stderr.strip().splitlines()
        assert code == 2, (code, stderr)
        assert len(lines) == 1 and lines[0].startswith("error: "), stderr
        for path in outputs:
            assert not path.exists(), f"{path} written by a refused run: {stderr}"
    assert _digest(inputs) == before, "an input was changed"
    return code, out.getvalue(), stderr


LONG = ("model,item_id,correct,benchmark\n"
        + "".join(f"m{j},q{i},{(i * 7 + j * 3) % 5 > 1:d},{'Alpha' if i < 12 else 'Beta'}\n"
                  for j in range(8) for i in range(24)))


@FEW
@given(damaged(LONG))
def test_fit_suite_fuzz(tmp_path_factory, drawn):
    folder = tmp_path_factory.mktemp("suite")
    path = _store(folder, "r.csv", *drawn)
    run(["fit-suite", path, "--output-dir", folder / "out"], [path], [folder / "out"])


@FEW
@given(damaged(LONG))
def test_chain_fuzz(tmp_path_factory, drawn):
    folder = tmp_path_factory.mktemp("chain")
    path = _store(folder, "r.csv", *drawn)
    run(["chain", path, "--anchors", "3", "--splits", "1", "--quiet", "--output-dir", folder / "out"], [path],
        [folder / "out"])


MATRIX = "model,q1,q2,q3,q4,q5\na,1,,0,1,2\nb,1,1,0,,1\nc,0,1,1,1,2\nd,2,0,1,0,\n"
TRIALS = "model,q1,q2,q3,q4,q5\na,2,,2,1,2\nb,2,2,1,,2\nc,2,2,2,2,2\nd,2,2,2,2,\n"


@FEW
@given(damaged(MATRIX), damaged(TRIALS))
def test_fit_allow_missing_with_a_trials_file_fuzz(tmp_path_factory, matrix, trials):
    folder = tmp_path_factory.mktemp("holes")
    path = _store(folder, "m.csv", *matrix)
    trials_name = path.name.replace(".csv", ".trials.csv").removesuffix(".gz")
    companion = _store(folder, trials_name, *trials)
    run(["fit", path, "--n-trials", "2", "--allow-missing", "--method", "map", "--output-dir", folder / "fit"],
        [path, companion], [folder / "fit"])


SPACE = "terms: {type: int, low: 2, high: 4}\ndigits: {type: int, low: 1, high: 3}\nops: {type: categorical, " \
        "choices: [add, mul]}\ndistractors: {type: int, low: 0, high: 2}\n"


@FEW
@given(damaged(SPACE))
def test_scope_space_fuzz(tmp_path_factory, drawn):
    """No server answers (port 9): a space that reads well ends at the endpoint check, one error line too."""
    folder = tmp_path_factory.mktemp("scope")
    path = _store(folder, "space.yaml", *drawn)
    code, _, _ = run(["scope", "--space", path, "--generator", "benchmeasure.scope.arithmetic:arithmetic",
                      "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--budget", "5", "--output-dir",
                      folder / "out", "--timeout", "2", "--retries", "0"], [path], [folder / "out"])
    assert code == 2


def _items(texts):
    return "".join(json.dumps({"id": f"q{k}", "text": t}, ensure_ascii=False) + "\n" for k, t in enumerate(texts))


ITEMS = _items([f"question {k} about a contract and the law" for k in range(8)])
TEXTS = st.lists(st.sampled_from([*ODD, "a", "law", " ", "b"]), min_size=1, max_size=10).map("".join)


@FEW
@given(damaged(ITEMS), TEXTS)
def test_browse_index_and_query_fuzz(tmp_path_factory, drawn, query):
    folder = tmp_path_factory.mktemp("browse")
    path = _store(folder, "items.jsonl", *drawn)
    index = folder / "index"
    code, _, _ = run(["browse", "index", path, "--benchmark", "law", "--id-field", "id", "--text-field", "text",
                      "--lexical-only", "--output-dir", index, "--quiet"], [path], [index])
    if code == 0:
        stored = _digest(sorted(p for p in index.rglob("*") if p.is_file()))
        run(["browse", "query", index, query, "--k", "3", "--json"], list(stored))
        run(["browse", "report", index, query, "--k", "3", "--output", folder / "uc.json"], list(stored),
            [folder / "uc.json"])


@pytest.fixture(scope="module")
def use_case(tmp_path_factory):
    """A browse report and a difficulty file, made once."""
    folder = tmp_path_factory.mktemp("use_case")
    items = folder / "items.jsonl"
    items.write_text(ITEMS, encoding="utf-8")
    difficulty = folder / "d.csv"
    difficulty.write_text("item,b_mean,b_sd\n" + "".join(f"q{i},{i - 3.5},0.3\n" for i in range(8)), encoding="utf-8")
    index = folder / "index"
    assert run(["browse", "index", items, "--benchmark", "law", "--id-field", "id", "--text-field", "text",
                "--difficulty", difficulty, "--lexical-only", "--output-dir", index, "--quiet"], [items])[0] == 0
    report = folder / "uc.json"
    assert run(["browse", "report", index, "contract law", "--k", "4", "--output", report], [])[0] == 0
    return {"report": report.read_text(encoding="utf-8"), "difficulty": difficulty}


@FEW
@given(data=st.data())
def test_explore_use_cases_fuzz(tmp_path_factory, use_case, data):
    folder = tmp_path_factory.mktemp("explore")
    report = json.loads(use_case["report"])
    # line breaks inside the report's strings (the query, item ids), then damage of the bytes as for every input
    odd = data.draw(TEXTS)
    text = json.dumps(report, ensure_ascii=False).replace("contract", f"con{odd}tract", 1)
    path = _store(folder, "uc.json", *data.draw(damaged(text)))
    page = folder / "page.html"
    run(["explore", use_case["difficulty"], "--output", page, "--use-cases", path, "--quiet"],
        [path, use_case["difficulty"]], [page])


# -- what the fuzz found --------------------------------------------------------------------------------------------

def test_a_space_file_is_read_by_the_one_input_reader(tmp_path):
    """read_space read the file itself: a space.yaml.gz was "not UTF-8 text", and a control character YAML does
    not allow was "not valid YAML (syntax error)" with no line."""
    packed = tmp_path / "space.yaml.gz"
    packed.write_bytes(gzip.compress(SPACE.encode(), mtime=0))
    args = ["--generator", "benchmeasure.scope.arithmetic:arithmetic", "--endpoint", "http://127.0.0.1:9/v1",
            "--model", "m", "--budget", "5", "--timeout", "2", "--retries", "0", "--output-dir", tmp_path / "out"]
    _, _, stderr = run(["scope", "--space", packed, *args], [packed], [tmp_path / "out"])
    assert "127.0.0.1:9" in stderr  # read, and refused only at the endpoint no server answers
    bad = tmp_path / "space.yaml"
    bad.write_text(SPACE.replace("\ndigits", "\x0b\ndigits"), encoding="utf-8")
    _, _, stderr = run(["scope", "--space", bad, *args], [bad], [tmp_path / "out"])
    assert "at line 1 (character U+000B is not allowed in YAML" in stderr


def test_a_byte_order_mark_starts_a_json_lines_file_as_it_starts_a_csv(tmp_path):
    """The CSV reader dropped a UTF-8 BOM; the JSON Lines and JSON readers refused line 1 as "not valid JSON"."""
    items = tmp_path / "items.jsonl"
    items.write_bytes(b"\xef\xbb\xbf" + ITEMS.encode())
    code, _, stderr = run(["browse", "index", items, "--benchmark", "law", "--id-field", "id", "--text-field", "text",
                           "--lexical-only", "--output-dir", tmp_path / "index", "--quiet"], [items])
    assert code == 0, stderr


# -- names holding line breaks, written as well-formed CSV: the command succeeds and its outputs read back --------

AFFIX = st.lists(st.sampled_from([*LINE_BREAKS, "\x00", "a", "é", " ", '"', ","]), max_size=4).map("".join)


def names(stem: str, size: int):
    """``size`` names ``<affix><stem><k><affix>``: distinct however their ends are stripped."""
    return st.lists(st.tuples(AFFIX, AFFIX), min_size=size, max_size=size).map(
        lambda affixes: [f"{a}{stem}{k}{b}" for k, (a, b) in enumerate(affixes)])


def _csv(rows) -> str:
    import csv

    handle = io.StringIO()
    csv.writer(handle, lineterminator="\n").writerows(rows)
    return handle.getvalue()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(models=names("m", 6), items=names("q", 8), benchmarks=names("B", 2))
def test_names_with_line_breaks_round_trip_through_fit_suite(tmp_path_factory, models, items, benchmarks):
    from benchmeasure.core.difficulty_file import read_item_difficulties

    folder = tmp_path_factory.mktemp("names")
    rows = [["model", "item_id", "correct", "benchmark"]]
    rows += [[m, i, (j * 3 + k * 5) % 4 > 1, benchmarks[k % 2]] for j, m in enumerate(models)
             for k, i in enumerate(items)]
    path = folder / "r.csv"
    path.write_text(_csv([[int(v) if isinstance(v, bool) else v for v in row] for row in rows]), encoding="utf-8")
    out = folder / "out"
    code, _, stderr = run(["fit-suite", path, "--output-dir", out], [path], [out])
    # names are read stripped (str.strip: Unicode line breaks too), by the suite reader as by every other
    stripped = [sorted({n.strip() for n in names}) for names in (models, items, benchmarks)]
    assert code == 0, stderr  # quoted as CSV quotes them, every name is read as one field
    written = sorted(p for p in out.glob("*/difficulty.csv"))
    assert len(written) == 2
    found = sorted(i for p in written for i in read_item_difficulties(p)[0])
    assert found == stripped[1]  # what fit-suite wrote, its own readers read back
    for p in written:
        assert run(["diagnose", p], [p])[0] == 0
    import csv

    with open(out / "ability.csv", encoding="utf-8", newline="") as handle:
        assert sorted(r["model"] for r in csv.DictReader(handle)) == stripped[0]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=names("q", 6), texts=st.lists(st.tuples(AFFIX, AFFIX), min_size=6, max_size=6))
def test_ids_and_texts_with_line_breaks_round_trip_through_browse(tmp_path_factory, ids, texts):
    folder = tmp_path_factory.mktemp("browse_names")
    path = folder / "items.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": f"{a} law{k} contract {b}"}, ensure_ascii=False) + "\n"
                            for k, (i, (a, b)) in enumerate(zip(ids, texts))), encoding="utf-8")
    difficulty = folder / "d.csv"  # the same IDs as a table writes them (a table's IDs are read stripped)
    difficulty.write_text(_csv([["item", "b_mean"], *([i, k / 2] for k, i in enumerate(ids))]), encoding="utf-8")
    index = folder / "index"
    code, _, stderr = run(["browse", "index", path, "--benchmark", "law", "--id-field", "id", "--text-field", "text",
                           "--difficulty", difficulty, "--lexical-only", "--output-dir", index, "--quiet"],
                          [path, difficulty], [index])
    assert code == 0, stderr
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["benchmarks"]["law"]["with_difficulty"] == len(ids)  # every item met its difficulty row
    code, stdout, stderr = run(["browse", "query", index, "contract", "--k", "10", "--json", "--mode", "lexical"], [])
    assert code == 0, stderr
    from benchmeasure.browse.index import read_stored_items

    stored = [r["item_id"] for r in read_stored_items(index, "law")]
    assert sorted(r["item_id"] for r in json.loads(stdout)) == sorted(stored)
    assert sorted(stored) == sorted(i.strip() for i in ids)  # read as every ID is, stripped


def test_a_trials_file_under_another_compression_than_its_matrix_is_not_ignored(tmp_path):
    """m.trials.csv.gz beside m.csv was not looked for: the counts were read as out of --n-trials without a word."""
    matrix = tmp_path / "m.csv"
    matrix.write_text(MATRIX, encoding="utf-8")
    companion = tmp_path / "m.trials.csv.gz"
    companion.write_bytes(gzip.compress(TRIALS.encode(), mtime=0))
    for argv in (["fit", matrix, "--n-trials", "2", "--allow-missing", "--method", "map", "--output-dir",
                  tmp_path / "fit"], ["check", matrix, "--n-trials", "2", "--allow-missing"],
                 ["fit-suite", "--matrix", matrix, "--n-trials", "2", "--output-dir", tmp_path / "suite"]):
        code, _, stderr = run(argv, [matrix, companion], [tmp_path / "fit", tmp_path / "suite"])
        assert code == 2 and "rename it to" in stderr and "m.trials.csv" in stderr, stderr
    packed = tmp_path / "m.csv.gz"  # its own matrix beside it: the .gz trials file is that one's, m.csv has none
    packed.write_bytes(gzip.compress(MATRIX.encode(), mtime=0))
    assert run(["check", matrix, "--n-trials", "2", "--allow-missing"], [matrix, companion])[0] == 0
    assert run(["check", packed, "--n-trials", "2", "--allow-missing"], [packed, companion])[0] == 0


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(models=names("m", 4), items=names("q", 5))
def test_names_with_line_breaks_round_trip_through_fit_with_holes(tmp_path_factory, models, items):
    """A matrix with holes and its trials file, names quoted as CSV quotes them: fit writes what it reads back."""
    import csv

    from benchmeasure.core.difficulty_file import read_item_difficulties

    folder = tmp_path_factory.mktemp("fit_names")
    counts = [[m, *("" if (j + k) % 4 == 3 else (j * 2 + k) % 3 for k in range(5))] for j, m in enumerate(models)]
    trials = [[m, *("" if (j + k) % 4 == 3 else 2 for k in range(5))] for j, m in enumerate(models)]
    matrix, companion = folder / "m.csv", folder / "m.trials.csv"
    matrix.write_text(_csv([["model", *items], *counts]), encoding="utf-8")
    companion.write_text(_csv([["model", *items], *trials]), encoding="utf-8")
    out = folder / "fit"
    code, _, stderr = run(["fit", matrix, "--n-trials", "2", "--allow-missing", "--method", "map", "--output-dir", out],
                          [matrix, companion], [out])
    assert code == 0, stderr
    assert sorted(read_item_difficulties(out / "difficulty.csv")[0]) == sorted(i.strip() for i in items)
    with open(out / "ability.csv", encoding="utf-8", newline="") as handle:
        assert sorted(r["model"] for r in csv.DictReader(handle)) == sorted(m.strip() for m in models)
    assert run(["diagnose", out / "difficulty.csv"], [out / "difficulty.csv"])[0] == 0
