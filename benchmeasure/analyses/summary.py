"""The benchmark summary of paper Table 1: DDM, Max Gap, Top-5 Sum and size, with marks.

An entry is marked (bold in Markdown, ``*`` in plain text) when it reaches the paper's
highlight threshold: DDM ≥ 0.10, Max Gap ≥ 0.10, Top-5 Sum ≥ 0.30 (Table 1 caption). The
counts of marked benchmarks per metric are the project page's headline numbers
(10/25, 8/25, 9/25 over the paper's 25 benchmarks).

Domains are not part of a benchmark folder; they come from a ``benchmark,domain`` CSV
(by default the paper's Table 3 rows in ``data/paper_reported/table3.csv``). A benchmark
missing from it has an empty domain.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import fail
from benchmeasure.base.resources import package_file
from benchmeasure.core.benchmarks import Benchmark
from benchmeasure.core.metrics import diagnose

THRESHOLDS = {"ddm": 0.10, "max_gap": 0.10, "top5_gap_sum": 0.30}
LABELS = {"ddm": "DDM", "max_gap": "Max Gap", "top5_gap_sum": "Top-5 Sum"}
PLUGIN_NOTE = ("Values are plug-in (the paper's definition: the metrics of the posterior-mean difficulties). "
               "Estimation noise fills gaps and, at one trial per cell, makes a staircase. Beside each value, the "
               "TRUE metric as the fit's calibration sees it: its estimate (≈) and calibrated 94 % interval, where the "
               "fit made one (a simulation at the fit's own models, items, trials and holes; 'uncalibrated' where "
               "it did not); the interval is for the true value, so it need not contain the plug-in. Then whether "
               "the widest gap is resolved (its edges at least 2 posterior sds apart; '?' without b_sd) "
               "(docs/gap_noise.md). Items and models flagged: the fit's model-fit check, where the fit folder has one "
               "(check_fit/; benchmeasure fit writes it unless --no-check-fit; docs/model_fit.md), else 'not checked'.")
#: the CSV's model-fit columns (blank where the benchmark's fit was not checked)
FIT_COLUMNS = {"items_flagged": "items_flagged", "items_checked": "items", "models_flagged": "models_flagged",
               "models_checked": "models"}
DEFAULT_DOMAINS = package_file("data", "paper_reported", "table3.csv")


@dataclass(frozen=True)
class SummaryRow:
    """One row of Table 1."""

    benchmark: str
    domain: str
    ddm: float
    max_gap: float
    top5_gap_sum: float
    items: int
    calibrated: dict | None = None   # metric → {"low", "high", ...} from the fit's diagnostics.json; None: uncalibrated
    calibration_refused: str | None = None
    max_gap_resolved: bool | None = None  # None: no b_sd to judge by
    model_fit: dict | None = None   # core.fit_check_text.check_beside's state; None: not looked for (not checked)

    def marked(self, metric: str) -> bool:
        return getattr(self, metric) >= THRESHOLDS[metric]

    def as_dict(self) -> dict:
        return {"benchmark": self.benchmark, "domain": self.domain, "ddm": self.ddm, "max_gap": self.max_gap,
                "top5_gap_sum": self.top5_gap_sum, "items": self.items,
                "marked": {m: self.marked(m) for m in THRESHOLDS},
                "calibrated": None if self.calibrated is None else {
                    m: {k: e[k] for k in ("estimate", "low", "high", "known_world_width", "spans_most") if k in e}
                    for m, e in self.calibrated.items()},
                "calibration_refused": self.calibration_refused, "max_gap_resolved": self.max_gap_resolved,
                "model_fit": self.fit_record()}

    def fit_state(self) -> dict:
        return self.model_fit or {"checked": False, "why": "no fit folder"}

    def fit_record(self) -> dict:
        """The model-fit check in a row's JSON: the counts and the summary line, or why there is none."""
        state = self.fit_state()
        if not state["checked"]:
            return {"checked": False, "why": state["why"]}
        return {k: state[k] for k in ("checked", "items_flagged", "items", "models_flagged", "models", "draws",
                                      "fdr", "summary", "record")}

    def interval(self, metric: str) -> str:
        if self.calibrated is None or metric not in self.calibrated:
            return "not calibrated" if self.calibration_refused else "uncalibrated"
        e = self.calibrated[metric]
        return ("" if e.get("estimate") is None else f"≈ {e['estimate']:.3f} ") + f"[{e['low']:.3f}, {e['high']:.3f}]"


def read_domains(path: str | os.PathLike) -> dict:
    """``benchmark → domain`` from a CSV with those two columns (others ignored), read strictly
    (:mod:`benchmeasure.base.csv_table`: UTF-8, one field per header column, no blank benchmark name)."""
    path = Path(path)
    if not path.is_file():
        fail(f"{path}: no such domain file")
    table = read_table(path, required=("benchmark", "domain"), nonblank=("benchmark",),
                       expected="columns benchmark,domain")
    domains: dict = {}
    for r, (name, domain) in enumerate(zip(table.column("benchmark"), table.column("domain"))):
        if name in domains and domains[name] != domain:
            fail(f"{table.where(r, 'benchmark')}: {name!r} is listed again with another domain "
                 f"({domains[name]!r}, then {domain!r})")
        domains[name] = domain
    return domains


