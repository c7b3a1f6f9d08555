"""Table 2 of the paper: Top-3 Gap Sum reduction and target deviation for BenchFill, baseline, oracle.

* Top-3 Gap Sum reduction (%): 100 · (S₀ − S₁)/S₀, where S₀ is the sum of the three widest gaps of
  the original benchmark and S₁ the same after adding the method's selected items (paper,
  Table 2). New items are placed at their annotated z on the original min–max scale; one that
  falls outside [0, 1] is clipped to the boundary (it covers no interior gap).
* Target deviation: mean |ẑ − z*| over the filled gaps (the paper's number). The final item is
  the best of several noisy calibrations, so this is biased low as an estimate of how close the
  item really is to z*.
* Independent target deviation (ours; ``[search] reannotate = K`` > 0): the same mean, with ẑ
  from a second calibration of each final item on K fresh rollouts per panel model
  (:class:`~.records.Reannotation`), which the selection never saw. Its uncertainty: each gap's
  |z − z*| under the calibration posterior z ~ N(ẑ, sd²) is folded normal; the sd of the mean is
  √(Σ Var_g)/n.
* Certified keeps (ours; ``[search] keep = "certified"``, :mod:`.certify`): per gap, the kept child's pooled
  posterior interval against the target band, the trials per panel model behind it and the model calls the gap
  cost; a gap whose budget ran out without a certified child is listed as such. ``calls_per_kept`` = the
  method's calls on its gaps over the children kept.
* Children not kept because they misfit (ours; ``[search] misfit_p``, :func:`~.calibration.item_fit`): per gap,
  each valid child whose check-fit item test against the panel's fixed abilities failed, with its p-value and why.
* Oracle: sequentially insert one item at the midpoint of the current widest gap, as many
  items as gaps filled (an idealized upper bound, not a method).
"""

from __future__ import annotations

import math

from benchmeasure.benchfill.strategies import table_order
from benchmeasure.core.metrics import largest_gaps, top_k_gap_sum


def oracle_points(z, count: int) -> list:
    """Insert ``count`` points, each at the midpoint of the then-widest gap; returns the inserted z."""
    current, inserted = list(z), []
    for _ in range(count):
        point = largest_gaps(current, 1)[0].midpoint
        current.append(point)
        inserted.append(point)
    return inserted


def reduction(z_original, z_new, k: int = 3) -> float:
    """Relative reduction (%) of the Top-k Gap Sum after adding ``z_new`` (clipped to [0, 1])."""
    before = top_k_gap_sum(z_original, k)
    after = top_k_gap_sum(list(z_original) + [min(1.0, max(0.0, z)) for z in z_new], k)
    return 100.0 * (before - after) / before if before > 0 else 0.0


def table2(z_original, selected: dict, n_gaps: int) -> dict:
    """The rows of Table 2: one per strategy (``selected``: name → per gap (ẑ, z*) or None), and ``oracle``."""
    rows = {name: _row(z_original, chosen) for name, chosen in selected.items()}
    points = oracle_points(z_original, n_gaps)
    rows["oracle"] = {"top3_gap_sum_reduction": reduction(z_original, points), "target_deviation": 0.0,
                      "gaps_filled": n_gaps, "gaps": n_gaps, "inserted_z": points}
    rows["original_top3_gap_sum"] = top_k_gap_sum(z_original, 3)
    return rows


def _row(z_original, selected: list) -> dict:
    filled = [s for s in selected if s is not None]
    deviation = sum(abs(zh - zs) for zh, zs in filled) / len(filled) if filled else None
    return {"top3_gap_sum_reduction": reduction(z_original, [zh for zh, _ in filled]),
            "target_deviation": deviation, "gaps_filled": len(filled), "gaps": len(selected)}


def folded_normal_var(mu: float, sigma: float) -> float:
    """Var |X| for X ~ N(mu, sigma²)."""
    if sigma <= 0:
        return 0.0
    mean = (sigma * math.sqrt(2 / math.pi) * math.exp(-mu * mu / (2 * sigma * sigma))
            + mu * math.erf(mu / (sigma * math.sqrt(2))))
    return max(0.0, mu * mu + sigma * sigma - mean * mean)


def independent_deviation(reannotations: list, trials: int) -> dict:
    """Summary fields of the independent re-annotation of one method's final items (module docstring)."""
    per_gap = {str(r.gap): {"item_id": r.item_id, "b_mean": r.b_mean, "b_sd": r.b_sd, "z": r.z, "z_sd": r.z_sd,
                            "deviation": r.deviation, "deviation_sd": math.sqrt(folded_normal_var(r.z - r.target,
                                                                                                    r.z_sd))}
               for r in sorted(reannotations, key=lambda r: r.gap)}
    n = len(per_gap)
    mean = sum(g["deviation"] for g in per_gap.values()) / n if n else None
    sd = math.sqrt(sum(g["deviation_sd"] ** 2 for g in per_gap.values())) / n if n else None
    return {"target_deviation_independent": mean, "target_deviation_independent_sd": sd,
            "reannotate_trials": trials, "reannotation": per_gap}


