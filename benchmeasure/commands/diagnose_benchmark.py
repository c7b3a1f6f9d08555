"""Diagnose a benchmark's difficulty measure: DDM, Max Gap and the Top-k Gap Sum.

Standard library only (Python 3.9+): runs as ``python3 -I -S scripts/diagnose_benchmark.py``.
"""

from __future__ import annotations

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import result_json
from benchmeasure.base.options import TOP_K
from benchmeasure.core.calibrated_text import calibrated_beside, interval_text
from benchmeasure.core.calibrated_text import lines as calibrated_lines
from benchmeasure.core.difficulty_file import benchmark_name, fit_n_trials, read_difficulty_column
from benchmeasure.core.fit_check_text import check_beside, flag_cells, summary_line
from benchmeasure.core.matrix_holes import absent_cells_beside
from benchmeasure.core.metrics import diagnose
from benchmeasure.core.resolution import benchmark_resolution, gap_table

PLUGIN_LABEL = ("plug-in (the paper's value: metric of the posterior-mean difficulties; noise fills gaps, "
                "so a gap that is not resolved may be noise; the calibrated intervals below are for the true "
                "metric, printed with their own estimate of it)")

EXAMPLES = """\
examples:
  benchmeasure diagnose my_benchmark/difficulty.csv
  benchmeasure diagnose my_benchmark/difficulty.csv --column difficulty --json
  benchmeasure diagnose normalized.csv --column z --normalized
  benchmeasure diagnose data/benchmarks/*/difficulty.csv      # one row per file

definitions (paper, Table 1):
  z = (b - min b) / (max b - min b), sorted z(1) <= ... <= z(n)
  DDM           = mean_i |z(i) - (i - 0.5)/n|   (1-Wasserstein distance to a same-size uniform grid)
  gaps          = consecutive differences of 0, z(1), ..., z(n), 1
  Max Gap       = the largest gap;  Top-k Gap Sum = the sum of the k largest

These are plug-in values (the metric of the posterior means, the paper's definition). When the
file also has b_sd (fit_irt.py writes it), the benchmark's resolution is printed beside them:
the narrowest band this fit can reveal, and for each gap whether its edges are at least 2
posterior sds apart (resolved) and how much of it noise can fill (docs/gap_noise.md); with the
fit's diagnostics.json beside the file, also how many more trials per model on an unresolved
gap's two edge items would resolve it, if it is as wide as it looks (what to ask the panel next).
With the fit's model-fit check beside the file (FIT_DIR/check_fit/, which benchmeasure fit writes
unless --no-check-fit), its summary line: items and models flagged (docs/model_fit.md); else
"not checked".
"""


