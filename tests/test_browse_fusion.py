"""The third fusion round of browse (issue 21): the hybrid functions, the fused and rrf modes through the command
line on a real index (real encoder, real BM25), and the bench reading the three labelled query sets."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmeasure.browse import hybrid, lexical
from benchmeasure.browse.evaluation import read_queries
from conftest import ROOT, run_script

DATA = ROOT / "data" / "browse_eval"
TOPICS = {
    "cooking": ["How long should bread dough rise before baking it in the oven?",
                "Which oil has the highest smoke point for deep frying potatoes?",
                "How much salt goes into a brine for pickling cucumbers?",
                "Why does whisking egg whites with sugar make a stiff meringue?"],
    "astronomy": ["Why does the Moon show phases over a month?",
                  "What makes a star collapse into a black hole?",
                  "How long does light from the Sun take to reach Earth?",
                  "Why do planets orbit the Sun in ellipses?"],
    "law": ["Is a contract signed under duress enforceable by the other party?",
            "Can a landlord evict a tenant without written notice?",
            "When is hearsay evidence admissible at a criminal trial?",
            "What must a prosecutor prove to convict a defendant of theft?"],
}


# ---------------------------------------------------------------- hybrid functions, by hand

def test_rm3_terms_by_hand():
    feedback = [["heart", "blood", "blood", "pump"], ["lung", "blood"]]
    terms = hybrid.rm3_terms(["heart"], feedback, [3.0, 1.0], n_terms=3, original=0.5)
    # P(w|R): blood .75*2/4 + .25*1/2 = .5; heart .75/4 = .1875; pump .1875; lung .125 (dropped: 4th)
    kept = 0.5 + 0.1875 + 0.1875
    assert terms == pytest.approx({"heart": 0.5 + 0.5 * 0.1875 / kept, "blood": 0.5 * 0.5 / kept,
                                   "pump": 0.5 * 0.1875 / kept})
    assert sum(terms.values()) == pytest.approx(1.0)
    assert hybrid.rm3_terms(["heart", "heart", "rate"], feedback, [0.0, 0.0]) == \
        pytest.approx({"heart": 2 / 3, "rate": 1 / 3})  # no feedback weight: the query alone
    assert hybrid.rm3_terms([], feedback, [1.0, 0.0], n_terms=2) == pytest.approx(
        {"blood": 0.5 / 0.75, "heart": 0.25 / 0.75})  # no query word: the feedback alone


def test_weighted_bm25_is_the_weighted_sum_of_term_scores(tmp_path):
    texts = [t for group in TOPICS.values() for t in group]
    lexical.build(texts, tmp_path / "lex")
    index = lexical.load(tmp_path / "lex")
    weights = {"sun": 0.7, "contract": 0.2, "bread": 0.1, "zzzunknown": 5.0}
    expected = sum(w * index.scores(t) for t, w in weights.items() if t != "zzzunknown")
    assert np.allclose(index.weighted_scores(weights), expected)
    assert index.weighted_scores({"zzzunknown": 1.0}) is None
    sun = index.weighted_scores({"sun": 1.0})
    assert set(np.flatnonzero(sun)) == {6, 7}  # the two items that name the Sun


def test_zsum_normalises_over_the_allowed_items_only():
    a = np.array([1.0, 2.0, 3.0, 100.0])
    b = np.array([0.0, 0.0, 4.0, -50.0])
    allowed = np.array([True, True, True, False])
    z = hybrid.zsum([a, b], allowed)
    za = (a[:3] - a[:3].mean()) / a[:3].std()
    zb = (b[:3] - b[:3].mean()) / b[:3].std()
    assert np.allclose(z[:3], za + zb) and z[3] == 0.0
    assert np.allclose(hybrid.zsum([np.ones(4), a], allowed)[:3], za)  # a constant list adds nothing


def test_mnz_rewards_items_both_lists_retrieve():
    allowed = np.ones(5, dtype=bool)
    first = np.array([5.0, 4.0, 3.0, 0.0, 0.0])
    second = np.array([0.0, 9.0, 1.0, 8.0, 0.0])
    fused = hybrid.mnz([first, second], allowed, depth=3)
    # first's top 3: 0, 1, 2 -> 1, .5, 0; second's top 3: 1, 3, 2 -> 1, 7/8, 0
    assert fused == pytest.approx([1.0, (0.5 + 1.0) * 2, 0.0, 7 / 8, 0.0])
    allowed[1] = False
    assert hybrid.mnz([first, second], allowed, depth=3)[1] == 0.0


def test_tiebreak_orders_within_a_bin_by_the_secondary():
    primary = np.array([0.5001, 0.5009, 0.3, 0.5015, 0.5012])
    secondary = np.array([1.0, 3.0, 100.0, 2.0, 2.0])
    scores = hybrid.tiebreak(primary, secondary, eps=2e-3)
    assert list(np.argsort(-scores, kind="stable")) == [1, 3, 4, 0, 2]
    assert scores[3] == scores[4]  # equal BM25 in the same bin: still tied
    assert np.all(np.abs(scores - primary) < 2e-3)
    assert hybrid.tiebreak(primary, None) is not None and np.array_equal(hybrid.tiebreak(primary, None), primary)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1), st.floats(0, 50)), min_size=1, max_size=40),
       st.sampled_from([1e-3, 2e-3, 1e-2]))
def test_tiebreak_never_crosses_a_bin(pairs, eps):
    primary, secondary = (np.array(x) for x in zip(*pairs))
    scores = hybrid.tiebreak(primary, secondary, eps)
    bins = np.floor(primary / eps)
    assert np.all(np.floor(scores / eps + 1e-9) == bins)
    for i in range(len(pairs)):
        for j in range(len(pairs)):
            if bins[i] > bins[j] or (bins[i] == bins[j] and secondary[i] > secondary[j]):
                assert scores[i] > scores[j]


# ---------------------------------------------------------------- the modes through the command line

@pytest.fixture(scope="module")
def index(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fusion")
    out = tmp / "index"
    for name, texts in TOPICS.items():
        rows = [{"id": f"{name[0]}{i}", "q": t} for i, t in enumerate(texts)]
        (tmp / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        csv = tmp / f"{name}.csv"
        csv.write_text("item,b_mean\n" + "".join(f"{r['id']},{i - 1.5}\n" for i, r in enumerate(rows)),
                       encoding="utf-8")
        done = run_script("browse.py", "index", tmp / f"{name}.jsonl", "--benchmark", name, "--id-field", "id",
                          "--text-field", "q", "--difficulty", csv, "--output-dir", out, "--quiet")
        assert done.returncode == 0, done.stderr
    return out


def query(out, text, *extra):
    done = run_script("browse.py", "query", out, text, "--json", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_fused_is_prf_with_near_ties_reordered(index):
    text = "the Sun, the Moon and the planets"
    fused = query(index, text, "--k", "12", "--mode", "fused")
    prf = query(index, text, "--k", "12", "--mode", "prf")
    assert all(set(hit) == {"benchmark", "item_id", "score"} for hit in fused)
    assert [h["score"] for h in fused] == sorted((h["score"] for h in fused), reverse=True)
    assert fused[0]["benchmark"] == "astronomy"
    by_item = {(h["benchmark"], h["item_id"]): h["score"] for h in prf}
    assert set(by_item) == {(h["benchmark"], h["item_id"]) for h in fused}
    assert all(abs(by_item[(h["benchmark"], h["item_id"])] - h["score"]) < 2e-3 for h in fused)


@pytest.mark.parametrize("mode", ["fused", "rrf"])
def test_filters_still_apply(index, mode):
    text = "the Sun and the planets"
    hits = query(index, text, "--k", "20", "--mode", mode, "--benchmark", "law", "--benchmark", "cooking")
    assert hits and {h["benchmark"] for h in hits} <= {"law", "cooking"}
    hits = query(index, text, "--k", "20", "--mode", mode, "--min-difficulty", "-1", "--max-difficulty", "0")
    # b = i - 1.5: items 1 (-0.5) of every benchmark are the only ones in [-1, 0]
    assert {(h["benchmark"], h["item_id"]) for h in hits} <= {("cooking", "c1"), ("astronomy", "a1"),
                                                             ("law", "l1")}
    if mode == "fused":  # fused, like prf, ranks every allowed item
        assert len(hits) == 3


# ---------------------------------------------------------------- the query sets and the bench

def test_the_three_query_sets_are_distinct_and_cover_the_categories():
    categories = Counter(json.loads(line)["category"] for line in open(DATA / "items.jsonl", encoding="utf-8"))
    seen = set()
    for name in ("queries.json", "queries_heldout.json", "queries_set3.json"):
        field, queries = read_queries(DATA / name)
        assert field == "category" and len(queries) == 39
        counts = Counter(q.label for q in queries)
        assert set(counts) == set(categories) - {"other"} and set(counts.values()) == {3}
        texts = {q.query.lower() for q in queries}
        assert not texts & seen, name
        seen |= texts


def test_bench_reads_the_three_sets_and_chooses_on_set_1(tmp_path):
    items = [{"question_id": f"{name[0]}{i}", "question": t, "options": ["yes", "no"], "category": name}
             for name, texts in TOPICS.items() for i, t in enumerate(texts)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    sets = {"queries.json": ["baking bread at home", "what the stars and planets do", "tenants and contracts"],
            "queries_heldout.json": ["frying and pickling food", "light from the Sun"],
            "queries_set3.json": ["a criminal trial", "eclipses of the Moon"]}
    labels = {"baking bread at home": "cooking", "frying and pickling food": "cooking",
              "what the stars and planets do": "astronomy", "light from the Sun": "astronomy",
              "eclipses of the Moon": "astronomy", "tenants and contracts": "law", "a criminal trial": "law"}
    for name, texts in sets.items():
        (tmp_path / name).write_text(json.dumps({"label_field": "category", "queries": [
            {"query": t, "label": labels[t]} for t in texts]}), encoding="utf-8")
    done = run_script("bench/bench_browse.py", "--collection", tmp_path, "--scale", "0", timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for title in ("set 1 (queries.json): 3 queries", "set 2 (queries_heldout.json, held out): 2 queries",
                  "set 3 (queries_set3.json, final held out): 2 queries"):
        assert title in out
    assert "chosen on set 1 by nDCG@10: " in out
    rows = [line.split() for line in out.splitlines() if line.startswith("  fused - prf")]
    assert len(rows) == 3 and all(-1 <= float(r[3]) <= 1 for r in rows)
