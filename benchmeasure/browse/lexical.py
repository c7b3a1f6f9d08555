"""Lexical retrieval: Okapi BM25 over the item texts (``bm25s``, sparse score matrix kept on disk).

Texts are split into lowercase word tokens (letters and digits), English stop words removed (bm25s's list), and
each word cut to its Snowball English stem (PyStemmer), so "diagnosing" meets "diagnosis".
BM25 parameters are the usual k1 = 1.5, b = 0.75 (Lucene's variant). A query whose words are all absent from
the index scores every item 0: the lexical ranking then carries no information and is left out of fusion.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from benchmeasure.errors import fail

log = logging.getLogger(__name__)

K1, B = 1.5, 0.75
TOKENIZER = "words, lowercase, bm25s English stop words, Snowball English stems (PyStemmer)"
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@lru_cache(maxsize=1)
def _stopwords() -> frozenset:
    from bm25s.stopwords import STOPWORDS_EN
    return frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stemmer():
    try:
        import Stemmer
    except ImportError:
        fail("the lexical index needs the package PyStemmer (pip install -r requirements-dev.txt)")
    return Stemmer.Stemmer("english")


def tokenize(text: str, stopwords: frozenset | None = None) -> list[str]:
    """Stemmed lowercase word tokens of ``text`` without English stop words."""
    stop = _stopwords() if stopwords is None else stopwords
    return _stemmer().stemWords([w for w in _WORD.findall(text.lower()) if w not in stop])


def _bm25s():
    try:
        import bm25s
    except ImportError:
        fail("the lexical index needs the package bm25s (pip install -r requirements-dev.txt)")
    return bm25s


def build(texts: list[str], folder: str | Path) -> None:
    """Index ``texts`` (in order) and save the index in ``folder`` (created; must not exist yet)."""
    bm25s = _bm25s()
    stop = _stopwords()
    corpus = [tokenize(t, stop) or [""] for t in texts]  # an all-stop-word text is an empty document
    retriever = bm25s.BM25(k1=K1, b=B)
    retriever.index(corpus, show_progress=False)
    retriever.save(str(folder), show_progress=False)
    log.info("lexical index: %d items, %d terms", len(texts), len(retriever.vocab_dict))


def load(folder: str | Path):
    bm25s = _bm25s()
    try:
        return bm25s.BM25.load(str(folder), mmap=False, show_progress=False)
    except (OSError, ValueError, KeyError) as exc:
        fail(f"{folder}: cannot load the lexical index ({exc}); rebuild the index")


def scores(retriever, query: str) -> np.ndarray | None:
    """BM25 score of every item for ``query``; None when no query word is in the index."""
    ids = retriever.get_tokens_ids(tokenize(query))
    if not ids:
        return None
    return np.asarray(retriever.get_scores_from_ids(ids), dtype=np.float64)