def keep_rows(keeps: list) -> dict:
    """Summary fields of one method's certified keeps (:class:`~.records.Keep`, one per target gap)."""
    per_gap = {str(k.gap): {"item_id": k.item_id, "certified": k.certified, "z": k.z, "z_sd": k.z_sd,
                            "interval": [k.z_low, k.z_high], "band": [k.band_low, k.band_high], "level": k.level,
                            "trials_per_model": k.trials, "race_batches_item": k.batches,
                            "race_batches_gap": k.race_batches, "calls": k.calls}
               for k in sorted(keeps, key=lambda k: k.gap)}
    kept = sum(k.certified for k in keeps)
    calls = sum(k.calls for k in keeps)
    return {"keep_rule": "certified", "keeps": per_gap, "calls": calls,
            "calls_per_kept": calls / kept if kept else None}


def format_keeps(rows: dict) -> str:
    """Lines under Table 2, one per gap of each certifying method: the interval of its kept item and its cost."""
    lines = []
    for name in table_order(rows):
        keeps = rows[name].get("keeps")
        if not keeps:
            continue
        level = next(iter(keeps.values()))["level"]
        lines.append(f"{name} certified keeps ({100 * level:g}% posterior interval inside the band: the gap and "
                     f"within the tolerance of z*); calls per kept item "
                     + ("-" if rows[name]["calls_per_kept"] is None else f"{rows[name]['calls_per_kept']:.0f}"))
        for gap, k in keeps.items():
            band = f"[{k['band'][0]:.4f}, {k['band'][1]:.4f}]"
            if k["certified"]:
                lines.append(f"  gap {gap}: {k['item_id']} z={k['z']:.4f} [{k['interval'][0]:.4f}, "
                             f"{k['interval'][1]:.4f}] in {band}, {k['trials_per_model']} trials/model, "
                             f"{k['calls']} calls")
            else:
                lines.append(f"  gap {gap}: no child certified in {band} within the gap's budget "
                             f"({k['race_batches_gap']} race batches, {k['calls']} calls): nothing kept")
    return "\n".join(lines)


def misfit_rows(done: list) -> dict:
    """Summary fields of one method's children dropped because they misfit (each :class:`~.records.GapDone`'s
    ``misfits``)."""
    per_gap = {str(d.gap): d.misfits for d in sorted(done, key=lambda d: d.gap) if d.misfits}
    return {"misfits": per_gap, "children_misfit": sum(len(v) for v in per_gap.values())}


def format_misfits(rows: dict) -> str:
    """Lines under Table 2: per method, the children not kept because they misfit, and why."""
    lines = []
    for name in table_order(rows):
        per_gap = rows[name].get("misfits") or {}
        if not per_gap:
            continue
        lines.append(f"{name}: {rows[name]['children_misfit']} valid child(ren) not kept because they misfit the "
                     "panel's abilities (check-fit's item test, summary.json misfits):")
        for gap, entries in per_gap.items():
            for m in entries:
                lines.append(f"  gap {gap}: {m['item_id']} ({m['stage']}, {m['trials']} trials/model): {m['reason']}")
    return "\n".join(lines)


def format_table(benchmark: str, rows: dict) -> str:
    """A plain-text Table 2 for one benchmark."""
    def cell(value, spec):
        return "-" if value is None else format(value, spec)

    methods = table_order(rows)  # the strategies' rows (benchmeasure.benchfill.strategies)
    independent = any(rows[name].get("reannotate_trials") for name in methods)
    lines = [f"Table 2 ({benchmark}): Top-3 Gap Sum reduction (%, higher is better), "
             f"target deviation (lower is better)",
             f"{'method':<10} {'top3 red. %':>12} {'target dev.':>12} {'filled':>7}"
             + (f" {'indep. dev. ± sd':>17}" if independent else "")]
    for name in (*methods, "oracle"):
        row = rows[name]
        line = (f"{name:<10} {cell(row['top3_gap_sum_reduction'], '.2f'):>12} "
                f"{cell(row['target_deviation'], '.4f'):>12} {row['gaps_filled']:>3}/{row['gaps']:<3}")
        if independent:
            mean, sd = row.get("target_deviation_independent"), row.get("target_deviation_independent_sd")
            line += f" {'-' if mean is None else f'{mean:.4f} ± {sd:.4f}':>17}"
        lines.append(line)
    if independent:
        trials = max(rows[name].get("reannotate_trials") or 0 for name in methods)
        lines.append(f"indep. dev.: each final item re-annotated from {trials} fresh rollouts per panel model "
                     f"(target dev. is the paper's number: the best of several calibrations, biased low)")
    return "\n".join(lines)
