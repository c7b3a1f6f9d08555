"""Lexical retrieval: Okapi BM25 over the item texts (``bm25s``, sparse score matrix kept on disk).

Texts are split into lowercase word tokens (letters and digits), English stop words removed (bm25s's list), and
each word cut to its Snowball English stem (PyStemmer), so "diagnosing" meets "diagnosis".
BM25 parameters are the usual k1 = 1.5, b = 0.75 (Lucene's variant). A query whose words are all absent from
the index scores every item 0: the lexical ranking then carries no information and is left out of fusion.
"""

from __future__ import annotations

import json
import logging
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.base.extras import missing_packages

log = logging.getLogger(__name__)

K1, B = 1.5, 0.75
FORMAT = "bm25s 0.3 files + stopwords.json"
TOKENIZER = "words, lowercase, bm25s English stop words, Snowball English stems (PyStemmer)"
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


STOPWORDS = "stopwords.json"  # saved with the index: a query is split as its index was, without importing bm25s


@lru_cache(maxsize=1)
def _stopwords() -> frozenset:
    from bm25s.stopwords import STOPWORDS_EN
    return frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stemmer():
    try:
        import Stemmer
    except ImportError:
        fail(missing_packages("the lexical index", ["PyStemmer"], "browse"))
    return Stemmer.Stemmer("english")


def tokenize(text: str, stopwords: frozenset | None = None) -> list[str]:
    """Stemmed lowercase word tokens of ``text`` without English stop words."""
    stop = _stopwords() if stopwords is None else stopwords
    return _stemmer().stemWords([w for w in _WORD.findall(text.lower()) if w not in stop])


def _bm25s():
    try:
        import bm25s
    except ImportError:
        fail(missing_packages("the lexical index", ["bm25s"], "browse"))
    return bm25s


def build(texts: list[str], folder: str | Path) -> None:
    """Index ``texts`` (in order) and save the index in ``folder`` (created; must not exist yet)."""
    bm25s = _bm25s()
    stop = _stopwords()
    corpus = [tokenize(t, stop) or [""] for t in texts]  # an all-stop-word text is an empty document
    retriever = bm25s.BM25(k1=K1, b=B)
    retriever.index(corpus, show_progress=False)
    retriever.save(str(folder), show_progress=False)
    (Path(folder) / STOPWORDS).write_text(json.dumps(sorted(stop)), encoding="utf-8")
    log.info("lexical index: %d items, %d terms", len(texts), len(retriever.vocab_dict))


class Lexical:
    """A saved index, read without importing bm25s (whose import alone costs a second through numba).

    bm25s saves each term's precomputed BM25 contribution to every document holding it as a CSC sparse
    matrix (``data``, ``indices``: documents, ``indptr``: one slice per term) and the term → column map
    (``vocab.index.json``); a query's scores are the sums of its terms' columns, each repeated term counted
    again, as bm25s itself scores them (Lucene's BM25 variant needs no score for absent terms).
    """

    def __init__(self, folder: str | Path):
        folder = Path(folder)
        try:
            params = json.loads((folder / "params.index.json").read_text(encoding="utf-8"))
            self.vocab = json.loads((folder / "vocab.index.json").read_text(encoding="utf-8"))
            self.data = np.load(folder / "data.csc.index.npy", mmap_mode="r")
            self.indices = np.load(folder / "indices.csc.index.npy", mmap_mode="r")
            self.indptr = np.load(folder / "indptr.csc.index.npy", mmap_mode="r")
            self.stopwords = frozenset(json.loads((folder / STOPWORDS).read_text(encoding="utf-8")))
        except (OSError, ValueError, json.JSONDecodeError) as exc:
            fail(f"{folder}: cannot load the lexical index ({exc}); rebuild the index")
        if params.get("method") != "lucene" or (folder / "nonoccurrence_array.index.npy").exists():
            fail(f"{folder}: not a Lucene-variant BM25 index of bm25s; rebuild the index")
        self.num_docs = int(params["num_docs"])

    def scores(self, query: str) -> np.ndarray | None:
        """BM25 score of every item for ``query``; None when no query word is in the index."""
        ids = [self.vocab[t] for t in tokenize(query, self.stopwords) if t in self.vocab]
        if not ids:
            return None
        starts, ends = self.indptr[ids], self.indptr[np.asarray(ids) + 1]
        docs = np.concatenate([self.indices[a:b] for a, b in zip(starts, ends)])
        weights = np.concatenate([self.data[a:b] for a, b in zip(starts, ends)]).astype(np.float64)
        return np.bincount(docs, weights=weights, minlength=self.num_docs)

    def weighted_scores(self, terms: dict[str, float]) -> np.ndarray | None:
        """Σ_t weight(t) · BM25 contribution of analysed term t, for every item; None when no term is in the
        index (an expanded query: :func:`benchmeasure.browse.hybrid.rm3_terms`)."""
        known = [(self.vocab[t], w) for t, w in terms.items() if t in self.vocab and w > 0]
        if not known:
            return None
        out = np.zeros(self.num_docs)
        for column, weight in known:
            a, b = self.indptr[column], self.indptr[column + 1]
            out[self.indices[a:b]] += weight * self.data[a:b].astype(np.float64)  # a column names a doc once
        return out


def load(folder: str | Path) -> Lexical:
    return Lexical(folder)


def scores(retriever: Lexical, query: str) -> np.ndarray | None:
    return retriever.scores(query)