def summarize(benchmarks: list[Benchmark], domains: dict) -> list[SummaryRow]:
    """Compute the Table 1 row of each benchmark (min–max normalized difficulties)."""
    from benchmeasure.core.calibrated_text import calibrated_beside
    from benchmeasure.core.fit_check_text import check_beside

    rows = []
    for b in benchmarks:
        path = Path(b.folder) / "difficulty.csv"
        d = diagnose(b.difficulties, top_k=5, where=str(path))
        block, calibrated, refused = calibrated_beside(path), None, None
        if block is not None and "refused" in block:
            refused = block["refused"]
        elif block is not None and all(abs(block["metrics"][m]["plugin"] - v) <= 1e-6 for m, v in
                                       (("ddm", d.ddm), ("max_gap", d.max_gap), ("top5_gap_sum", d.top_k_gap_sum))
                                       if m in block["metrics"]):
            calibrated = block["metrics"]  # stored for exactly these values (not for a file edited since)
        rows.append(SummaryRow(b.name, domains.get(b.name, ""), d.ddm, d.max_gap, d.top_k_gap_sum, d.items,
                               calibrated, refused, _widest_gap_resolved(path, b.difficulties), check_beside(path)))
    return rows


def _widest_gap_resolved(path: Path, means) -> bool | None:
    """Whether the widest gap's edges are ≥ 2 posterior sds apart (:func:`benchmeasure.core.resolution.gap_table`),
    or None when the file has no complete b_sd column."""
    from benchmeasure.core.difficulty_file import read_difficulty_column
    from benchmeasure.core.resolution import gap_table

    table = read_table(path)
    if "b_sd" not in table.header or any(not cell.strip() for cell in table.column("b_sd")):
        return None
    sds = read_difficulty_column(path, "b_sd").values
    return bool(gap_table(means, sds, None, 1)[0]["resolved"])


def marked_counts(rows: list[SummaryRow]) -> dict:
    """How many benchmarks reach each threshold: ``{metric: (count, total)}``."""
    return {m: (sum(r.marked(m) for r in rows), len(rows)) for m in THRESHOLDS}


def markdown_table(rows: list[SummaryRow]) -> str:
    """Table 1 as Markdown, marked entries in bold, followed by the counts."""
    true = "true ≈ estimate [calibrated 94 %]"
    from benchmeasure.core.fit_check_text import flag_cells

    lines = [f"| Benchmark | Domain | DDM (plug-in) | {true} | Max Gap (plug-in) | {true} | "
             f"widest gap resolved | Top-5 Sum (plug-in) | {true} | # | items flagged | models flagged |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [(f"**{getattr(r, m):.3f}**" if r.marked(m) else f"{getattr(r, m):.3f}") + f" | {r.interval(m)}"
                 for m in THRESHOLDS]
        resolved = {True: "yes", False: "no", None: "?"}[r.max_gap_resolved]
        cells[1] += f" | {resolved}"
        flagged = " | ".join(flag_cells(r.fit_state()))
        lines.append(f"| {r.benchmark} | {r.domain} | {' | '.join(cells)} | {r.items} | {flagged} |")
    lines.append("")
    lines.append("Marked (bold): " + ", ".join(
        f"{LABELS[m]} ≥ {THRESHOLDS[m]:.2f} in {c}/{n}" for m, (c, n) in marked_counts(rows).items()))
    lines.append("")
    lines.append(PLUGIN_NOTE)
    return "\n".join(lines) + "\n"


def write_csv(rows: list[SummaryRow], handle) -> None:
    """Machine-readable Table 1: one row per benchmark, marks as 0/1 columns."""
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(["benchmark", "domain", "ddm", "max_gap", "top5_gap_sum", "items",
                     *(f"{m}_marked" for m in THRESHOLDS),
                     *(f"{m}_{end}" for m in THRESHOLDS for end in ("low", "high")), "max_gap_resolved",
                     *(f"{m}_estimate" for m in THRESHOLDS), *FIT_COLUMNS])
    for r in rows:
        bounds = [("" if r.calibrated is None or m not in r.calibrated else repr(r.calibrated[m][end]))
                  for m in THRESHOLDS for end in ("low", "high")]
        writer.writerow([r.benchmark, r.domain, repr(r.ddm), repr(r.max_gap), repr(r.top5_gap_sum), r.items,
                         *(int(r.marked(m)) for m in THRESHOLDS), *bounds,
                         {True: "1", False: "0", None: ""}[r.max_gap_resolved],
                         *("" if r.calibrated is None or r.calibrated.get(m, {}).get("estimate") is None
                           else repr(r.calibrated[m]["estimate"]) for m in THRESHOLDS),
                         *(str(r.fit_state()[key]) if r.fit_state()["checked"] else ""
                           for key in FIT_COLUMNS.values())])
