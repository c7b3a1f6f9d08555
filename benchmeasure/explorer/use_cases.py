"""The explorer's "use cases" section: what ``benchmeasure browse report`` found, as rows the page shows.

Each report becomes one card: its facet queries, the slices' overlap, and per facet and benchmark the slice's
difficulty coverage (DDM and Max Gap beside random slices of the same size, the z range) and its rank stability
(Kendall tau with its bootstrap interval, the models that move most). Numbers are formatted here, so the page's
script only places strings (with ``textContent``).
"""

from __future__ import annotations

import json
import os

from benchmeasure.base.errors import fail


def _num(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


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
                   "tau": "–", "tau_theta": "–", "movers": ""}
            ranking = part.get("ranking")
            if ranking and ranking.get("kendall_tau") is not None:
                interval = ranking.get("tau_interval")
                row["tau"] = _num(ranking["kendall_tau"], 2) + (
                    f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")
                theta = ranking.get("abilities") or {}
                if theta.get("kendall_tau") is not None:
                    interval = theta.get("tau_interval")
                    row["tau_theta"] = _num(theta["kendall_tau"], 2) + (
                        f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")
                row["movers"] = "; ".join(f"{m['model']} {m['rank_benchmark']:g} → {m['rank_slice']:g}"
                                          for m in ranking.get("movers", []))
            rows.append(row)
    if not rows:
        fail(f"{where}: the report has no slice")
    return rows


def read_use_cases(path: str | os.PathLike) -> dict:
    """The page's view of one ``browse report`` JSON file."""
    where = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{where}: cannot read the use-case report ({exc})")
    try:
        rows = _facet_rows(report, where)
        overlap = [f"facets {o['a'] + 1} and {o['b'] + 1} share {o['shared']} items (Jaccard {o['jaccard']:.2f})"
                   for o in report["overlap"]]
        queries = [str(q) for q in report["queries"]]
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        fail(f"{where}: not a report of benchmeasure browse report (missing or wrong field: {exc})")
    return {"source": where, "queries": queries, "overlap": overlap, "rows": rows}
