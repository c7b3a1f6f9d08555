"""How much a fit's DDM, Max Gap and widest gap move under another prior (``fit --prior-sensitivity``).

The fit is refitted with the same settings under the other prior (:mod:`benchmeasure.irt.priors`: the paper's N(0, 1)
against the hierarchical one); each number is the paper's plug-in (:func:`benchmeasure.core.metrics.plugin_values`
of the pooled posterior means), and a difference is *flagged* when it exceeds the width of the fit's own calibrated
interval of that metric (:mod:`benchmeasure.analyses.calibrated`; the widest gap's move is measured by its midpoint on
the normalized axis, against the Max Gap interval's width). Without calibrated intervals nothing is flagged, and the
line says so.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.core.metrics import largest_gaps, normalize_min_max, plugin_values


def other_prior(prior: str) -> str:
    """The prior a sensitivity check compares ``prior`` with: the hierarchical one for the paper's, else the paper's."""
    return "hierarchical" if prior == "paper" else "paper"


def readings(b_mean, items) -> dict:
    """DDM, Max Gap and the widest gap (edges on the normalized axis, and the items at them) of one fit."""
    values = plugin_values(b_mean)
    z = np.asarray(normalize_min_max([float(v) for v in b_mean]))
    gap = largest_gaps(z, 1)[0]
    order = np.argsort(z, kind="stable")
    lower = order[np.searchsorted(z[order], gap.left, side="right") - 1]
    upper = order[min(np.searchsorted(z[order], gap.right, side="left"), len(z) - 1)]
    return {"ddm": values["ddm"], "max_gap": values["max_gap"],
            "widest_gap": {"left": gap.left, "right": gap.right, "midpoint": gap.midpoint,
                           "lower_item": str(items[lower]), "upper_item": str(items[upper])}}


def compare(prior: str, fit: dict, other: str, refit: dict, calibrated: dict | None) -> dict:
    """The record of the check: both readings, each difference, the calibrated width it is held to, the flags."""
    metrics = (calibrated or {}).get("metrics") or {}
    widths = {key: metrics[key]["high"] - metrics[key]["low"] for key in ("ddm", "max_gap") if key in metrics}
    rows = {}
    for key, value, moved in (("ddm", fit["ddm"], refit["ddm"]), ("max_gap", fit["max_gap"], refit["max_gap"]),
                              ("widest_gap", fit["widest_gap"]["midpoint"], refit["widest_gap"]["midpoint"])):
        width = widths.get("max_gap" if key == "widest_gap" else key)
        difference = float(moved - value)
        rows[key] = {"difference": difference, "calibrated_width": width,
                     "flagged": None if width is None else bool(abs(difference) > width)}
    return {"prior": prior, "other": other, "fit": fit, "refit": refit, "differences": rows,
            "rule": "flagged when the difference exceeds the width of this fit's calibrated interval (Max Gap's for "
                    "the widest gap's midpoint)"}


def line(record: dict) -> str:
    """The one line ``fit`` prints."""
    a, b, d = record["fit"], record["refit"], record["differences"]

    def mark(key):
        f = d[key]["flagged"]
        return "" if f is None else (" FLAGGED" if f else "")

    def gap(r):
        g = r["widest_gap"]
        return f"{g['lower_item']}..{g['upper_item']} [{g['left']:.3f}, {g['right']:.3f}]"

    calibrated = all(d[k]["flagged"] is not None for k in d)
    flagged = [k for k in d if d[k]["flagged"]]
    verdict = ("not flagged: no calibrated intervals (fit without --no-calibrate)" if not calibrated else
               f"{'FLAGGED: ' + ', '.join(flagged) if flagged else 'none flagged'} (differences held to the "
               "calibrated interval widths)")
    return (f"prior sensitivity ({record['prior']} vs {record['other']}): DDM {a['ddm']:.4f} vs {b['ddm']:.4f}"
            f"{mark('ddm')} · Max Gap {a['max_gap']:.4f} vs {b['max_gap']:.4f}{mark('max_gap')} · widest gap "
            f"{gap(a)} vs {gap(b)}{mark('widest_gap')}; {verdict}")
