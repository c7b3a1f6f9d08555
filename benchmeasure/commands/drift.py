"""Drift and contamination by item date (or any item covariate), difficulty-adjusted, with calibrated alarms."""

from __future__ import annotations

import csv
import math
import sys
import time

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import all_or_nothing, atomic_write, plan_outputs, provenance, result_json, write_json
from benchmeasure.base.options import N_TRIALS, OPEN_PROBABILITY, SEED, add_allow_missing, add_quiet, integer

EXAMPLES = """\
examples:
  benchmeasure drift matrix.csv --n-trials 10 --item-meta items.csv --by date --output-dir drift_out
  benchmeasure drift matrix.csv --n-trials 10 --allow-missing --item-meta items.csv --by date \\
      --model-meta models.csv --output-dir drift_out --json     # holes, K per cell; τ near release/cut-off?
  benchmeasure drift matrix.csv --n-trials 10 --item-meta items.csv --by date --output-dir drift_out \\
      --predict-after                     # + predict.csv: flagged models judged on their items after τ only
  benchmeasure drift responses.csv --n-trials 1 --allow-missing --item-meta items_meta.csv --by src \\
      --output-dir by_source                                    # a category: how each model differs by it

inputs:
  MATRIX       a count matrix (model,<item>,…) or graded responses (model,item_id,trial,correct), as `fit` reads
  --item-meta  CSV: item (or item_id) + any columns (date as YYYY-MM-DD, release, source, subject…), one row per
               item of the matrix (an item on one side only is an error)
  --model-meta CSV: model + release and/or cutoff (YYYY-MM-DD, blank = unknown), one row per model

--by a date column (binned by month) or a number column: per model, a step P = σ(a·(θ + δ·[x < τ] − b)) with τ
searched over the bin boundaries, the model's own responses left out of b; p-value by parametric bootstrap
under no step (calibrated for the search over τ), Benjamini–Hochberg across models; δ > 0 = better before τ.
--by a category: each model's shift on each level (logits, 95% Wald interval): how it differs by the column.

outputs (DIR): models.csv, bins.csv (ordered covariates), items.csv (per-item drift between early and late
panels, when the items carry a 'release'), drift.json (the record), figures/<model>.png per flagged model;
with --predict-after, predict.csv: per model the ability from the items at or after its τ when it is flagged
(from every item otherwise) and the accuracy it predicts on the newest items, with a 95% interval.
"""

PACKAGES = ["numpy", "scipy", "matplotlib"]
MODEL_COLUMNS = ["model", "tau", "delta", "delta_lo", "delta_hi", "p_value", "q_value", "flagged", "near_release",
                 "lr", "z_max", "replicates", "theta", "items"]
CATEGORY_COLUMNS = ["model", "level", "against", "shift", "shift_lo", "shift_hi", "p_value", "q_value", "differs",
                    "items_level", "items_against"]
BIN_COLUMNS = ["model", "bin", "items", "trials", "correct", "expected", "offset", "offset_lo", "offset_hi"]
PREDICT_COLUMNS = ["model", "flagged", "items_all", "items_used", "theta_all", "theta_all_lo", "theta_all_hi",
                   "theta", "theta_lo", "theta_hi", "target_items", "target_answered", "accuracy_observed",
                   "accuracy_predicted_all", "accuracy_predicted", "accuracy_predicted_lo", "accuracy_predicted_hi"]
ITEM_COLUMNS = ["item", "release", "b_early", "b_late", "shift", "shift_lo", "shift_hi", "models_early",
                "models_late", "p_value", "q_value", "flagged"]


