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


def _real(value) -> float:
    """``value`` when it is a number (a JSON true or a text is not; read_json has refused NaN and infinities)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{value!r} is not a number")
    return value


def _num(value, digits: int = 3) -> str:
    return "–" if value is None else f"{_real(value):.{digits}f}"


def _interval(interval) -> str:
    return f" [{_real(interval[0]):.2f}, {_real(interval[1]):.2f}]" if interval else ""


def _mover(m: dict, interval: bool = False) -> str:
    if not isinstance(m["model"], str):
        raise TypeError(f"a mover's model is {m['model']!r}, not a name")
    text = f"{m['model']} {_real(m['rank_benchmark']):g} → {_real(m['rank_slice']):g}"
    if interval:
        low, high = m["rank_slice_interval"]
        text += f" [{_real(low):g}–{_real(high):g}]"
    return text


def _resolved(record: dict | None) -> str:
    if not record or record.get("resolved") is None:
        return "–"
    gap = record["widest_gaps"][0]
    verdict = "yes" if record["resolved"] else "no"
    apart = "posterior sd 0" if gap["separation"] is None else f"{_real(gap['separation']):.1f} sd"
    return f"{verdict} (z {_real(gap['left']):.2f}–{_real(gap['right']):.2f}, {apart})"


def _facet_rows(report: dict, where: str) -> list[dict]:
    rows = []
    for facet in report["slices"]:
        if not isinstance(facet["query"], str):
            raise TypeError(f"a slice's query is {type(facet['query']).__name__}, not text")
        for name, part in facet["per_benchmark"].items():
            size = facet["benchmarks"][name]
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise TypeError(f"the size of the slice of {name!r} is {size!r}, not a count")
            d = part.get("difficulty", {})
            random = d.get("random_slice") or {}
            row = {"query": facet["query"], "benchmark": name, "items": str(size),
                   "ddm": f"{_num(d.get('ddm'))} (random {_num(random.get('ddm_mean'))})",
                   "max_gap": f"{_num(d.get('max_gap'))} (random {_num(random.get('max_gap_mean'))})",
                   "z_range": "–" if "z_range" not in d else
                   f"{_real(d['z_range'][0]):.2f}–{_real(d['z_range'][1]):.2f}",
                   "resolved": _resolved(d.get("resolution")),
                   "tau": "–", "tau_theta": "–", "movers": "", "movers_theta": ""}
            ranking = part.get("ranking") or {}
            if ranking.get("kendall_tau") is not None:
                row["tau"] = _num(ranking["kendall_tau"], 2) + _interval(ranking.get("tau_interval"))
                row["movers"] = "; ".join(_mover(m) for m in ranking.get("movers", []))
            theta = ranking.get("abilities") or {}
            if theta.get("kendall_tau") is not None:
                row["tau_theta"] = _num(theta["kendall_tau"], 2) + _interval(theta.get("tau_interval"))
                row["movers_theta"] = "; ".join(_mover(m, interval=True) for m in theta.get("movers", []))
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
        queries = report["queries"]
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise TypeError("queries is not a list of texts")
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        fail(f"{where}: not a report of benchmeasure browse report (missing or wrong field: {exc})")
    return {"source": where, "queries": queries, "overlap": overlap, "rows": rows}
