"""The calibrated intervals a fit stores in its ``diagnostics.json`` (``calibrated_intervals``), read back and put
in words for ``fit``, ``diagnose``, ``posterior-metrics`` and ``summarize``. Standard library only.

How they are made: :mod:`benchmeasure.analyses.calibrated` (docs/gap_noise.md, "Calibrated intervals").
"""

from __future__ import annotations

import math

from benchmeasure.core.matrix_holes import diagnostics_beside

NAMES = {"ddm": "DDM", "max_gap": "Max Gap"}
LABEL = ("calibrated: covers the true metric at about its stated rate in simulations at this fit's own abilities, "
         "items, trials and holes, over the worlds consistent with its data (docs/gap_noise.md)")
UNCALIBRATED = ("uncalibrated: this fit has no calibrated intervals (fit with --no-calibrate, or before they "
                "existed); refit without --no-calibrate")


def metric_name(key: str) -> str:
    if key in NAMES:
        return NAMES[key]
    return f"Top-{key[3:-8]} Gap Sum" if key.startswith("top") and key.endswith("_gap_sum") else key


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def checked(block) -> dict | None:
    """``block`` when it is a well-formed ``calibrated_intervals`` record (a refusal, or per metric finite
    ``plugin``, ``low`` ≤ ``high`` and ``known_world_width``), else None: a hand-damaged record is not trusted."""
    if not isinstance(block, dict):
        return None
    if isinstance(block.get("refused"), str):
        return {"refused": block["refused"]}
    metrics = block.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        return None
    for entry in metrics.values():
        if not isinstance(entry, dict) or not all(_number(entry.get(k)) for k in
                                                  ("plugin", "low", "high", "known_world_width", "probability")):
            return None
        if not entry["low"] <= entry["high"]:
            return None
    out = {"metrics": metrics, "settings": block["settings"] if isinstance(block.get("settings"), dict) else {}}
    if isinstance(block.get("note"), str):
        out["note"] = block["note"]
    return out


def calibrated_beside(path) -> dict | None:
    """The checked ``calibrated_intervals`` of the fit folder holding ``path``, or None."""
    return checked(diagnostics_beside(path).get("calibrated_intervals"))


def interval_text(entry: dict, digits: int = 3) -> str:
    """``[low, high]`` with a word when the interval spans most of the metric's range."""
    text = f"[{entry['low']:.{digits}f}, {entry['high']:.{digits}f}]"
    if entry.get("spans_most"):
        text += " (spans most of its range: the data cannot pin it down)"
    elif entry.get("no_world_consistent"):
        text += " (no simulated world reproduced this fit's value: the widest of all)"
    return text


def narrowing_advice(block: dict, gaps: list | None = None) -> str | None:
    """The sentence that says what data would narrow intervals that span most of their range (None if none do)."""
    wide = [metric_name(k) for k, e in block.get("metrics", {}).items() if e.get("spans_most")]
    if not wide:
        return None
    s = block.get("settings", {})
    ask = ""
    if gaps:
        g = gaps[0]
        extra = g.get("extra_trials_per_model")
        if isinstance(extra, int) and not g.get("resolved"):
            ask = (f"; on the widest gap, about {extra} more trials per model on {g['lower_item']} and "
                   f"{g['upper_item']}")
    trials = s.get("max_trials")
    more = "more trials per cell" if trials is None else f"more than {trials} trial{'s' * (trials != 1)} per cell"
    return (f"{', '.join(wide)}: the interval spans most of the possible range. What would narrow it: "
            f"more models (this fit has {s.get('models', '?')}) and {more}, most on the items at the widest gaps"
            + ask)


def lines(block: dict | None, gaps: list | None = None) -> list[str]:
    """What ``fit`` and ``diagnose`` print about the calibrated intervals."""
    if block is None:
        return [f"intervals: {UNCALIBRATED}"]
    if "refused" in block:
        return [f"intervals: not calibrated: {block['refused']}"]
    metrics = block["metrics"]
    first = next(iter(metrics.values()))
    pct = f"{100 * first['probability']:g} %"
    s = block.get("settings", {})
    reps = s.get("reps")
    sets = f"{reps} simulated data sets per world, " if isinstance(reps, int) and not isinstance(reps, bool) else ""
    asked = s.get("reps_first_world")
    if sets and isinstance(asked, int) and reps < asked:
        sets += f"fewer than the {asked} asked to stay within the time budget, "
    out = [f"calibrated {pct} intervals ({sets}{s.get('seconds', '?')} s; {LABEL}):"]
    for key, e in metrics.items():
        out.append(f"  {metric_name(key)}: plug-in {e['plugin']:.4f}, interval {interval_text(e, 4)}; "
                   f"width {e['high'] - e['low']:.3f} against {e['known_world_width']:.3f} if the world were known")
    advice = narrowing_advice(block, gaps)
    if advice:
        out.append(f"  {advice}")
    if block.get("note"):
        out.append(f"  note: {block['note']}")
    return out
