"""Find the items that test a use case, across benchmarks, and show whether they measure it (BenchBrowser).

``index`` adds a benchmark's item texts (JSON Lines) to a persistent index folder, ``query`` retrieves the items
for a use case written in words (sentence embeddings with pseudo-relevance feedback by default; BM25 and
reciprocal rank fusion on request), ``report``
gives the validity evidence for 1–4 facet queries. The logic lives in :mod:`benchmeasure.browse`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import command_line, package_versions, plan_outputs, result_json, sha256_file, write_json
from benchmeasure.base.options import SEED, TOP_K, add_quiet, integer, number
from benchmeasure.base.progress import show_progress
from benchmeasure.browse import dense, fusion
from benchmeasure.browse.index import MANIFEST, add_benchmark, check_name, load_index, read_stored_items
from benchmeasure.browse.items import read_items

EXAMPLES = """examples (the bundled MMLU-Pro sample, data/browse_eval/):
  benchmeasure browse index data/browse_eval/items.jsonl --benchmark mmlu_pro \\
      --id-field question_id --text-field question --text-field options \\
      --difficulty data/browse_eval/difficulty.csv --output-dir browse_index
  benchmeasure browse query browse_index "checking a contract clause for liability" --k 20
  benchmeasure browse query browse_index "drug dosage for a patient" --k 10 --json --min-difficulty 0
  benchmeasure browse report browse_index "dosage of a drug" "diagnosing a patient" --k 50 \\
      --responses mmlu_pro=data/browse_eval/responses.csv --output use_cases.json
  benchmeasure browse query browse_index "drug dosage for a patient" --check-fit mmlu_pro=checks/mmlu_pro

index: one run per benchmark; each run adds to the index (the others are not embedded again). The text fields
are joined in the order given (a list of strings, such as answer options, is one line per string).
--difficulty names fit_irt.py's difficulty.csv (columns item, b_mean) of the same benchmark: items without a row
keep no difficulty. --lexical-only builds an index without embeddings (no encoder package needed).

query: --mode prf (default; lexical for a lexical-only index): the dense ranking after pseudo-relevance
feedback (the query vector moved to its 10 nearest items); dense; fused (prf with BM25 breaking the ties
between cosines closer than 2e-3); rrf (reciprocal rank fusion of dense and BM25) or lexical (BM25). prf is
the default: on three labelled query sets fused ranked with it, not above it, and rrf below dense alone
(docs/browse.md). --json prints a JSON list of {benchmark, item_id, score} best first (score: cosine, the
prf cosine rounded to its tie bin plus BM25's rank within it, RRF score or BM25 score).

report: for each query, the top --k items (the slice); the slices' overlap and source benchmarks; each slice's
difficulty distribution on its benchmark's b scale (ECDF deciles, DDM, Max Gap after min-max over the whole
benchmark, as diagnose does) and whether its widest gap is resolved (edges >= 2 posterior sds apart; needs
b_sd in the difficulty file given to index); with --responses NAME=CSV (model,item_id,correct[,trial]) the
abilities the slice implies (refitted on the slice with the difficulties held fixed) against those of the whole
benchmark: Kendall tau with an interval over posterior draws (--n-boot, --seed) and the models whose ability
rank moves most, with their rank intervals; and the same for accuracies, with a bootstrap interval.

