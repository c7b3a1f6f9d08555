"""Table 2 of the paper: Top-3 Gap Sum reduction and target deviation for BenchFill, baseline, oracle.

* Top-3 Gap Sum reduction (%): 100 · (S₀ − S₁)/S₀, where S₀ is the sum of the three widest gaps of
  the original benchmark and S₁ the same after adding the method's selected items (paper,
  Table 2). New items are placed at their annotated z on the original min–max scale; one that
  falls outside [0, 1] is clipped to the boundary (it covers no interior gap).
* Target deviation: mean |ẑ − z*| over the filled gaps.
* Oracle: sequentially insert one item at the midpoint of the current widest gap, as many
  items as gaps filled (an idealized upper bound, not a method).
"""

from __future__ import annotations

from benchmeasure.metrics import largest_gaps, top_k_gap_sum


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


def table2(z_original, benchfill: list, baseline: list, n_gaps: int) -> dict:
    """The three rows of Table 2 (``benchfill``, ``baseline``, ``oracle``)."""
    rows = {"benchfill": _row(z_original, benchfill), "baseline": _row(z_original, baseline)}
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


def format_table(benchmark: str, rows: dict) -> str:
    """A plain-text Table 2 for one benchmark."""
    def cell(value, spec):
        return "-" if value is None else format(value, spec)

    lines = [f"Table 2 ({benchmark}): Top-3 Gap Sum reduction (%, higher is better), "
             f"target deviation (lower is better)",
             f"{'method':<10} {'top3 red. %':>12} {'target dev.':>12} {'filled':>7}"]
    for name in ("baseline", "benchfill", "oracle"):
        row = rows[name]
        lines.append(f"{name:<10} {cell(row['top3_gap_sum_reduction'], '.2f'):>12} "
                     f"{cell(row['target_deviation'], '.4f'):>12} {row['gaps_filled']:>3}/{row['gaps']:<3}")
    return "\n".join(lines)