def parse_args(argv):
    parser = command_parser("diagnose_benchmark.py",
                            "Measure how a benchmark's items cover the difficulty axis (DDM, Max Gap, Top-k Gap Sum).",
                            EXAMPLES)
    parser.add_argument("files", nargs="+", metavar="DIFFICULTY_CSV",
                        help="CSV with one difficulty per item (e.g. benchmeasure fit's difficulty.csv)")
    parser.add_argument("--column", default="b_mean", help="column holding the difficulties (default: b_mean)")
    parser.add_argument("--top-k", type=TOP_K, default=5, metavar="K", help="how many gaps to sum (default: 5)")
    parser.add_argument("--normalized", action="store_true",
                        help="values are already on [0, 1]: keep that scale (a value outside it is an error)")
    parser.add_argument("--name", action="append", metavar="NAME",
                        help="the benchmark's name, once per file (default: the name its fit recorded, else the "
                             "folder holding the file)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser.parse_args(argv)


def _posterior_sds(path: str):
    """The file's b_sd column when every row has one (a NUTS fit), else None (MAP fits leave it empty)."""
    from benchmeasure.base.csv_table import read_table

    table = read_table(path)
    if "b_sd" not in table.header or any(not cell.strip() for cell in table.column("b_sd")):
        return None
    return read_difficulty_column(path, "b_sd").values


def _ask(gap: dict) -> str:
    """What to ask the panel next for an unresolved gap (needs K from the fit's diagnostics.json)."""
    extra = gap.get("extra_trials_per_model")
    if gap["resolved"] or "extra_trials_per_model" not in gap:
        return ""
    if extra is None:
        return "; more trials on its edge items cannot resolve it (an edge item carries almost no information)"
    return f"; ask the panel for about {extra} more trials per model on {gap['lower_item']} and {gap['upper_item']}"


def _calibrated_for(path: str, values: dict, top_k: int) -> dict | None:
    """The fit's calibrated intervals when they describe these values (same plug-ins, same Top-k), else None."""
    block = calibrated_beside(path)
    if block is None or "refused" in block:
        return block
    metrics = block["metrics"]
    if f"top{top_k}_gap_sum" not in metrics or any(abs(metrics[m]["plugin"] - values[m]) > 1e-6
                                                   for m in metrics if m in values):
        return None  # the file was edited after the fit, or another Top-k: the stored intervals are not for it
    return block


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.name is not None and len(args.name) != len(args.files):
        fail(f"--name given {len(args.name)} time(s) for {len(args.files)} file(s); give one name per file")
    names = args.name or [None] * len(args.files)
    results = []
    for path, name in zip(args.files, names):
        column = read_difficulty_column(path, args.column)
        diagnosis = diagnose(column.values, top_k=args.top_k, normalized=args.normalized, where=path)
        record = {"benchmark": benchmark_name(path, name), "file": path, **diagnosis.as_dict(), "value": PLUGIN_LABEL}
        sds = _posterior_sds(path) if args.column == "b_mean" and not args.normalized else None
        if sds is not None:
            record["resolution"] = benchmark_resolution(column.values, sds)
            record["gaps"] = gap_table(column.values, sds, column.item_ids, args.top_k, n_trials=fit_n_trials(path))
        if args.column == "b_mean" and not args.normalized:  # the fit's calibrated intervals, when it made them
            record["calibrated_intervals"] = _calibrated_for(path, diagnosis.as_dict(), args.top_k)
            record["model_fit"] = check_beside(path)
        absent = absent_cells_beside(path)
        if absent is not None:  # the fit had holes: say how many, and which gap edges had fewer answers
            per_item = absent.get("per_item", {})
            record["absent_cells"] = {"total": absent["total"], "per_model": absent.get("per_model", {}),
                                      "items_with_absent_cells": len(per_item)}
            for gap in record.get("gaps", []):
                gap["absent_cells"] = [per_item.get(gap["lower_item"], 0), per_item.get(gap["upper_item"], 0)]
        results.append(record)
    k = args.top_k
    if args.json:
        print(result_json(results[0] if len(results) == 1 else results))
    elif len(results) == 1:
        r = results[0]
        print(f"Items: {r['items']}")
        print(f"Normalization: {r['normalization']}")
        print(f"DDM: {r['ddm']:.6f}")
        print(f"Max Gap: {r['max_gap']:.6f}")
        print(f"Top-{k} Gap Sum: {r[f'top{k}_gap_sum']:.6f}")
        spans = ", ".join("[{:.4f}, {:.4f}]".format(g["left"], g["right"]) for g in r["largest_gaps"])
        print(f"Largest {k} gaps: {spans}")
        print(f"Values: {r['value']}")
        if "absent_cells" in r:
            a = r["absent_cells"]
            print(f"Absent cells: {a['total']} in the fit (masked likelihood), {a['items_with_absent_cells']} items "
                  f"and {len(a['per_model'])} models with some; per model and item in diagnostics.json")
        for line in calibrated_lines(r.get("calibrated_intervals"), r.get("gaps")):
            print(line)
        if "resolution" in r:
            print(f"Resolution: {r['resolution']['resolution']:.4f} (narrowest band this fit can reveal, normalized; "
                  f"typical posterior sd {r['resolution']['typical_sd']:.3f})")
            for g in r["gaps"]:
                state = "resolved" if g["resolved"] else "NOT resolved (may be noise)"
                sep = "n/a" if g["separation"] is None else f"{g['separation']:.1f}"
                holes = g.get("absent_cells", [0, 0])
                note = f" (absent cells at the edges: {holes[0]}, {holes[1]})" if any(holes) else ""
                print(f"  gap {g['rank']}: {g['lower_item']} to {g['upper_item']}, width {g['width']:.4f}, "
                      f"edges {sep} sds apart, {state}; noise can fill {g['fillable']:.4f}{note}"
                      + _ask(g))
        if "model_fit" in r:
            line = summary_line(r["model_fit"])
            print("Model fit:" + line[len("model fit:"):])
    else:
        width = max(len("Benchmark"), *(len(r["benchmark"]) for r in results))
        fit_cells = {id(r): "; ".join(flag_cells(r["model_fit"])) if "model_fit" in r else "" for r in results}
        fit_cells = {key: "not checked" if text == "not checked; not checked" else text
                     for key, text in fit_cells.items()}
        fit_width = max(len("flagged: items; models"), *(len(text) for text in fit_cells.values()))
        print(f"{'Benchmark':<{width}}  {'DDM':>8}  {'Max Gap':>8}  {f'Top-{k} Sum':>10}  {'#':>6}  "
              f"{'widest gap resolved':>19}  {'flagged: items; models':<{fit_width}}  "
              "true DDM; true Max Gap: ≈ estimate [calibrated intervals]")
        for r in results:
            block = r.get("calibrated_intervals")
            cal = ("uncalibrated" if block is None else "not calibrated" if "refused" in block else
                   f"{interval_text(block['metrics']['ddm'])}; {interval_text(block['metrics']['max_gap'])}")
            resolved = {True: "yes", False: "NO"}.get(r["gaps"][0]["resolved"]) if r.get("gaps") else "?"
            print(f"{r['benchmark']:<{width}}  {r['ddm']:8.3f}  {r['max_gap']:8.3f}  "
                  f"{r[f'top{k}_gap_sum']:10.3f}  {r['items']:6d}  {resolved:>19}  "
                  f"{fit_cells[id(r)]:<{fit_width}}  {cal}")
    return 0