--check-fit NAME=DIR (repeatable; a bare DIR when the index holds one benchmark): benchmeasure check-fit's output
folder (or its items.csv) for that benchmark's fit. query shows each listed item's item-fit p-value and its flag
("flagged" at the check's FDR, "against" when its success rises as ability falls); --json adds fit_p_value,
fit_flagged and fit_against_ability; report adds the same to each hit and counts each slice's misfitting items.
"""


def parse_args(argv):
    parser = command_parser(None, __doc__.splitlines()[0], EXAMPLES)
    sub = parser.add_subparsers(dest="command", required=True)
    sub_help = {"epilog": EXAMPLES, "formatter_class": argparse.RawDescriptionHelpFormatter}
    p = sub.add_parser("index", **sub_help, help="add a benchmark's item texts to an index folder")
    p.add_argument("files", nargs="+", metavar="FILE.jsonl", help="JSON Lines files, one item per line")
    p.add_argument("--benchmark", required=True, metavar="NAME", help="the benchmark's name in the index")
    p.add_argument("--id-field", required=True, metavar="F", help="field holding the item ID")
    p.add_argument("--text-field", required=True, action="append", metavar="F",
                   help="field holding text to search (repeat to join several, in order)")
    p.add_argument("--output-dir", required=True, metavar="INDEX", help="the index folder (created or added to)")
    p.add_argument("--difficulty", metavar="DIFFICULTY_CSV", help="fitted difficulties of these items")
    p.add_argument("--difficulty-column", default="b_mean", metavar="COLUMN", help="default: b_mean")
    p.add_argument("--sd-column", default="b_sd", metavar="COLUMN",
                   help="the posterior sd of b, read when the file has it (default: b_sd); report uses it to say "
                        "whether a slice's widest gap is resolved")
    p.add_argument("--lexical-only", action="store_true", help="no embeddings: BM25 only (no encoder needed)")
    p.add_argument("--replace", action="store_true", help="index a benchmark already in the index again")
    add_quiet(p)
    p = sub.add_parser("query", **sub_help, help="the items that test a use case, best first")
    p.add_argument("index", metavar="INDEX")
    p.add_argument("query", metavar="TEXT", help="the use case, in words")
    _retrieval_options(p)
    p.add_argument("--json", action="store_true", help="print a JSON list of {benchmark, item_id, score}")
    _check_fit_option(p)
    p = sub.add_parser("report", **sub_help, help="validity evidence for 1-4 facet queries (JSON)")
    p.add_argument("index", metavar="INDEX")
    p.add_argument("queries", nargs="+", metavar="TEXT", help="1 to 4 facet queries")
    _retrieval_options(p, default_k=50)
    p.add_argument("--responses", action="append", default=[], metavar="NAME=CSV",
                   help="graded answers of a benchmark's models (model,item_id,correct[,trial]); repeatable")
    p.add_argument("--n-boot", type=integer(100, 100_000), default=1000, metavar="B",
                   help="bootstrap resamples for Kendall tau (default 1000)")
    p.add_argument("--seed", type=SEED, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--output", metavar="JSON", help="write the report here (else print it)")
    _check_fit_option(p)
    args = parser.parse_args(argv)
    if args.command == "report" and len(args.queries) > 4:
        fail(f"report compares 1 to 4 facet queries, got {len(args.queries)}")
    return args


def _check_fit_option(p) -> None:
    p.add_argument("--check-fit", action="append", default=[], metavar="NAME=PATH",
                   help="a check-fit output folder (or its items.csv) of benchmark NAME's fit (a bare PATH when the "
                        "index holds one benchmark): show each listed item's fit p-value and flag; repeatable")


def _checks(index, args) -> dict:
    if not args.check_fit:
        return {}
    from benchmeasure.browse.fit_view import read_checks

    return read_checks(index, args.check_fit)


def _retrieval_options(p, default_k: int = 20) -> None:
    p.add_argument("--k", type=TOP_K, default=default_k, help=f"items to return (default {default_k})")
    p.add_argument("--mode", choices=fusion.MODES, help="prf (default), dense, fused, rrf or lexical")
    p.add_argument("--benchmark", action="append", metavar="NAME", help="only these benchmarks (repeatable)")
    p.add_argument("--min-difficulty", type=number(-1e6, 1e6), metavar="B", help="only items with b >= B")
    p.add_argument("--max-difficulty", type=number(-1e6, 1e6), metavar="B", help="only items with b <= B")


def _index(args) -> int:
    from benchmeasure.core.difficulty_file import read_item_difficulties  # here: a query need not import it

    name = check_name(args.benchmark)
    folder = Path(args.output_dir)
    inputs = [*args.files, args.difficulty]
    plan_outputs(folders=[(folder, [MANIFEST])], inputs=inputs)
    for path in inputs:
        if path is not None and Path(path).resolve().is_relative_to(folder.resolve()):
            fail(f"{path}: is inside the index folder {folder}; keep inputs outside it")
    if not args.lexical_only and not dense.available():
        fail(dense.MISSING)
    if not args.quiet:
        show_progress("benchmeasure.browse")
    items = read_items(args.files, args.id_field, args.text_field)
    difficulty = source = sd = None
    if args.difficulty is not None:
        ids, values = read_item_difficulties(args.difficulty, args.difficulty_column)
        difficulty = dict(zip(ids, values))
        if args.sd_column in _header(args.difficulty):
            sd_ids, sds = read_item_difficulties(args.difficulty, args.sd_column)
            sd = dict(zip(sd_ids, sds))
            negative = next((i for i, v in sd.items() if v < 0), None)
            if negative is not None:
                fail(f"{args.difficulty}: item {negative!r}: {args.sd_column} is negative ({sd[negative]})")
        matched = sum(item.item_id in difficulty for item in items)
        if matched == 0:
            fail(f"{args.difficulty}: none of its {len(ids)} item IDs is an item of {', '.join(args.files)} "
                 f"(field {args.id_field!r}); is it the same benchmark?")
        source = {"path": args.difficulty, "sha256": sha256_file(args.difficulty),
                  "column": args.difficulty_column, "matched": matched,
                  "sd_column": args.sd_column if sd is not None else None}
    entry = add_benchmark(
        folder, name, items, sources=[{"path": p, "sha256": sha256_file(p)} for p in args.files],
        settings={"id_field": args.id_field, "text_fields": args.text_field}, difficulty=difficulty,
        difficulty_source=source, lexical_only=args.lexical_only, replace=args.replace, sd=sd)
    fitted = f", {entry['with_difficulty']} with a fitted difficulty" if difficulty else ", no difficulty"
    print(f"indexed {name}: {entry['items']} items{fitted}"
          f"{'' if args.lexical_only else ', embedded'} -> {folder}")
    return 0


def _header(path: str) -> list[str]:
    """The column names of a CSV file (plain or compressed), by the strict reader (which has read it already)."""
    from benchmeasure.base.csv_table import open_table

    with open_table(path) as (header, _):
        return header


def _search(index, args, query: str):
    mode = args.mode or (fusion.DEFAULT if index.dense else "lexical")
    return fusion.search(index, query, args.k, mode, args.benchmark, args.min_difficulty, args.max_difficulty)


def _query(args) -> int:
    if not args.query.strip():
        fail("the query is empty; describe the use case in words")
    index = load_index(args.index)
    checks = _checks(index, args)
    hits = _search(index, args, args.query)
    if checks:
        from benchmeasure.browse.fit_view import fit_label, hit_fit
    if args.json:
        print(result_json([{**h.as_dict(), **(hit_fit(checks, h) if checks else {})} for h in hits]))
        return 0
    texts = {}
    for name in {h.benchmark for h in hits}:
        texts.update({(name, r["item_id"]): r["text"] for r in read_stored_items(args.index, name)})
    fit_head = f"  {'fit p':>15}" if checks else ""
    print(f"{'rank':>4}  {'score':>8}  {'b':>6}{fit_head}  benchmark / item: text")
    for rank, h in enumerate(hits, start=1):
        b = f"{h.b:6.2f}" if h.b is not None else f"{'-':>6}"
        fit = f"  {fit_label(checks, h):>15}" if checks else ""
        snippet = " ".join(texts[(h.benchmark, h.item_id)].split())[:100]
        print(f"{rank:>4}  {h.score:8.4f}  {b}{fit}  {h.benchmark} / {h.item_id}: {snippet}")
    if checks:
        print("fit p: check-fit's item p-value (--check-fit); flagged: misfits at the check's FDR; against: success "
              "rises as ability falls")
    if not hits:
        print("no item matches (no query word in the index, or the filters leave nothing)")
    return 0


def _report(args) -> int:
    from benchmeasure.browse.report import parse_responses_option, use_case_report

    responses = parse_responses_option(args.responses)
    inputs = [path for _, path in responses]
    if args.check_fit:   # the checks' own files, so that the report may not replace one of them
        from benchmeasure.analyses.fit_flags import check_paths

        inputs += [p for value in args.check_fit for p in check_paths(value.partition("=")[2] or value)
                   if p is not None]
    plan_outputs(files=[args.output], inputs=inputs)
    if args.output and Path(args.output).resolve().is_relative_to(Path(args.index).resolve()):
        fail(f"--output {args.output}: is inside the index folder {args.index} (it would replace or add to the "
             "index's own files); write the report elsewhere")
    for query in args.queries:
        if not query.strip():
            fail("a query is empty; describe each facet in words")
    index = load_index(args.index)
    checks = _checks(index, args)
    slices = [_search(index, args, q) for q in args.queries]
    record = use_case_report(index, args.queries, slices, responses, args.n_boot, args.seed, checks)
    record["settings"] = {"k": args.k, "mode": args.mode or (fusion.DEFAULT if index.dense else "lexical"),
                          "benchmarks": args.benchmark, "min_difficulty": args.min_difficulty,
                          "max_difficulty": args.max_difficulty, "n_boot": args.n_boot, "seed": args.seed}
    record["index"] = {"folder": args.index, "manifest_sha256": sha256_file(Path(args.index) / MANIFEST)}
    if checks:
        record["check_fit"] = {name: flags.provenance() for name, flags in checks.items()}
    record["command"] = command_line()
    record["package_versions"] = package_versions(["numpy", "scipy", *dense.PACKAGES])
    if args.output:
        write_json(args.output, record)
        print(f"wrote {args.output}")
    else:
        print(result_json(record))
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    return {"index": _index, "query": _query, "report": _report}[args.command](args)
