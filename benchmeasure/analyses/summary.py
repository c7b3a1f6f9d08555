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
               "Estimation noise fills gaps and, at one trial per cell, makes a staircase; for intervals, "
               "a noise-aware estimate and whether each gap is resolved, run benchmeasure posterior-metrics on a fit "
               "(docs/gap_noise.md).")
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

    def marked(self, metric: str) -> bool:
        return getattr(self, metric) >= THRESHOLDS[metric]

    def as_dict(self) -> dict:
        return {"benchmark": self.benchmark, "domain": self.domain, "ddm": self.ddm, "max_gap": self.max_gap,
                "top5_gap_sum": self.top5_gap_sum, "items": self.items,
                "marked": {m: self.marked(m) for m in THRESHOLDS}}


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
    rows = []
    for b in benchmarks:
        d = diagnose(b.difficulties, top_k=5, where=f"{b.folder}/difficulty.csv")
        rows.append(SummaryRow(b.name, domains.get(b.name, ""), d.ddm, d.max_gap, d.top_k_gap_sum, d.items))
    return rows


def marked_counts(rows: list[SummaryRow]) -> dict:
    """How many benchmarks reach each threshold: ``{metric: (count, total)}``."""
    return {m: (sum(r.marked(m) for r in rows), len(rows)) for m in THRESHOLDS}


def markdown_table(rows: list[SummaryRow]) -> str:
    """Table 1 as Markdown, marked entries in bold, followed by the counts."""
    lines = ["| Benchmark | Domain | DDM | Max Gap | Top-5 Sum | # |", "|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"**{getattr(r, m):.3f}**" if r.marked(m) else f"{getattr(r, m):.3f}" for m in THRESHOLDS]
        lines.append(f"| {r.benchmark} | {r.domain} | {' | '.join(cells)} | {r.items} |")
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
                     *(f"{m}_marked" for m in THRESHOLDS)])
    for r in rows:
        writer.writerow([r.benchmark, r.domain, repr(r.ddm), repr(r.max_gap), repr(r.top5_gap_sum), r.items,
                         *(int(r.marked(m)) for m in THRESHOLDS)])