def parse_args(argv):
    parser = command_parser("drift.py", __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("matrix", metavar="MATRIX", help="count matrix CSV or graded responses CSV")
    parser.add_argument("--item-meta", required=True, metavar="ITEMS_CSV", help="per-item table (item + columns)")
    parser.add_argument("--by", required=True, metavar="COLUMN", help="item column to test (date, number, category)")
    parser.add_argument("--model-meta", metavar="MODELS_CSV", default=None,
                        help="per-model table: model, release and/or cutoff dates (near_release in models.csv)")
    parser.add_argument("--slopes-by", metavar="COLUMN", default=None,
                        help="item column with one discrimination per value (default: 'release' when the item "
                             "table has it; 'none' for the plain 1PL)")
    parser.add_argument("--n-trials", type=N_TRIALS, required=True, metavar="K",
                        help="responses per model-item pair (every count is in [0, K])")
    add_allow_missing(parser, "accept absent cells and K per cell (blank cells and MATRIX.trials.csv, or long "
                      "responses with fewer trials)")
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the bootstrap (default: 0)")
    parser.add_argument("--alpha", type=OPEN_PROBABILITY, default=0.05,
                        help="false discovery rate for 'flagged' / 'differs' (default: 0.05)")
    parser.add_argument("--min-items", type=integer(1, 1_000_000), default=20, metavar="N",
                        help="a step leaves at least N answered items on each side (default: 20)")
    parser.add_argument("--max-replicates", type=integer(100, 1_000_000), default=4000, metavar="R",
                        help="bootstrap replicates at most per model, in batches of 500 until 20 exceed the "
                             "observed statistic (default: 4000)")
    parser.add_argument("--tau-near-cutoff", action="store_true",
                        help="search τ only within one month of each model's cut-off date (its release date when "
                             "the cut-off is blank) from --model-meta; models with neither keep the full search")
    parser.add_argument("--check-leave-out", type=integer(0, 1000), default=3, metavar="N",
                        help="measure the leave-out approximation against N exact refits (default: 3)")
    parser.add_argument("--predict-after", nargs="?", const="", default=None, metavar="FROM",
                        help="also write predict.csv: each model's ability without the items before its τ when "
                             "it is flagged, and its predicted accuracy on the newest items: the newest release "
                             "(item column 'release'), else the newest bin, or the items whose --by value is at "
                             "or after FROM (a date: its month; a number)")
    parser.add_argument("--output-dir", required=True, metavar="DIR", help="folder for the outputs")
    parser.add_argument("--json", action="store_true", help="print the JSON record instead of a summary")
    add_quiet(parser)
    return parser.parse_args(argv)


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if not math.isfinite(value) else f"{value:.6g}"
    return str(value)


def _writer(rows: list, columns: list):
    def write(handle) -> None:
        out = csv.writer(handle, lineterminator="\n")
        out.writerow(columns)
        for row in rows:
            out.writerow([_cell(row.get(c)) for c in columns])
    return write


def _clean(obj):
    """JSON-safe: NaN → None, NumPy scalars → Python."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    return obj


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    from pathlib import Path

    names = ["models.csv", "bins.csv", "items.csv", "drift.json"] + (["predict.csv"] if args.predict_after is not None
                                                                      else [])
    inputs = [args.matrix, args.item_meta, args.model_meta]
    plan_outputs(inputs=inputs, folders=[(args.output_dir, names)])
    from benchmeasure.base.progress import show_progress
    from benchmeasure.core.fixed_scale_inputs import input_records, read_counts
    from benchmeasure.core.item_meta import covariate, read_item_meta, read_model_meta

    matrix = read_counts(args.matrix, args.n_trials, args.allow_missing)
    if len(matrix.models) < 3:
        fail(f"{args.matrix}: {len(matrix.models)} model(s); drift needs at least 3 (each is judged against the rest)")
    meta = read_item_meta(args.item_meta, matrix.items)
    cov = covariate(args.item_meta, meta, args.by)
    model_dates = read_model_meta(args.model_meta, matrix.models) if args.model_meta else None
    slopes_by = args.slopes_by if args.slopes_by is not None else ("release" if "release" in meta else "none")
    if slopes_by != "none" and slopes_by not in meta:
        fail(f"{args.item_meta}: no column {slopes_by!r} for --slopes-by (columns: {', '.join(meta)})")
    if slopes_by != "none" and any(not v for v in meta[slopes_by]):
        fail(f"{args.item_meta}: column {slopes_by!r} (--slopes-by) is blank for some items")
    if cov.kind != "category" and len(set(cov.order)) < 2:
        fail(f"{args.item_meta}: column {args.by!r} has one value; nothing to compare")
    if cov.kind == "category" and len(set(cov.values)) < 2:
        fail(f"{args.item_meta}: column {args.by!r} has one value; nothing to compare")
    if args.tau_near_cutoff and model_dates is None:
        fail("--tau-near-cutoff needs --model-meta (each model's cut-off or release date)")
    if args.tau_near_cutoff and cov.kind != "date":
        fail(f"--tau-near-cutoff needs a date --by column; {args.by!r} is a {cov.kind} column")
    predict = None
    if args.predict_after is not None:
        from benchmeasure.analyses.drift_predict import prediction_target

        predict = prediction_target(cov, meta.get("release"), args.predict_after or None, args.item_meta)
    if not args.quiet and not args.json:
        show_progress("benchmeasure.analyses.drift", sys.stderr)
    from benchmeasure.analyses.drift import DriftSettings, run_drift

    settings = DriftSettings(alpha=args.alpha, min_side=args.min_items, max_replicates=args.max_replicates,
                             seed=args.seed, check_models=args.check_leave_out, predict=predict,
                             tau_near=args.tau_near_cutoff)
    report = run_drift(matrix, cov, None if slopes_by == "none" else meta[slopes_by], meta.get("release"),
                       model_dates, settings)
    out = Path(args.output_dir)
    ordered = cov.kind != "category"
    columns = MODEL_COLUMNS if ordered else CATEGORY_COLUMNS
    if ordered and model_dates is None:
        columns = [c for c in columns if c != "near_release"]
    if ordered and args.tau_near_cutoff:
        columns = [*columns, "tau_search"]
    record = _clean({
        "by": args.by, "kind": cov.kind, "models_tested": len(report.models),
        "flagged": [r["model"] for r in report.models if r.get("flagged")],
        "differs": sorted({r["model"] for r in report.models if r.get("differs")}),
        "models": report.models, "items_tested": len(report.items),
        "items_flagged": [r["item"] for r in report.items if r["flagged"]],
        "items_skipped": report.items_skipped, "items_note": report.items_note,
        "slopes": report.slopes or None, "slopes_by": slopes_by,
        "leave_out_error": report.leave_out_error or None,
        "predict": {"target": report.predict_target, "models": report.predictions} if predict else None,
        "settings": {"n_trials": args.n_trials, "allow_missing": args.allow_missing, "seed": args.seed,
                     "alpha": args.alpha, "min_items": args.min_items, "max_replicates": args.max_replicates,
                     "tau_near_cutoff": args.tau_near_cutoff, "predict_after": args.predict_after,
                     "model": "P = σ(a_release·(θ + δ·[x < τ] − b)), MAP fit, leave-one-model-out b"},
        "figures": _figure_files(report.figures),
        "inputs": input_records(inputs), **provenance(PACKAGES), "wall_time_s": time.perf_counter() - start,
    })
    if not ordered:
        record.pop("flagged")
    else:
        record.pop("differs")
    with all_or_nothing():
        with atomic_write(out / "models.csv") as handle:
            _writer(report.models, columns)(handle)
        if report.bins:
            with atomic_write(out / "bins.csv") as handle:
                _writer(report.bins, BIN_COLUMNS)(handle)
        if report.items:
            with atomic_write(out / "items.csv") as handle:
                _writer(report.items, ITEM_COLUMNS)(handle)
        if predict:
            with atomic_write(out / "predict.csv") as handle:
                _writer(report.predictions, PREDICT_COLUMNS)(handle)
        if report.figures:
            from benchmeasure.analyses.drift_plots import figure_name, step_figure

            for model, data in report.figures.items():
                step_figure(out / "figures" / f"{figure_name(model)}.png", model, data)
        write_json(out / "drift.json", record)
    if args.json:
        print(result_json(record))
        return 0
    _summary(args, cov, report, record)
    return 0


def _figure_files(figures: dict) -> dict:
    """``{model: figures/<name>.png}``, each flagged model's figure inside the output folder (the explorer reads it)."""
    if not figures:
        return {}
    from benchmeasure.analyses.drift_plots import figure_name

    return {model: f"figures/{figure_name(model)}.png" for model in figures}


def _summary(args, cov, report, record) -> None:
    if cov.kind == "category":
        rows = [r for r in report.models if r["differs"]]
        print(f"{len({r['model'] for r in rows})} of {len({r['model'] for r in report.models})} models differ by "
              f"{args.by} (BH q ≤ {args.alpha}); a difference by {args.by} is not contamination:")
        for r in rows:
            print(f"  {r['model']} differs by {args.by}: {r['shift']:+.2f} logits on {r['level']!r} against "
                  f"{r['against']!r} [{r['shift_lo']:+.2f}, {r['shift_hi']:+.2f}], q = {r['q_value']:.3g}")
    else:
        flagged = [r for r in report.models if r["flagged"]]
        what = "item date" if cov.kind == "date" else args.by
        print(f"{len(flagged)} of {len(report.models)} models flagged: better on items before a step in {what} "
              f"(BH q ≤ {args.alpha}, p calibrated for the search over τ)")
        for r in flagged:
            near = "" if r.get("near_release") is None else f", near release/cut-off: {r['near_release']}"
            print(f"  {r['model']}: τ = {r['tau']}, δ = {r['delta']:+.2f} [{r['delta_lo']:+.2f}, "
                  f"{r['delta_hi']:+.2f}] logits, p = {r['p_value']:.2g}, q = {r['q_value']:.2g}{near}")
        if report.predict_target:
            _predictions(report)
        errors = (record.get("leave_out_error") or {}).get("models") or []
        if errors:
            worst = max(e["max_abs_b_error"] for e in errors)
            print(f"leave-out approximation vs exact refits ({len(errors)} models): max |Δb| = {worst:.3g} logits")
    if report.items:
        print(f"items: {len(record['items_flagged'])} of {len(report.items)} drift between panels (BH q ≤ "
              f"{args.alpha}; {report.items_note})")
    elif report.items_skipped:
        print(f"items: skipped ({report.items_skipped})")
    print(f"wrote {args.output_dir}")


def _predictions(report) -> None:
    rows = [r for r in report.predictions if r["flagged"]]
    print(f"predicted accuracy on {report.predict_target} (95% interval from the ability's; predict.csv has "
          "every model):")
    for r in rows:
        seen = ("" if r["accuracy_observed"] is None else
                f"; observed {r['accuracy_observed']:.1%} on {r['target_answered']} answered")
        print(f"  {r['model']}: ability from its {r['items_used']} items after τ: θ = {r['theta']:+.2f} "
              f"[{r['theta_lo']:+.2f}, {r['theta_hi']:+.2f}] (all {r['items_all']} items: {r['theta_all']:+.2f}); "
              f"predicted {r['accuracy_predicted']:.1%} [{r['accuracy_predicted_lo']:.1%}, "
              f"{r['accuracy_predicted_hi']:.1%}] (from all items: {r['accuracy_predicted_all']:.1%}){seen}")
    if not rows:
        print("  no model is flagged: each keeps the ability from all its items")
