"""Ways of adding BM25 evidence to the dense ranking, each with its parameters fixed from the literature.

The third fusion round of issue 21 (protocol: ``data/browse_eval/fusion_protocol.md``, written before any of
these was run) compares them on three labelled query sets in ``bench/bench_browse.py``. Each function works
on score vectors over every item of the index and a boolean ``allowed`` mask (the filters), so a filtered
item never enters a normalisation, a feedback set or a top list.

* :func:`rm3_terms` — lexical pseudo-relevance feedback seeded by the dense ranking: RM3 (Lavrenko and Croft,
  SIGIR 2001; Abdul-Jaleel et al., TREC 2004) with the feedback items and their weights from the dense
  retriever instead of query likelihood. P(w|R) = Σ_d weight(d)·tf(w, d)/|d| over the feedback items, the
  :data:`RM3_TERMS` heaviest terms kept and renormalised, mixed with the query's own terms,
  ``ORIGINAL_WEIGHT``·P(w|Q) + (1 − ``ORIGINAL_WEIGHT``)·P(w|R). 10 items, 10 terms, 0.5: the defaults of
  Anserini's RM3 (Yang, Fang and Lin, SIGIR 2017).
* :func:`zsum` — CombSUM (Fox and Shaw, TREC-2 1994) after per-query z-normalisation of each score vector over
  the allowed items (Montague and Aslam, CIKM 2001).
* :func:`mnz` — CombMNZ (Fox and Shaw): each list's top ``depth`` min-max normalised within it (Lee, SIGIR
  1997), summed, times the number of lists that retrieved the item.
* :func:`tiebreak` — the primary scores cut into bins of width ``eps`` (ties: closer than the index's int8
  rounding moves a cosine), the secondary deciding within a bin.
* :func:`top` — the ``k`` best allowed items of a score vector, the cut every ranking and list above uses
  (:mod:`.fusion` imports it from here; this module imports nothing of :mod:`.fusion`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

RM3_DOCS = 10
RM3_TERMS = 10
ORIGINAL_WEIGHT = 0.5
TIE_EPS = 2e-3  # the largest cosine change int8 rounding of the index's vectors makes (docs/browse.md)


def rm3_terms(query_tokens: list[str], feedback_tokens: list[list[str]], doc_weights,
              n_terms: int = RM3_TERMS, original: float = ORIGINAL_WEIGHT) -> dict[str, float]:
    """The expanded query: {analysed term: weight}, weights summing to 1 (module docstring).

    ``feedback_tokens`` are the feedback items' analysed tokens, ``doc_weights`` their non-negative weights
    (normalised here; all zero or no item: the query alone)."""
    weights = np.clip(np.asarray(doc_weights, dtype=float), 0.0, None)
    relevance: Counter = Counter()
    if len(feedback_tokens) and weights.sum() > 0:
        weights = weights / weights.sum()
        for tokens, w in zip(feedback_tokens, weights):
            if tokens and w > 0:
                for term, count in Counter(tokens).items():
                    relevance[term] += w * count / len(tokens)
    kept = sorted(relevance.items(), key=lambda kv: (-kv[1], kv[0]))[:n_terms]
    total = sum(v for _, v in kept)
    expanded: Counter = Counter()
    if query_tokens:
        for term, count in Counter(query_tokens).items():
            expanded[term] += (original if total > 0 else 1.0) * count / len(query_tokens)
    for term, value in kept:
        expanded[term] += (1.0 - original if query_tokens else 1.0) * value / total
    return dict(expanded)


def top(scores: np.ndarray, allowed: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest ``scores`` among ``allowed`` rows, best first (ties by index order)."""
    candidates = np.flatnonzero(allowed)
    if len(candidates) > k:
        part = np.argpartition(-scores[candidates], k - 1)[:k]
        candidates = candidates[part]
    return candidates[np.lexsort((candidates, -scores[candidates]))]


def _z(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    values = scores[allowed]
    out = np.zeros(len(scores))
    if len(values) == 0:
        return out
    sd = float(values.std())
    out[allowed] = (values - values.mean()) / sd if sd > 0 else 0.0
    return out


def zsum(score_lists: list[np.ndarray], allowed: np.ndarray) -> np.ndarray:
    """Sum of the per-query z-scores of each list over the allowed items (0 outside them)."""
    return np.sum([_z(np.asarray(s, dtype=float), allowed) for s in score_lists], axis=0)


def mnz(score_lists: list[np.ndarray], allowed: np.ndarray, depth: int = 1000) -> np.ndarray:
    """CombMNZ over each list's top ``depth`` allowed items, min-max normalised within that top."""
    total = np.zeros(len(allowed))
    hits = np.zeros(len(allowed))
    for scores in score_lists:
        scores = np.asarray(scores, dtype=float)
        chosen = top(scores, allowed, depth)
        if len(chosen) == 0:
            continue
        low, high = float(scores[chosen].min()), float(scores[chosen].max())
        total[chosen] += (scores[chosen] - low) / (high - low) if high > low else 1.0
        hits[chosen] += 1
    return total * hits


def tiebreak(primary: np.ndarray, secondary: np.ndarray | None, eps: float = TIE_EPS) -> np.ndarray:
    """Scores that order by ``floor(primary / eps)``, then by ``secondary`` (its order only).

    The score is ``eps · (bin + r)``, r in [0, 1) the secondary's rank among the distinct secondary values
    scaled to that interval: it never leaves the primary's bin, so it is within ``eps`` of ``primary`` and
    decreases down the ranking. Equal secondaries stay tied. ``secondary`` None: ``primary`` unchanged."""
    primary = np.asarray(primary, dtype=float)
    if secondary is None:
        return primary
    levels, rank = np.unique(np.asarray(secondary, dtype=float), return_inverse=True)
    return eps * (np.floor(primary / eps) + rank / (len(levels) + 1.0))


def rm3_scores(retriever, query: str, feedback_tokens: list[list[str]], doc_weights) -> np.ndarray | None:
    """BM25 scores of the RM3-expanded query (None when none of its terms is in the index)."""
    from benchmeasure.browse.lexical import tokenize

    terms = rm3_terms(tokenize(query, retriever.stopwords), feedback_tokens, doc_weights)
    return retriever.weighted_scores(terms)
