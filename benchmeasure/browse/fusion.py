"""Answer a query: the rankings of each mode, filters by benchmark and difficulty.

Modes (the registry :data:`MODES`, each registered below with ``@MODES.add``; the default for an index with
embeddings is :data:`DEFAULT`):

* ``prf`` — dense retrieval with pseudo-relevance feedback on the vectors (Rocchio, 1971; "vector PRF" of
  Li et al., 2021): the query vector plus the mean vector of its top :data:`PRF_DOCS` items by cosine,
  renormalised, ranks again by cosine. A use case names a topic; the items nearest it show the words and
  forms that topic's items take, and their mean pulls the query towards them. ``PRF_DOCS`` = 10 and the equal
  weight of query and centroid were fixed before any result was seen (not tuned); ``bench/bench_browse.py``
  prints 3, 5, 10 and 20 on both labelled query sets.
* ``dense`` — cosine with the query's all-MiniLM-L6-v2 vector;
* ``lexical`` — BM25 (:mod:`~benchmeasure.browse.lexical`);
* ``fused`` — the ``prf`` ranking with BM25 breaking its near-ties
  (:func:`~benchmeasure.browse.hybrid.tiebreak`): prf cosines closer than the int8 rounding of the index
  (2e-3) are ties, and BM25 orders the items within such a bin. The score is the prf cosine rounded down to
  its bin plus a fraction of the bin for BM25's rank (within 2e-3 of the cosine, decreasing down the list).
  Chosen on query set 1 among the eight candidates fixed in advance (``data/browse_eval/fusion_protocol.md``),
  it beat ``dense`` on held-out sets 2 and 3 with paired intervals above 0; but that gain is prf's: against
  ``prf`` alone, BM25 moves nDCG@10 by −0.002 [−0.006, +0.001] on set 2 and −0.001 on set 3, so ``prf``
  stays the default (docs/browse.md gives the numbers).
* ``rrf`` — reciprocal rank fusion of the dense and BM25 rankings (Cormack, Clarke and Büttcher, SIGIR
  2009): ``Σ_r 1 / (RRF_K + rank_r(item))`` over the rankings r that retrieved the item, RRF_K = 60 of that
  paper, each ranking's top :data:`DEPTH` items (``fused`` before the third fusion round).

Why ``prf`` by default: on three labelled query sets of ``data/browse_eval`` (sets 2 and 3 written before any
result with them), every way of giving BM25 a real say in the ranking — RRF, CombSUM of z-scores, CombMNZ,
a convex combination with its weight chosen by cross-validation, BM25 re-ranking the dense top 100, BM25
with dense-seeded RM3 expansion fused by RRF — scored below or level with the dense ranking on at least one
held-out set, and ``prf`` above it on all three. Use-case queries share few words with exam questions, so
BM25 is much the weaker ranking.

Filters apply before ranking: an item outside the benchmarks named or the difficulty range is never returned
(an item without a fitted difficulty is outside every range), and ``prf`` takes its feedback items among the
allowed ones only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.base.registry import GROUPS, Registry
from benchmeasure.browse import dense, hybrid, lexical
from benchmeasure.browse.hybrid import top  # fusion.top: the rankings' cut

RRF_K = 60
DEPTH = 1000
PRF_DOCS = 10
DEFAULT = "prf"


@dataclass(frozen=True)
class Mode:
    """A ranking mode (``browse query --mode NAME``): ``score(index, query, allowed, lexical_scores)`` → a score per
    item of the index (higher first); ``dense``: it needs the index's embeddings; ``lexical``: it needs the query's
    BM25 scores (``lexical_scores``, None when no query word is in the index); ``retrieved_only``: an item scoring 0
    or less is not returned."""

    name: str
    score: object
    dense: bool = True
    lexical: bool = False
    retrieved_only: bool = False
    summary: str = ""

    DECORATES: ClassVar[str] = "score"


#: the modes, in the order of ``--mode``'s choices; each registered below with ``@MODES.add``, and another package's
#: through the entry-point group ``benchmeasure.browse_modes``
MODES = Registry("mode", GROUPS["browse mode"], entry=Mode, builtins=("benchmeasure.browse.fusion",))


@dataclass(frozen=True)
class Hit:
    benchmark: str
    item_id: str
    score: float
    b: float | None

    def as_dict(self) -> dict:
        return {"benchmark": self.benchmark, "item_id": self.item_id, "score": self.score}


def rrf(rankings: list[np.ndarray], n: int) -> np.ndarray:
    """RRF score of each of ``n`` items from rankings given as index arrays, best first."""
    fused = np.zeros(n, dtype=np.float64)
    for ranking in rankings:
        fused[ranking] += 1.0 / (RRF_K + np.arange(1, len(ranking) + 1))
    return fused


def mask(index, benchmarks: list[str] | None, low: float | None, high: float | None) -> np.ndarray:
    """Rows allowed by the filters; a filter naming a benchmark the index lacks is an error."""
    allowed = np.ones(len(index.item_ids), dtype=bool)
    names = np.asarray(index.benchmarks)
    if benchmarks:
        known = index.manifest["benchmarks"]
        for name in benchmarks:
            if name not in known:
                fail(f"--benchmark {name!r}: not in the index {index.folder} (it has {', '.join(known)})")
        allowed &= np.isin(names, benchmarks)
    if low is not None or high is not None:
        if low is not None and high is not None and low > high:
            fail(f"--min-difficulty {low} is above --max-difficulty {high}")
        chosen = benchmarks or list(index.manifest["benchmarks"])
        if not any(index.has_difficulty(name) for name in chosen):
            fail(f"{index.folder}: no benchmark searched ({', '.join(chosen)}) has fitted difficulties, so a "
                 "difficulty range selects nothing; index one with browse index --difficulty DIFFICULTY_CSV")
        with np.errstate(invalid="ignore"):
            if low is not None:
                allowed &= index.b >= low
            if high is not None:
                allowed &= index.b <= high
    return allowed


def component_scores(index, query: str, allowed: np.ndarray) -> dict:
    """The query's cosines (``dense``), PRF cosines (``prf``) and BM25 scores (``lexical``; None when no
    query word is in the index), each over every item of the index."""
    vector = dense.embed_query(query)
    cosine = index.cosines(vector)
    return {"dense": cosine, "prf": prf_scores(index, vector, cosine, allowed),
            "lexical": lexical.scores(index.retriever, query)}


def prf_scores(index, vector: np.ndarray, cosine: np.ndarray, allowed: np.ndarray,
               n_docs: int = PRF_DOCS) -> np.ndarray:
    """Cosines with the query vector moved to its top ``n_docs`` allowed items (module docstring)."""
    feedback = top(cosine, allowed, n_docs)
    if len(feedback) == 0:
        return cosine
    moved = vector + index.rows(feedback).mean(axis=0)
    return index.cosines(moved / max(float(np.linalg.norm(moved)), 1e-12))


def _query_cosines(index, query: str):
    vector = dense.embed_query(query)
    return vector, index.cosines(vector)


@MODES.add("prf", summary="dense retrieval with pseudo-relevance feedback on the vectors (the default)")
def prf_mode(index, query: str, allowed: np.ndarray, lexical_scores) -> np.ndarray:
    vector, cosine = _query_cosines(index, query)
    return prf_scores(index, vector, cosine, allowed)


@MODES.add("dense", summary="cosine with the query's vector")
def dense_mode(index, query: str, allowed: np.ndarray, lexical_scores) -> np.ndarray:
    return _query_cosines(index, query)[1]


@MODES.add("fused", lexical=True, summary="prf, BM25 breaking its near-ties")
def fused_mode(index, query: str, allowed: np.ndarray, lexical_scores) -> np.ndarray:
    vector, cosine = _query_cosines(index, query)
    return hybrid.tiebreak(prf_scores(index, vector, cosine, allowed), lexical_scores)


@MODES.add("rrf", lexical=True, retrieved_only=True, summary="reciprocal rank fusion of dense and BM25")
def rrf_mode(index, query: str, allowed: np.ndarray, lexical_scores) -> np.ndarray:
    cosine = _query_cosines(index, query)[1]
    rankings = [top(cosine, allowed, DEPTH)]
    if lexical_scores is not None:
        rankings.append(top(lexical_scores, allowed & (lexical_scores > 0), DEPTH))
    return rrf(rankings, len(index.item_ids))


@MODES.add("lexical", dense=False, lexical=True, retrieved_only=True, summary="BM25")
def lexical_mode(index, query: str, allowed: np.ndarray, lexical_scores) -> np.ndarray:
    return lexical_scores if lexical_scores is not None else np.zeros(len(index.item_ids))


def search(index, query: str, k: int, mode: str = DEFAULT, benchmarks: list[str] | None = None,
           low: float | None = None, high: float | None = None) -> list[Hit]:
    """The ``k`` best items for ``query`` under ``mode`` (a name in :data:`MODES`), best first."""
    if not query.strip():
        fail("the query is empty; describe the use case in words")
    entry = MODES.get(mode)
    if entry.dense and not index.dense:
        fail(f"{index.folder}: this index has no embeddings (built with --lexical-only); query it with "
             "--mode lexical")
    allowed = mask(index, benchmarks, low, high)
    lexical_scores = lexical.scores(index.retriever, query) if entry.lexical else None
    scores = entry.score(index, query, allowed, lexical_scores)
    if entry.retrieved_only:
        allowed &= scores > 0  # no query word in common / in no ranking: not retrieved
    chosen = top(scores, allowed, k)
    return [Hit(index.benchmarks[i], index.item_ids[i], float(scores[i]),
                None if np.isnan(index.b[i]) else float(index.b[i])) for i in chosen]
