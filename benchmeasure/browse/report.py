"""Validity evidence for a use case: what the retrieved slices cover, how hard they are, how models rank on them.

For 1–4 facet queries, each retrieved slice (the top k items) is described three ways:

* **content**: which benchmarks supply its items, and how much each pair of slices overlaps (shared items,
  Jaccard) — facets that no benchmark covers show up as slices drawn from unrelated items;
* **difficulty coverage**: its items' fitted difficulties on each benchmark's own b scale, min-max normalised
  over the *whole* benchmark (so z = 0 is the benchmark's easiest item and 1 its hardest); the slice's ECDF
  deciles, DDM and Max Gap (:mod:`benchmeasure.core.metrics`) and the z range it spans. Both figures grow as a set
  shrinks, so the reference is a random slice of the same size from the same benchmark: the report gives the
  mean DDM and Max Gap of such slices (``n_boot`` draws without replacement, seeded) and the share of them that
  cover the axis worse than the use case's slice does (a share near 0 says the use case's items bunch up);
  and whether its widest gaps are resolved by the posterior sds of their edge items (:func:`resolution`);
* **rank stability**: with the benchmark's graded answers, the abilities the slice implies against those the
  whole benchmark implies (difficulties held at their fitted values; tau with an interval from the slice's
  ability posteriors, :func:`ability_tau`, and the models whose ability rank moves most, :func:`ability_movers`),
  and each model's accuracy on the slice against its
  accuracy on the whole benchmark; Kendall's tau-b between the two rankings with a percentile bootstrap interval
  over the slice's items (seeded), and the models whose rank moves most. The interval describes the tau that
  another slice of the same size from the same items would give: resampling adds noise to the slice accuracies,
  so it sits below the point estimate when the slice is small (its median is reported beside it).

* **item fit** (``--check-fit``, :mod:`.fit_view`): each hit's ``check-fit`` p-value and flag, and per slice and
  benchmark how many of its items misfit (flagged, or running against ability) and why.

A slice drawing items from a benchmark with no fitted difficulty is an error naming that benchmark: the
difficulty part cannot be answered (index it with ``--difficulty``, or filter it out with ``--benchmark``).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np

from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import fail
from benchmeasure.base.files import sha256_file
from benchmeasure.core.metrics import ddm, largest_gaps, max_gap

LEVEL = 0.95
DECILES = [i / 10 for i in range(11)]
MOVERS = 3


def parse_responses_option(values: list[str]) -> list[tuple[str, str]]:
    """``NAME=CSV`` pairs of ``--responses``, each benchmark at most once."""
    pairs, seen = [], set()
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            fail(f"--responses {value!r}: expected NAME=CSV (the benchmark's name in the index, then the file)")
        if name in seen:
            fail(f"--responses: benchmark {name!r} given twice")
        seen.add(name)
        pairs.append((name, path))
    return pairs


def read_long_responses(path: str) -> dict[str, dict[str, tuple[int, int]]]:
    """``{model: {item: (correct, answers)}}`` from a ``model,item_id,correct[,trial]`` CSV (0/1 answers)."""
    table = read_table(path, required=("model", "item_id", "correct"),
                       expected="model,item_id,correct (one graded answer per row; trial optional)")
    sums: dict = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r, (model, item, correct) in enumerate(zip(table.column("model"), table.column("item_id"),
                                                   table.column("correct"))):
        if correct.strip() not in ("0", "1"):
            fail(f"{table.where(r, 'correct')}: expected 0 or 1, found {correct!r}")
        if not model.strip() or not item.strip():
            fail(f"{table.where(r)}: blank model or item_id")
        cell = sums[model.strip()][item.strip()]
        cell[0] += int(correct)
        cell[1] += 1
    if len(sums) < 2:
        fail(f"{path}: a ranking needs at least 2 models, found {len(sums)}")
    return {m: {i: (c, n) for i, (c, n) in items.items()} for m, items in sums.items()}


def _ranks(scores: dict[str, float]) -> dict[str, float]:
    """Rank 1 = highest score; ties share their mean rank."""
    order = sorted(scores, key=lambda m: -scores[m])
    ranks, i = {}, 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for m in order[i:j + 1]:
            ranks[m] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _tau(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import kendalltau
    return float(kendalltau(x, y).statistic)


def _accuracy(answers: dict[str, dict[str, float]], items: list[str]) -> dict[str, float]:
    out = {}
    for model, cells in answers.items():
        values = [cells[i][0] / cells[i][1] for i in items if i in cells]
        if values:
            out[model] = sum(values) / len(values)
    return out


def ranking(answers, benchmark_items: list[str], slice_items: list[str], n_boot: int, seed: int) -> dict:
    """Models' accuracy ranking on ``slice_items`` against all ``benchmark_items``."""
    full = _accuracy(answers, benchmark_items)
    answered = [i for i in slice_items if any(i in cells for cells in answers.values())]
    if not answered:
        return {"items_answered": 0, "note": "no model answered any item of the slice"}
    part = _accuracy(answers, answered)
    models = sorted(set(full) & set(part))
    x = np.array([full[m] for m in models])
    y = np.array([part[m] for m in models])
    tau = _tau(x, y)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        sample = [answered[j] for j in rng.integers(0, len(answered), len(answered))]
        resampled = _accuracy(answers, sample)
        t = _tau(x, np.array([resampled.get(m, np.nan) for m in models]))
        if math.isfinite(t):
            draws.append(t)
    full_rank, slice_rank = _ranks(dict(zip(models, x))), _ranks(dict(zip(models, y)))
    moves = sorted(models, key=lambda m: (-abs(full_rank[m] - slice_rank[m]), m))[:MOVERS]
    record = {"items_answered": len(answered), "models": len(models),
              "kendall_tau": tau if math.isfinite(tau) else None,
              "tau_interval": None, "level": LEVEL, "n_boot": n_boot, "boot_defined": len(draws),
              "movers": [{"model": m, "rank_benchmark": full_rank[m], "rank_slice": slice_rank[m],
                          "accuracy_benchmark": full[m], "accuracy_slice": part[m]} for m in moves]}
    if not math.isfinite(tau):
        record["note"] = "tau undefined: every model has the same accuracy on the slice"
    if draws:
        tail = (1 - LEVEL) / 2
        record["tau_interval"] = [float(np.quantile(draws, tail)), float(np.quantile(draws, 1 - tail))]
        record["tau_boot_median"] = float(np.median(draws))
    return record


