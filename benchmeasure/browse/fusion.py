"""Answer a query: lexical and dense rankings, reciprocal rank fusion, filters by benchmark and difficulty.

Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) scores an item
``Σ_r 1 / (RRF_K + rank_r(item))`` over the rankings r that retrieved it (rank 1 = best), with the constant
RRF_K = 60 of that paper; each ranking contributes its top :data:`DEPTH` items. Fusion uses ranks only, so BM25
scores and cosines need no common scale. Filters apply before ranking: an item outside the benchmarks named or
the difficulty range is never returned (an item without a fitted difficulty is outside every range).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.browse import dense, lexical

RRF_K = 60
DEPTH = 1000
MODES = ("fused", "lexical", "dense")


@dataclass(frozen=True)
class Hit:
    benchmark: str
    item_id: str
    score: float
    b: float | None

    def as_dict(self) -> dict:
        return {"benchmark": self.benchmark, "item_id": self.item_id, "score": self.score}


def top(scores: np.ndarray, allowed: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest ``scores`` among ``allowed`` rows, best first (ties by index order)."""
    candidates = np.flatnonzero(allowed)
    if len(candidates) > k:
        part = np.argpartition(-scores[candidates], k - 1)[:k]
        candidates = candidates[part]
    return candidates[np.lexsort((candidates, -scores[candidates]))]


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


def search(index, query: str, k: int, mode: str = "fused", benchmarks: list[str] | None = None,
           low: float | None = None, high: float | None = None) -> list[Hit]:
    """The ``k`` best items for ``query`` under ``mode``, best first."""
    if not query.strip():
        fail("the query is empty; describe the use case in words")
    if mode != "lexical" and not index.dense:
        fail(f"{index.folder}: this index has no embeddings (built with --lexical-only); query it with "
             "--mode lexical")
    allowed = mask(index, benchmarks, low, high)
    n = len(index.item_ids)
    lexical_scores = lexical.scores(index.retriever, query) if mode != "dense" else None
    if mode == "lexical":
        scores = lexical_scores if lexical_scores is not None else np.zeros(n)
        allowed &= scores > 0  # no query word in common: not retrieved
    else:
        cosine = index.cosines(dense.embed_query(query))
        if mode == "dense":
            scores = cosine
        else:
            rankings = [top(cosine, allowed, DEPTH)]
            if lexical_scores is not None:
                rankings.append(top(lexical_scores, allowed & (lexical_scores > 0), DEPTH))
            scores = rrf(rankings, n)
            allowed &= scores > 0
    chosen = top(scores, allowed, k)
    return [Hit(index.benchmarks[i], index.item_ids[i], float(scores[i]),
                None if np.isnan(index.b[i]) else float(index.b[i])) for i in chosen]
