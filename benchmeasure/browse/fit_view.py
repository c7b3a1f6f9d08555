"""Each listed item's fit, from a ``check-fit`` of its benchmark (``browse query|report --check-fit``).

A slice of a use case is only as good as its items: an item whose success rises as ability falls (a wrong key, a
grader that fails the right answer) or whose response curve misfits the 1PL measures something else. ``browse``
shows, beside each listed item, the p-value of ``check-fit``'s item test (``items.csv``'s ``p_value``: Bonferroni
over the curve and slope tests) and its flag (``flagged`` at the check's false discovery rate, ``against`` when it
runs against ability); ``report`` also counts the misfitting items of each slice.

``--check-fit NAME=PATH`` names the benchmark of the index that the check belongs to (repeatable), or a bare
``PATH`` when the index holds one benchmark. The check must be of that benchmark (:mod:`benchmeasure.analyses.
fit_flags`): its items among the benchmark's, every item with a fitted difficulty in it, and, when the difficulty
file the benchmark was indexed with has its fit's ``diagnostics.json`` beside it, the same matrix.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.analyses.fit_flags import check_matches, fit_matrix_sha256, read_check_fit
from benchmeasure.base.errors import fail


def read_checks(index, values: list[str]) -> dict:
    """``{benchmark: FitFlags}`` of the ``--check-fit`` values, each checked against its benchmark in ``index``."""
    known = list(index.manifest["benchmarks"])
    out = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep:
            if len(known) != 1:
                fail(f"--check-fit {value}: the index holds {len(known)} benchmarks ({', '.join(known)}); name the "
                     "one the check is of, as NAME=PATH")
            name, path = known[0], value
        if not name or not path:
            fail(f"--check-fit {value!r}: expected NAME=PATH (the benchmark's name in the index, then the check)")
        if name not in known:
            fail(f"--check-fit {value}: no benchmark {name!r} in the index (it has {', '.join(known)})")
        if name in out:
            fail(f"--check-fit: benchmark {name!r} given twice")
        flags = read_check_fit(path)
        rows = np.flatnonzero(np.asarray(index.benchmarks) == name)
        items = [index.item_ids[r] for r in rows]
        fitted = [index.item_ids[r] for r in rows if np.isfinite(index.b[r])]
        source = index.manifest["benchmarks"][name].get("difficulty") or {}
        sha, record = fit_matrix_sha256(source["path"]) if source.get("path") else (None, None)
        check_matches(flags, items, f"benchmark {name!r} of the index {index.folder}", sha, record, required=fitted)
        out[name] = flags
    return out


def hit_fit(checks: dict, hit) -> dict:
    """The fit fields of one listed item (``None`` each where its benchmark has no check)."""
    flags = checks.get(hit.benchmark)
    row = flags.rows.get(hit.item_id) if flags is not None else None
    if row is None:
        return {"fit_p_value": None, "fit_flagged": None, "fit_against_ability": None}
    return {"fit_p_value": row["p_value"], "fit_flagged": row["flagged"] or row["against_ability"],
            "fit_against_ability": row["against_ability"]}


def fit_label(checks: dict, hit) -> str:
    """A column of ``browse query``'s table: the p-value, and the flag when the item misfits."""
    flags = checks.get(hit.benchmark)
    return "-" if flags is None else flags.label(hit.item_id)


def slice_fit(flags, item_ids: list[str]) -> dict:
    """A slice's items against one benchmark's check: how many misfit, which, and why."""
    rows = [(item, flags.rows[item]) for item in item_ids if item in flags.rows]
    misfits = [{"item_id": item, "p_value": row["p_value"], "against_ability": row["against_ability"],
                "reason": row["reason"]} for item, row in rows if row["flagged"] or row["against_ability"]]
    return {"check": flags.items_csv, "fdr": flags.fdr, "items_checked": len(rows), "misfits": len(misfits),
            "misfit_items": misfits}