def ability_tau(answers, b: dict[str, float], benchmark_items: list[str], slice_items: list[str], n_draws: int,
                seed: int) -> dict:
    """Kendall tau between the abilities the whole benchmark and the slice imply, difficulties held fixed.

    Each model's θ posterior (1PL, no guessing, the standard-normal prior of ``score_models``; quadrature in
    :mod:`benchmeasure.irt.anchored`) is computed once from its answers to every item of the benchmark with a
    fitted b and once from its answers to the slice's. tau compares the posterior means; its interval comes from
    ``n_draws`` joint draws of the slice abilities (each model's θ drawn from its slice posterior, seeded).
    """
    from benchmeasure.irt.anchored import ability_posterior

    trials = {n for cells in answers.values() for _, n in cells.values()}
    if len(trials) != 1:
        return {"note": "cells hold different numbers of answers; the ability posterior needs one K"}
    (k,) = trials
    full_ids = [i for i in benchmark_items if i in b]
    part_ids = [i for i in slice_items if i in b]
    rng = np.random.default_rng(seed)
    models, full_mean, part_mean, part_draws = [], [], [], []
    for model in sorted(answers):
        cells = answers[model]
        here = [i for i in part_ids if i in cells]
        everywhere = [i for i in full_ids if i in cells]
        if not here or not everywhere:
            continue
        full = ability_posterior([cells[i][0] for i in everywhere], [b[i] for i in everywhere], k)
        part = ability_posterior([cells[i][0] for i in here], [b[i] for i in here], k)
        models.append(model)
        full_mean.append(full.mean)
        part_mean.append(part.mean)
        part_draws.append(part.quantile(rng.uniform(size=n_draws)))
    if len(models) < 2:
        return {"note": "fewer than 2 models answered the slice"}
    full_mean = np.array(full_mean)
    draws = np.array(part_draws)  # models × draws
    taus = [t for t in (_tau(full_mean, draws[:, d]) for d in range(n_draws)) if math.isfinite(t)]
    tau = _tau(full_mean, np.array(part_mean))
    tail = (1 - LEVEL) / 2
    return {"models": len(models), "n_trials": k, "kendall_tau": tau if math.isfinite(tau) else None,
            "tau_interval": [float(np.quantile(taus, tail)), float(np.quantile(taus, 1 - tail))] if taus else None,
            "level": LEVEL, "draws": n_draws,
            "movers": ability_movers(models, full_mean, np.array(part_mean), draws)}


