"""The explorer's "use cases" section: what ``benchmeasure browse report`` found, as rows the page shows.

Each report becomes one card: its facet queries, the slices' overlap, and per facet and benchmark the slice's
difficulty coverage (DDM and Max Gap beside random slices of the same size, the z range) and its rank stability
(Kendall tau of the abilities the slice implies, with its posterior interval, and of accuracies, with its
bootstrap interval; the models that move most), and whether the slice's widest gap is resolved (its edges at
least 2 posterior sds of their difference apart, :mod:`benchmeasure.core.resolution`). Numbers are formatted
here, so the page's script only places strings (with ``textContent``).
"""

from __future__ import annotations

import os

from benchmeasure.base.errors import fail
from benchmeasure.base.files import read_json


def _num(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _interval(interval) -> str:
    return f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""


def _resolved(record: dict | None) -> str:
    if not record or record.get("resolved") is None:
        return "–"
    gap = record["widest_gaps"][0]
    verdict = "yes" if record["resolved"] else "no"
    apart = "posterior sd 0" if gap["separation"] is None else f"{gap['separation']:.1f} sd"
    return f"{verdict} (z {gap['left']:.2f}–{gap['right']:.2f}, {apart})"


def _facet_rows(report: dict, where: str) -> list[dict]:
    rows = []
    for facet in report["slices"]:
        for name, part in facet["per_benchmark"].items():
            d = part.get("difficulty", {})
            random = d.get("random_slice") or {}
            row = {"query": facet["query"], "benchmark": name, "items": str(facet["benchmarks"][name]),
                   "ddm": f"{_num(d.get('ddm'))} (random {_num(random.get('ddm_mean'))})",
                   "max_gap": f"{_num(d.get('max_gap'))} (random {_num(random.get('max_gap_mean'))})",
                   "z_range": "–" if "z_range" not in d else f"{d['z_range'][0]:.2f}–{d['z_range'][1]:.2f}",
                   "resolved": _resolved(d.get("resolution")),
                   "tau": "–", "tau_theta": "–", "movers": "", "movers_theta": ""}
            ranking = part.get("ranking") or {}
            if ranking.get("kendall_tau") is not None:
                row["tau"] = _num(ranking["kendall_tau"], 2) + _interval(ranking.get("tau_interval"))
                row["movers"] = "; ".join(f"{m['model']} {m['rank_benchmark']:g} → {m['rank_slice']:g}"
                                          for m in ranking.get("movers", []))
            theta = ranking.get("abilities") or {}
            if theta.get("kendall_tau") is not None:
                row["tau_theta"] = _num(theta["kendall_tau"], 2) + _interval(theta.get("tau_interval"))
                row["movers_theta"] = "; ".join(
                    f"{m['model']} {m['rank_benchmark']:g} → {m['rank_slice']:g} "
                    f"[{m['rank_slice_interval'][0]:g}–{m['rank_slice_interval'][1]:g}]"
                    for m in theta.get("movers", []))
            rows.append(row)
    if not rows:
        fail(f"{where}: the report has no slice")
    return rows


def read_use_cases(path: str | os.PathLike) -> dict:
    """The page's view of one ``browse report`` JSON file."""
    where = os.fspath(path)
    # strict: a missing file, a NaN or Infinity (a hand-made report) is one error line, never shown on the page
    report = read_json(where, "use-case report of benchmeasure browse report")
    try:
        rows = _facet_rows(report, where)
        overlap = [f"facets {o['a'] + 1} and {o['b'] + 1} share {o['shared']} items (Jaccard {o['jaccard']:.2f})"
                   for o in report["overlap"]]
        queries = [str(q) for q in report["queries"]]
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        fail(f"{where}: not a report of benchmeasure browse report (missing or wrong field: {exc})")
    return {"source": where, "queries": queries, "overlap": overlap, "rows": rows}
