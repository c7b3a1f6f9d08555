#!/usr/bin/env python3
"""Make data/browse_eval/ from the MMLU-Pro release folder (how the bundled collection was drawn).

    python3 bench/make_browse_eval.py /path/to/mmlu_pro data/browse_eval

Draws 100 questions per category (14 categories, 1,400 items) with seed 0 among the questions every
model answered (the fit needs a complete matrix), keeps their texts
(``items.jsonl``: question_id, question, options, category, src) and the graded answers of every model
on them (``responses.csv``: model,item_id,trial,correct with trial 0). The source folder holds
``items.jsonl`` and ``responses_long.csv`` (TIGER-AI-Lab/MMLU-Pro, see data/browse_eval/README.md).
"""

import csv
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

PER_CATEGORY = 100
SEED = 0


def main(source: str, target: str) -> int:
    source, target = Path(source), Path(target)
    by_category = defaultdict(list)
    with open(source / "items.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            by_category[record["category"]].append(record)
    answered = defaultdict(set)
    with open(source / "responses_long.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            answered[int(row["item_id"])].add(row["model"])
    models = set().union(*answered.values())
    rng = random.Random(SEED)
    chosen = []
    for category in sorted(by_category):
        items = sorted((r for r in by_category[category] if answered[r["question_id"]] == models),
                       key=lambda r: r["question_id"])
        chosen += sorted(rng.sample(items, PER_CATEGORY), key=lambda r: r["question_id"])
    keep = {r["question_id"] for r in chosen}
    target.mkdir(parents=True, exist_ok=True)
    with open(target / "items.jsonl", "w", encoding="utf-8") as out:
        for r in chosen:
            row = {k: r[k] for k in ("question_id", "question", "options", "category", "src")}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(source / "responses_long.csv", encoding="utf-8", newline="") as handle, \
            open(target / "responses.csv", "w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["model", "item_id", "trial", "correct"])
        for row in csv.DictReader(handle):
            if int(row["item_id"]) in keep:
                writer.writerow([row["model"], row["item_id"], 0, row["correct"]])
    print(f"{len(chosen)} items, {len(by_category)} categories -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