def ability_movers(models: list[str], full_mean: np.ndarray, part_mean: np.ndarray, draws: np.ndarray) -> list:
    """The :data:`MOVERS` models whose ability rank moves most from the benchmark to the slice.

    Ranks by posterior mean θ (1 = most able). Each mover carries the 95% interval of its slice rank over the
    posterior draws of the slice abilities and the share of draws that rank it as on the whole benchmark or
    better (``share_not_below``) — how sure the move is.
    """
    full_rank = _ranks(dict(zip(models, full_mean)))
    slice_rank = _ranks(dict(zip(models, part_mean)))
    per_draw = np.argsort(np.argsort(-draws, axis=0), axis=0) + 1  # rank of each model in each draw
    tail = (1 - LEVEL) / 2
    order = sorted(range(len(models)), key=lambda i: (-abs(full_rank[models[i]] - slice_rank[models[i]]), models[i]))
    out = []
    for i in order[:MOVERS]:
        m = models[i]
        out.append({"model": m, "rank_benchmark": full_rank[m], "rank_slice": slice_rank[m],
                    "rank_slice_interval": [float(np.quantile(per_draw[i], tail)),
                                            float(np.quantile(per_draw[i], 1 - tail))],
                    "share_not_below": float((per_draw[i] <= full_rank[m]).mean()),
                    "theta_benchmark": float(full_mean[i]), "theta_slice": float(part_mean[i])})
    return out


def difficulty(all_b: np.ndarray, slice_b: np.ndarray, n_boot: int, seed: int,
               slice_sd: np.ndarray | None = None, slice_ids: list[str] | None = None,
               ends: list[tuple] | None = None) -> dict:
    """The slice's difficulty coverage on its benchmark's scale (z: min-max over the whole benchmark)."""
    low, high = float(all_b.min()), float(all_b.max())
    all_z = _z(all_b, low, high)
    record = {"items_with_difficulty": len(slice_b), "benchmark_items": len(all_b),
              "b_min_benchmark": low, "b_max_benchmark": high,
              "benchmark": {"ddm": ddm(all_z), "max_gap": max_gap(all_z)}}
    if len(slice_b) == 0:
        return {**record, "note": "no item of the slice has a fitted difficulty"}
    z = _z(slice_b, low, high)
    widest = largest_gaps(z, 1)[0]
    rng = np.random.default_rng(seed)
    pool = np.asarray(all_z)
    draws = [pool[rng.choice(len(pool), size=len(z), replace=False)].tolist() for _ in range(n_boot)]
    random_ddm = np.array([ddm(d) for d in draws])
    random_gap = np.array([max_gap(d) for d in draws])
    slice_ddm, slice_gap = ddm(z), max_gap(z)
    return {**record, "ddm": slice_ddm, "max_gap": slice_gap, "widest_gap": [widest.left, widest.right],
            "z_range": [min(z), max(z)], "z_deciles": [float(np.quantile(z, q)) for q in DECILES],
            "b_deciles": [float(np.quantile(slice_b, q)) for q in DECILES],
            "random_slice": {"items": len(z), "draws": n_boot, "ddm_mean": float(random_ddm.mean()),
                             "max_gap_mean": float(random_gap.mean()),
                             "share_with_higher_ddm": float((random_ddm > slice_ddm).mean()),
                             "share_with_higher_max_gap": float((random_gap > slice_gap).mean())},
            "resolution": resolution(slice_b, slice_sd, slice_ids, ends or [])}


def resolution(slice_b: np.ndarray, slice_sd: np.ndarray | None, slice_ids: list[str] | None,
               ends: list[tuple]) -> dict:
    """Whether the slice's widest gaps are resolved, by :mod:`benchmeasure.core.resolution`'s rule.

    A gap between neighbouring items is resolved when its edges are at least ``SEPARATION`` (2) posterior sds
    of their difference apart, the rule every other report of the project uses. The slice's Max Gap is
    measured on the benchmark's z scale, whose ends (z = 0 and 1) are the benchmark's easiest and hardest
    items (``ends``: their (item, b, sd)); they are the outer edges here too, so the widest gap is the Max Gap.
    ``resolution_z`` is the narrowest band the slice's items could reveal, on the same scale.
    """
    from benchmeasure.core.resolution import SEPARATION, benchmark_resolution, gap_table

    ids = list(slice_ids) if slice_ids is not None else [str(i) for i in range(len(slice_b))]
    outer = [e for e in ends if e[0] not in ids]
    if slice_sd is None or not np.all(np.isfinite(slice_sd)) or not all(np.isfinite(e[2]) for e in ends):
        return {"resolved": None, "note": "the index holds no posterior sd (b_sd) for every item of the slice; "
                                          "index the benchmark with a difficulty.csv that has b_sd (--replace)"}
    b = slice_b.tolist() + [e[1] for e in outer]
    sd = slice_sd.tolist() + [e[2] for e in outer]
    low, high = min(b), max(b)
    if high <= low:
        return {"resolved": None, "note": "every item of the benchmark has the same fitted difficulty"}
    span = high - low
    rows = gap_table(b, sd, ids + [e[0] for e in outer], top_k=3)
    gaps = [{"lower_item": r["lower_item"], "upper_item": r["upper_item"],
             "left": (r["lower_b"] - low) / span, "right": (r["upper_b"] - low) / span,
             "width": (r["upper_b"] - r["lower_b"]) / span, "separation": r["separation"],
             "resolved": r["resolved"]} for r in rows]
    if slice_b.max() > slice_b.min():
        whole = benchmark_resolution(slice_b.tolist(), slice_sd.tolist())
        narrowest = whole["resolution"] * whole["range"] / span
    else:
        narrowest = None
    return {"resolved": gaps[0]["resolved"], "separation_needed": SEPARATION, "widest_gaps": gaps,
            "resolution_z": narrowest, "typical_sd": float(np.median(slice_sd))}


