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


def true_estimate(observed: float, biases, low: float, high: float) -> float:
    """The calibration's estimate of the true metric, the one its interval is built around: the observed value T̃
    (the inner estimator's plug-in) less the mean simulated error (plug-in − truth) of the worlds the interval is
    the hull of (the consistent ones; all when none is), clipped to the interval. Each world's T̃ − bias lies in
    its own pivotal interval, so before clipping the estimate lies in their hull."""
    return float(min(max(observed - sum(biases) / len(biases), low), high))


def _estimate(entry: dict) -> float | None:
    """``entry``'s stored ``estimate`` when it lies in its interval; for a record written before it was stored,
    :func:`true_estimate` from its worlds; else None."""
    e = entry.get("estimate")
    if _number(e) and entry["low"] - 1e-12 <= e <= entry["high"] + 1e-12:
        return e
    worlds, observed = entry.get("worlds"), entry.get("inner_plugin")
    if not isinstance(worlds, dict) or not _number(observed):
        return None
    rows = [w for w in worlds.values() if isinstance(w, dict) and _number(w.get("bias"))]
    used = [w for w in rows if w.get("consistent") is True] or rows
    value = true_estimate(observed, [w["bias"] for w in used], entry["low"], entry["high"]) if used else None
    return value if _number(value) else None


def checked(block) -> dict | None:
    """``block`` when it is a well-formed ``calibrated_intervals`` record (a refusal, or per metric finite
    ``plugin``, ``low`` ≤ ``high`` and ``known_world_width``), else None: a hand-damaged record is not trusted.
    Each metric's ``estimate`` (:func:`_estimate`) is set, None where the record cannot give one."""
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
    metrics = {k: {**e, "estimate": _estimate(e)} for k, e in metrics.items()}
    out = {"metrics": metrics, "settings": block["settings"] if isinstance(block.get("settings"), dict) else {}}
    if isinstance(block.get("note"), str):
        out["note"] = block["note"]
    return out


def calibrated_beside(path) -> dict | None:
    """The checked ``calibrated_intervals`` of the fit folder holding ``path``, or None."""
    return checked(diagnostics_beside(path).get("calibrated_intervals"))


def interval_text(entry: dict, digits: int = 3) -> str:
    """``≈ estimate [low, high]``: the interval with the estimate of the true value it is built around (``[low,
    high]`` alone for a record without one), with a word when it spans most of the metric's range."""
    text = f"[{entry['low']:.{digits}f}, {entry['high']:.{digits}f}]"
    if _number(entry.get("estimate")):
        text = f"≈ {entry['estimate']:.{digits}f} {text}"
    return text + _caveat(entry)


def _caveat(entry: dict) -> str:
    if entry.get("spans_most"):
        return " (spans most of its range: the data cannot pin it down)"
    if entry.get("no_world_consistent"):
        return " (no simulated world reproduced this fit's value: the widest of all)"
    return ""


def resolved_text(key: str, gaps: list | None) -> str:
    """Whether the widest gap (Max Gap) or the k widest (Top-k Gap Sum) are resolved, from
    :func:`benchmeasure.core.resolution.gap_table`'s rows; "" for DDM or without gaps."""
    if not gaps or key == "ddm":
        return ""
    if key == "max_gap":
        g = gaps[0]
        sep = "" if g.get("separation") is None else f", edges {g['separation']:.1f} posterior sds apart"
        return "widest gap resolved" if g["resolved"] else f"widest gap NOT resolved (may be noise{sep})"
    k = int(key[3:-8]) if key.startswith("top") and key.endswith("_gap_sum") else len(gaps)
    return f"{sum(bool(g['resolved']) for g in gaps[:k])} of {min(k, len(gaps))} widest gaps resolved"


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
        name, resolved = metric_name(key), resolved_text(key, gaps)
        true = "" if e.get("estimate") is None else f"true {name} ≈ {e['estimate']:.4f}, "
        out.append(f"  {name}: plug-in {e['plugin']:.4f} (the paper's value) · {true}{pct} interval "
                   f"[{e['low']:.4f}, {e['high']:.4f}]{_caveat(e)} (width "
                   f"{e['high'] - e['low']:.3f}; {e['known_world_width']:.3f} if the world were known)"
                   + (f"; {resolved}" if resolved else ""))
    advice = narrowing_advice(block, gaps)
    if advice:
        out.append(f"  {advice}")
    if block.get("note"):
        out.append(f"  note: {block['note']}")
    return out
