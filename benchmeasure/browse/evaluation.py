"""Score a retriever against labelled queries: P@k, nDCG@k and MRR, with bootstrap intervals over queries.

Relevance is binary: an item is relevant to a query when its label (for the bundled collection, the MMLU-Pro
category) equals the query's. nDCG@k = DCG@k / ideal DCG@k with gain 1 at rank r discounted by log2(r + 1)
(Järvelin and Kekäläinen, 2002); MRR is the mean over queries of 1 / (rank of the first relevant item), 0 when
none is retrieved. Each mean comes with a percentile bootstrap interval over queries (seeded), and the
difference of two retrievers with a paired one (the same resampled queries for both).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from benchmeasure.base.errors import fail


@dataclass(frozen=True)
class Labelled:
    query: str
    label: str


def read_queries(path: str) -> tuple[str, list[Labelled]]:
    """(label field, queries) of a JSON file {"label_field": F, "queries": [{"query", "label"}, …]}."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{path}: cannot read the labelled queries ({exc})")
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list) or \
            not isinstance(data.get("label_field"), str):
        fail(f"{path}: expected an object with 'label_field' (a string) and 'queries' (a list)")
    queries = []
    for n, q in enumerate(data["queries"]):
        if not (isinstance(q, dict) and isinstance(q.get("query"), str) and isinstance(q.get("label"), str)
                and q["query"].strip()):
            fail(f"{path}: queries[{n}] needs a non-empty 'query' and a 'label' (strings)")
        queries.append(Labelled(q["query"], q["label"]))
    if not queries:
        fail(f"{path}: no queries")
    return data["label_field"], queries


def precision_at(relevant: list[bool], k: int) -> float:
    return sum(relevant[:k]) / k


def ndcg_at(relevant: list[bool], k: int, n_relevant: int) -> float:
    dcg = sum(1.0 / math.log2(r + 2) for r, rel in enumerate(relevant[:k]) if rel)
    ideal = sum(1.0 / math.log2(r + 2) for r in range(min(k, n_relevant)))
    return dcg / ideal if ideal else 0.0


def reciprocal_rank(relevant: list[bool]) -> float:
    return next((1.0 / (r + 1) for r, rel in enumerate(relevant) if rel), 0.0)


def per_query(relevant: list[bool], k: int, n_relevant: int) -> dict:
    return {f"P@{k}": precision_at(relevant, k), f"nDCG@{k}": ndcg_at(relevant, k, n_relevant),
            "MRR": reciprocal_rank(relevant)}


def bootstrap_mean(values, n_boot: int, seed: int, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): percentile bootstrap interval of the mean over queries."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(n_boot, len(values)))].mean(axis=1)
    tail = (1 - level) / 2
    return float(values.mean()), float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))