def _z(b: np.ndarray, low: float, high: float) -> list[float]:
    if high == low:
        return [0.5] * len(b)
    return [float(v) for v in (b - low) / (high - low)]


def use_case_report(index, queries: list[str], slices: list, responses: list[tuple[str, str]], n_boot: int,
                    seed: int, checks: dict | None = None) -> dict:
    """The JSON record of ``browse report`` (see the module docstring); ``checks`` ``{benchmark: FitFlags}``
    (``--check-fit``, :mod:`.fit_view`) adds each hit's fit and each slice's misfitting items."""
    from benchmeasure.browse.fit_view import hit_fit, slice_fit

    checks = checks or {}
    known = index.manifest["benchmarks"]
    for name, _ in responses:
        if name not in known:
            fail(f"--responses {name}=…: no benchmark {name!r} in the index (it has {', '.join(known)})")
    for hits in slices:
        for name in {h.benchmark for h in hits}:
            if not index.has_difficulty(name):
                fail(f"{index.folder}: benchmark {name!r} has no fitted difficulty, so its items' difficulty "
                     f"coverage is unknown; index it with --difficulty DIFFICULTY_CSV (--replace), or leave it "
                     "out with --benchmark")
    names = np.asarray(index.benchmarks)
    answers = {name: read_long_responses(path) for name, path in responses}
    keys = [{(h.benchmark, h.item_id) for h in hits} for hits in slices]
    record = {"queries": queries, "slices": [], "overlap": [],
              "inputs": [{"path": p, "sha256": sha256_file(p)} for _, p in responses]}
    for i in range(len(slices)):
        for j in range(i + 1, len(slices)):
            union = keys[i] | keys[j]
            shared = len(keys[i] & keys[j])
            record["overlap"].append({"a": i, "b": j, "shared": shared,
                                      "jaccard": shared / len(union) if union else 0.0})
    for query, hits in zip(queries, slices):
        entry = {"query": query, "items": len(hits),
                 "benchmarks": dict(Counter(h.benchmark for h in hits).most_common()),
                 "hits": [{**h.as_dict(), **(hit_fit(checks, h) if checks else {})} for h in hits],
                 "per_benchmark": {}}
        for name in entry["benchmarks"]:
            rows = names == name
            all_b = index.b[rows]
            slice_ids = [h.item_id for h in hits if h.benchmark == name]
            in_slice = [h for h in hits if h.benchmark == name and h.b is not None]
            where = {index.item_ids[r]: r for r in np.flatnonzero(rows)}
            fitted_rows = [r for r in np.flatnonzero(rows) if np.isfinite(index.b[r])]
            ends = [(index.item_ids[r], float(index.b[r]), float(index.b_sd[r]))
                    for r in (min(fitted_rows, key=lambda r: index.b[r]), max(fitted_rows, key=lambda r: index.b[r]))]
            part = {"difficulty": difficulty(all_b[np.isfinite(all_b)], np.array([h.b for h in in_slice]), n_boot,
                                             seed, np.array([index.b_sd[where[h.item_id]] for h in in_slice]),
                                             [h.item_id for h in in_slice], ends)}
            if name in answers:
                ids = [index.item_ids[r] for r in np.flatnonzero(rows)]
                part["ranking"] = ranking(answers[name], ids, slice_ids, n_boot, seed)
                fitted = {index.item_ids[r]: float(index.b[r]) for r in np.flatnonzero(rows) if np.isfinite(index.b[r])}
                part["ranking"]["abilities"] = ability_tau(answers[name], fitted, ids, slice_ids, n_boot, seed)
            if name in checks:
                part["fit"] = slice_fit(checks[name], slice_ids)
            entry["per_benchmark"][name] = part
        record["slices"].append(entry)
    return record

