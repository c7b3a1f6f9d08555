"""Put the paper's reported numbers beside what the local data gives (``scripts/reproduce_tables.py``).

Reported values come from ``data/paper_reported/`` (see its SOURCE.md). Local values are
computed from

* ``<data-dir>/<benchmark>/difficulty.csv`` — Table 1 and the README's AIME24 example;
* ``<matrix-dir>/<benchmark>_response_matrix.csv`` with K rollouts per item — Table 5
  (K from the paper's Table 3 or ``--n-trials NAME=K``);
* ``<robustness-dir>/<benchmark>/robustness.json`` as written by ``irt_robustness.py`` —
  Tables 6–10;
* a BenchFill run folder's ``summary.json`` (``run_experiment.sh``), one per benchmark the
  user names (``--benchfill-run BENCH=DIR``) — Table 2: its ``baseline``, ``benchfill`` and
  ``oracle`` → ``top3_gap_sum_reduction`` (%) and ``target_deviation``
  (:func:`read_benchfill_summary`);
* a ``detect_improvement.py --json`` (or ``--output``) file per Table 12 row the user names
  (``--detection BENCH:MODEL:VARIANT=FILE``) — Table 12: ``gain_points``, ``p_value``,
  ``detected`` (:func:`read_detection`).

A benchmark or row whose data is missing is listed as absent with what was looked for (or the
option that would supply it); nothing is ever filled in.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from benchmeasure.analyses.checks import check_matrix
from benchmeasure.analyses.summary import marked_counts, summarize
from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import fail
from benchmeasure.base.files import current_names
from benchmeasure.base.resources import package_file
from benchmeasure.core.benchmarks import load_benchmark
from benchmeasure.core.matrix import read_matrix
from benchmeasure.core.metrics import diagnose

REPORTED_DIR = package_file("data", "paper_reported")  # data/paper_reported/ in a checkout links here

TABLES = {
    "table1": ("Table 1: DDM, Max Gap, Top-5 Sum, # items", ["ddm", "max_gap", "top5_gap_sum", "items"]),
    "table1_counts": ("Table 1 counts: benchmarks at or over each threshold (of 25)",
                      ["benchmarks_at_or_over", "benchmarks_total"]),
    "readme_example": ("README example: AIME24", ["items", "ddm", "max_gap"]),
    "table2": ("Table 2: gap filling", ["top3_reduction_baseline_pct", "top3_reduction_benchfill_pct",
                                        "top3_reduction_oracle_pct", "target_dev_baseline",
                                        "target_dev_benchfill"]),
    "table5": ("Table 5: response-matrix checks", ["model_information", "item_information",
                                                   "model_inversion_rate", "item_inversion_rate"]),
    "table6": ("Table 6: 1PL MCMC diagnostics", ["max_r_hat", "min_ess_bulk", "divergences"]),
    "table7": ("Table 7: leave-one-model-out", ["pearson_mean", "pearson_min", "spearman_mean", "spearman_min"]),
    "table8": ("Table 8: BIC, 1PL vs 2PL", ["bic_1pl", "bic_2pl", "delta_bic", "selected"]),
    "table9": ("Table 9: 1PL and 2PL diagnostics", ["max_r_hat", "min_ess_bulk", "divergences"]),
    "table10": ("Table 10: MIRT diagnostics", ["max_r_hat", "min_ess_bulk", "divergences"]),
    "table12": ("Table 12: localized-improvement detection", ["gain_as_printed", "p_value", "detected"]),
}


@dataclass(frozen=True)
class Row:
    """One reported value and its local counterpart (``local`` None when absent)."""

    table: str
    key: str
    quantity: str
    reported: object
    local: object
    note: str

    @property
    def difference(self):
        if self.local is None:
            return None
        if isinstance(self.reported, (int, float)) and isinstance(self.local, (int, float)):
            return self.local - self.reported
        return "same" if str(self.local) == str(self.reported) else "differs"


def _number(text: str):
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text else value


def read_reported(table: str, reported_dir: Path = REPORTED_DIR) -> list[dict]:
    """Rows of ``<reported_dir>/<table>.csv`` with numbers parsed."""
    rows = read_table(reported_dir / f"{table}.csv", nonblank=()).records()
    return [current_names({k: _number(v) for k, v in row.items()}) for row in rows]


def _key(row: dict) -> str:
    parts = [str(row[k]) for k in ("benchmark", "model", "case", "variant", "metric") if k in row]
    return " / ".join(parts)


def _compare(table: str, reported: list[dict], local_of) -> list[Row]:
    """``local_of(row)`` returns (dict of local values or None, note)."""
    out = []
    for row in reported:
        local, note = local_of(row)
        for quantity in TABLES[table][1]:
            value = None if local is None else local.get(quantity)
            out.append(Row(table, _key(row), quantity, row[quantity], value, note))
    return out


# Table 12's variants as printed, by the short name --detection takes
VARIANTS = {"original": "Original", "benchfill": "Original + BenchFill", "baseline": "Original + Baseline"}


def _read_json(path: Path, what: str):
    if not path.is_file():
        fail(f"{path}: no such file ({what})")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{path}: not JSON ({' '.join(str(exc).split())})")


def read_benchfill_summary(folder: Path) -> tuple[dict, str]:
    """Table 2's five values from a finished BenchFill run folder, and a note naming the source.

    Parameters
    ----------
    folder : Path
        A run folder of ``run_experiment.sh`` / ``propose/benchfill.py`` holding ``summary.json``
        (written when the run finishes).

    Returns
    -------
    (dict, str)
        ``top3_reduction_{baseline,benchfill,oracle}_pct`` (the run's ``top3_gap_sum_reduction``,
        already in %), ``target_dev_{baseline,benchfill}`` (``target_deviation``; None when the
        method filled no gap), and the note.
    """
    if not folder.is_dir():
        fail(f"--benchfill-run {folder}: no such folder")
    path = folder / "summary.json"
    if not path.is_file():
        fail(f"--benchfill-run {folder}: no summary.json (an unfinished run? see 'bash run_experiment.sh status')")
    summary = _read_json(path, "BenchFill summary")
    values = {}
    for method in ("baseline", "benchfill", "oracle"):
        row = summary.get(method) if isinstance(summary, dict) else None
        if not isinstance(row, dict) or not {"top3_gap_sum_reduction", "target_deviation"} <= set(row):
            fail(f"{path}: no {method}.top3_gap_sum_reduction / target_deviation (not a BenchFill summary.json)")
        values[f"top3_reduction_{method}_pct"] = row["top3_gap_sum_reduction"]
        if method != "oracle":
            values[f"target_dev_{method}"] = row["target_deviation"]
    note = f"from {path} (run of {summary.get('benchmark')!r})"
    independent = []
    for method in ("baseline", "benchfill"):
        mean, sd = summary[method].get("target_deviation_independent"), summary[method].get(
            "target_deviation_independent_sd")
        if isinstance(mean, (int, float)) and isinstance(sd, (int, float)):
            independent.append(f"{method} {mean:.4f} ± {sd:.4f}")
    if independent:
        note += ("; target deviation of an independent re-annotation of each final item (ours, not in the paper): "
                 + ", ".join(independent))
    return values, note


def read_detection(path: Path, model: str) -> tuple[dict, str]:
    """Table 12's values from a ``detect_improvement.py --json`` output, and a note naming the source.

    The file holds one record (one model: used whatever its model is called) or a list of
    records (the one whose ``model`` is ``model``). ``gain_as_printed`` is the record's
    ``gain_points`` (percentage points, as the paper prints it), ``detected`` its flag as yes/no.
    """
    payload = _read_json(path, "detect_improvement.py --json output")
    records = payload if isinstance(payload, list) else [payload]
    keys = {"model", "gain_points", "p_value", "detected", "permutations", "alpha"}
    if not records or not all(isinstance(r, dict) and keys <= set(r) for r in records):
        fail(f"{path}: not a benchmeasure detect --json output (records need {', '.join(sorted(keys))})")
    if len(records) > 1:
        matching = [r for r in records if r["model"] == model]
        if not matching:
            fail(f"{path}: no record for model {model!r} (models: {', '.join(str(r['model']) for r in records)})")
        records = matching
    record = records[0]
    values = {"gain_as_printed": record["gain_points"], "p_value": record["p_value"],
              "detected": "yes" if record["detected"] else "no"}
    return values, (f"from {path} (model {record['model']!r}, B = {record['permutations']}, "
                    f"alpha {record['alpha']})")


def _diagnosis(data_dir: Path, name: str):
    folder = data_dir / name
    if not (folder / "difficulty.csv").is_file():
        return None, f"absent: no {folder / 'difficulty.csv'}"
    b = load_benchmark(folder)
    d = diagnose(b.difficulties, top_k=5, where=str(folder / "difficulty.csv"))
    return {"ddm": d.ddm, "max_gap": d.max_gap, "top5_gap_sum": d.top_k_gap_sum, "items": d.items}, f"from {folder}"


def _robustness(robustness_dir: Path | None, name: str, section: str, sub: str | None = None):
    if robustness_dir is None:
        return None, "absent: no --robustness-dir given"
    path = robustness_dir / name / "robustness.json"
    if not path.is_file():
        return None, f"absent: no {path}"
    record = current_names(_read_json(path, "robustness.json of scripts/irt_robustness.py"))
    if not isinstance(record, dict):
        fail(f"{path}: not a robustness record (a JSON object)")
    value = record.get(section)
    if value is not None and sub is not None:
        value = value.get(sub)
    if value is None:
        return None, f"absent: {path} has no {section}{'/' + sub if sub else ''} (rerun with that option)"
    return value, f"from {path}"


def compare_all(data_dir: Path, matrix_dir: Path, robustness_dir: Path | None, n_trials: dict,
                reported_dir: Path = REPORTED_DIR, benchfill_runs: dict | None = None,
                detections: dict | None = None) -> list[Row]:
    """Every reported row of every table with its local value or the reason it is absent.

    Parameters
    ----------
    data_dir, matrix_dir, robustness_dir, n_trials
        Where Tables 1, 5 and 6–10 look (module docstring); ``n_trials`` maps benchmark → K.
    reported_dir : Path
        The reported values (``data/paper_reported``).
    benchfill_runs : dict of str → Path, optional
        Table 2: benchmark (as in ``table2.csv``) → BenchFill run folder.
    detections : dict of (str, str, str) → Path, optional
        Table 12: (benchmark, model, variant short name of :data:`VARIANTS`) → detection JSON.
        A benchmark, model or variant with no reported row is rejected (InputError).
    """
    benchfill_runs, detections = benchfill_runs or {}, detections or {}
    table2_rows = read_reported("table2", reported_dir)
    table12_rows = read_reported("table12", reported_dir)
    known2 = [r["benchmark"] for r in table2_rows]
    for bench in benchfill_runs:
        if bench not in known2:
            fail(f"--benchfill-run {bench}=…: Table 2 reports no {bench!r} (rows: {', '.join(known2)})")
    known12 = {(r["case"], r["variant"]) for r in table12_rows}
    for bench, model, variant in detections:
        if variant not in VARIANTS:
            fail(f"--detection {bench}:{model}:{variant}=…: variant must be one of {', '.join(VARIANTS)}")
        if (f"{bench} {model}", VARIANTS[variant]) not in known12:
            cases = sorted({case.replace(" ", ":", 1) for case, _ in known12})
            fail(f"--detection {bench}:{model}:{variant}=…: Table 12 reports no such row (BENCH:MODEL: "
                 f"{', '.join(cases)})")
    benchfill = {bench: read_benchfill_summary(Path(folder)) for bench, folder in benchfill_runs.items()}
    detected = {(f"{bench} {model}", VARIANTS[variant]): read_detection(Path(path), model)
                for (bench, model, variant), path in detections.items()}
    rows = []
    rows += _compare("table1", read_reported("table1", reported_dir), lambda r: _diagnosis(data_dir, r["benchmark"]))

    def counts_of(row):
        folders = sorted(p for p in data_dir.iterdir() if (p / "difficulty.csv").is_file()) if data_dir.is_dir() else []
        if len(folders) != row["benchmarks_total"]:
            return None, f"absent: {data_dir} holds {len(folders)} of the paper's {row['benchmarks_total']} benchmarks"
        rows_ = summarize([load_benchmark(f) for f in folders], {})
        counts = marked_counts(rows_)[row["metric"]]
        return {"benchmarks_at_or_over": counts[0], "benchmarks_total": counts[1]}, f"from {data_dir}"

    rows += _compare("table1_counts", read_reported("table1_counts", reported_dir), counts_of)
    rows += _compare("readme_example", read_reported("readme_example", reported_dir),
                     lambda r: _diagnosis(data_dir, r["benchmark"]))
    rows += _compare("table2", table2_rows, lambda r: benchfill.get(
        r["benchmark"], (None, f"absent: no --benchfill-run {r['benchmark']}=RUN_DIR (a finished BenchFill run)")))
    rollouts = {r["benchmark"]: r["rollouts_per_item"] for r in read_reported("table3", reported_dir)}

    def checks_of(row):
        name = row["benchmark"]
        path = matrix_dir / f"{name}_response_matrix.csv"
        if not path.is_file():
            return None, f"absent: no {path}"
        k = n_trials.get(name, rollouts.get(name))
        if k is None:
            return None, f"absent: rollouts per item of {name} unknown (give --n-trials {name}=K)"
        return check_matrix(read_matrix(path, int(k))).as_dict(), f"from {path}, K = {k}"

    rows += _compare("table5", read_reported("table5", reported_dir), checks_of)
    rows += _compare("table6", read_reported("table6", reported_dir),
                     lambda r: _robustness(robustness_dir, r["benchmark"], "diagnostics_1pl"))
    rows += _compare("table7", read_reported("table7", reported_dir),
                     lambda r: _robustness(robustness_dir, r["benchmark"], "leave_one_model_out"))
    rows += _compare("table8", read_reported("table8", reported_dir),
                     lambda r: _robustness(robustness_dir, r["benchmark"], "bic"))
    rows += _compare("table9", read_reported("table9", reported_dir),
                     lambda r: _robustness(robustness_dir, r["benchmark"],
                                           "diagnostics_1pl" if r["model"] == "1PL" else "diagnostics_2pl"))
    rows += _compare("table10", read_reported("table10", reported_dir),
                     lambda r: _robustness(robustness_dir, r["benchmark"], "mirt", r["model"].split("-")[1]))
    rows += _compare("table12", table12_rows, lambda r: detected.get(
        (r["case"], r["variant"]),
        (None, f"absent: no --detection {r['case'].replace(' ', ':', 1)}:"
               f"{next(k for k, v in VARIANTS.items() if v == r['variant'])}=FILE "
               "(benchmeasure detect --json on pre/post rollouts)")))
    return rows


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def markdown(rows: list[Row]) -> str:
    """One Markdown section per table: key, quantity, reported, local, difference, source.

    A row key with no local value at all is folded into one line listing its reported values.
    """
    lines = []
    for table, (title, _) in TABLES.items():
        subset = [r for r in rows if r.table == table]
        if not subset:
            continue
        present = sum(r.local is not None for r in subset)
        lines += [f"## {title}", "", f"{present} of {len(subset)} reported values computed locally.", "",
                  "| Row | Quantity | Reported | Local | Local − reported | Source |", "|---|---|---|---|---|---|"]
        for key in dict.fromkeys(r.key for r in subset):
            group = [r for r in subset if r.key == key]
            if all(r.local is None for r in group) and len({r.note for r in group}) == 1:
                reported = ", ".join(f"{r.quantity} {_fmt(r.reported)}" for r in group)
                lines.append(f"| {key} | all | {reported} | absent | — | {group[0].note} |")
                continue
            for r in group:
                lines.append(f"| {key} | {r.quantity} | {_fmt(r.reported)} | {_fmt(r.local)} | "
                             f"{_fmt(r.difference)} | {r.note} |")
        lines.append("")
    return "\n".join(lines)


def write_csv(rows: list[Row], handle) -> None:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(["table", "row", "quantity", "reported", "local", "difference", "source"])
    for r in rows:
        writer.writerow([r.table, r.key, r.quantity, r.reported, "" if r.local is None else r.local,
                         "" if r.difference is None else r.difference, r.note])
