"""Coverage and width of the calibrated intervals (issue 29) on benchmarks with known difficulties.

For every cell (world × n × K, plus cells with 20 % of the cells absent) and replication: abilities of M models
~ N(0, 1.5²), true difficulties from the world, binomial counts with K trials per cell (absent cells at random);
the paper's 1PL fitted by the project's fit (``--outer nuts``: NUTS on the collapsed route, 2 chains; or
``--outer quadrature``: the exact posterior of b given the true abilities, minutes instead of an hour); then
:func:`benchmeasure.analyses.calibrated.calibrate` at that fit, exactly as ``benchmeasure fit`` runs it. Per cell
and metric it prints how often the 94 % interval covered the true metric, with the cell's 94 % Wilson interval,
the median interval width, the median width an interval would need if the world were known (the central 94 %
of the inner estimator's errors over 200 data sets at the fixed true difficulties and abilities), their ratio, and the
mean seconds of one calibration.

World generators here are the bench's own, not the calibration's family: ``skewed`` is exponential (the family
has log-normal tails), and ``trimodal``, ``heavy_tail`` (Student t, 3 df) and ``two_bands`` have no counterpart
in the family at all.

    python bench/bench_calibrated_intervals.py                       # the issue's grid, about an hour on 2 cores
    python bench/bench_calibrated_intervals.py --outer quadrature    # minutes
    python bench/bench_calibrated_intervals.py --worlds band --n 120 --k 8 --reps 4 --json out.json
"""

from __future__ import annotations

import argparse
import json
import runpy
import time
from pathlib import Path

import numpy as np

runpy.run_path(str(Path(__file__).resolve().parent.parent / "scripts" / "_bootstrap.py"))["use_checkout"]()

from benchmeasure.analyses.calibrated import PosteriorMeans, _metrics, calibrate, simulate_sums  # noqa: E402
from benchmeasure.analyses.gap_calibration import wilson  # noqa: E402

WORLDS = ("normal", "uniform", "band", "clusters", "skewed", "trimodal", "heavy_tail", "two_bands")
METRICS = ("ddm", "max_gap", "top5_gap_sum")


def world(name: str, n: int, rng) -> np.ndarray:
    """n true difficulties on the standard scale (the bench's own generators; module docstring)."""
    if name == "normal":
        return rng.normal(0, 1, n)
    if name == "uniform":
        return rng.uniform(-2, 2, n)
    if name in ("band", "two_bands"):
        widths = [0.8] if name == "band" else [0.5, 0.5]
        u = rng.uniform(-2, 2 - sum(widths), n)
        starts = np.sort(rng.uniform(-1.8, 1.8 - sum(widths), len(widths)))
        shift = np.zeros(n)
        for start, width in zip(starts, widths):
            shift += np.where(u >= start, width, 0.0)
        return u + shift
    if name == "clusters":
        side = rng.random(n) < 0.5
        return np.where(side, rng.normal(-1.0, 0.35, n), rng.normal(1.2, 0.35, n))
    if name == "skewed":
        return rng.exponential(1.0, n) - 1.0
    if name == "trimodal":
        centre = rng.choice([-1.6, 0.0, 1.6], n, p=[0.3, 0.4, 0.3])
        return centre + rng.normal(0, 0.25, n)
    if name == "heavy_tail":
        return rng.standard_t(3, n) * 0.6
    raise ValueError(name)


def outer_fit(counts, trials, k, rng, how, theta_true):
    """The fit a user would run: θ means, b means and sds, b draws."""
    if how == "quadrature":
        from benchmeasure.irt.routes.collapsed.quadrature import sample

        draws = np.empty((400, counts.shape[1]))
        for i in range(counts.shape[1]):  # per item: its own present models
            present = trials[:, i] > 0
            kk = int(trials[present, i].max())
            draws[:, i] = sample(counts[present, i][None, :], kk, theta_true[present], size=400,
                                 seed=int(rng.integers(2**31)))[0]
        return theta_true, draws.mean(0), draws.std(0, ddof=1), draws
    from benchmeasure.core.matrix import ResponseMatrix
    from benchmeasure.irt.fit import fit_1pl

    m, n = counts.shape
    holes = bool((trials != k).any())
    matrix = ResponseMatrix([f"m{j}" for j in range(m)], [f"i{i}" for i in range(n)], counts, k,
                            trials=trials if holes else None)
    fit = fit_1pl(matrix, chains=2, tune=300, draws=300, seed=int(rng.integers(2**31)), cores=1,
                  route="auto" if holes else "collapsed")
    return fit.theta_mean, fit.b_mean, fit.b_sd, fit.draws("b")


def known_world_width(b, theta, trials, rng, top_k=5, sims=200, probability=0.94):
    """The width an interval would need if the world were known: the central 94 % of the inner estimator's
    errors over ``sims`` data sets drawn at the fixed true ``b`` and the true abilities."""
    est = PosteriorMeans(theta, trials)
    truth = {m: float(v[0]) for m, v in _metrics(b, top_k).items()}
    fits = _metrics([est(simulate_sums(b, theta, trials, rng)) for _ in range(sims)], top_k)
    tail = (1 - probability) / 2
    return {m: float(np.subtract(*np.nanquantile(fits[m] - truth[m], [1 - tail, tail]))) for m in truth}


def run_cell(name, n, k, holes, args):
    rng = np.random.default_rng([args.seed, WORLDS.index(name), n, k, int(holes * 100)])
    rows, seconds = [], []
    for _ in range(args.reps):
        theta = rng.normal(0, 1.5, args.models)
        b = world(name, n, rng)
        trials = np.full((args.models, n), k)
        if holes:
            trials[rng.random(trials.shape) < holes] = 0
            trials[:, (trials == 0).all(axis=0)] = k  # every item keeps at least one model
        counts = rng.binomial(trials, 1 / (1 + np.exp(-(theta[:, None] - b[None, :]))))
        theta_hat, b_mean, b_sd, draws = outer_fit(counts, trials, k, rng, args.outer, theta)
        tic = time.perf_counter()
        cal = calibrate(theta_hat, trials, counts, b_mean, b_sd, b_draws=draws, seed=int(rng.integers(2**31)),
                        budget_s=args.budget)
        seconds.append(time.perf_counter() - tic)
        truth = {m: float(v[0]) for m, v in _metrics(b, 5).items()}
        known = known_world_width(b, theta, trials, rng)
        rows.append({m: {"truth": truth[m], "known": known[m], **{key: cal["metrics"][m][key] for key in
                                              ("low", "high", "width", "known_world_width", "spans_most")}}
                     for m in METRICS})
    cell = {"seconds": float(np.mean(seconds)), "reps": args.reps}
    for m in METRICS:
        hits = sum(r[m]["low"] <= r[m]["truth"] <= r[m]["high"] for r in rows)
        low, high = wilson(hits, len(rows))
        width = float(np.median([r[m]["width"] for r in rows]))
        known = float(np.median([r[m]["known"] for r in rows]))
        cell[m] = {"hits": hits, "total": len(rows), "wilson": [low, high], "median_width": width,
                   "known_world_width": known, "ratio": width / known if known > 0 else None,
                   "spans_most": sum(r[m]["spans_most"] for r in rows)}
    return cell


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worlds", default="normal,uniform,band,clusters,skewed,trimodal,heavy_tail,two_bands")
    p.add_argument("--n", default="120,1000")
    p.add_argument("--k", default="1,8")
    p.add_argument("--holes", default="band:120:8,normal:1000:1",
                   help="extra cells with 20 %% absent cells, WORLD:N:K comma-separated (empty: none)")
    p.add_argument("--reps", type=int, default=12)
    p.add_argument("--models", type=int, default=12)
    p.add_argument("--outer", choices=("nuts", "quadrature"), default="nuts")
    p.add_argument("--budget", type=float, default=60.0, help="calibration time budget per fit (s)")
    p.add_argument("--seed", type=int, default=2912)
    p.add_argument("--json", help="write every cell here (after each cell)")
    args = p.parse_args()
    cells = [(w, int(n), int(k), 0.0) for w in args.worlds.split(",") for n in args.n.split(",")
             for k in args.k.split(",")]
    cells += [(w, int(n), int(k), 0.2) for w, n, k in (c.split(":") for c in args.holes.split(",") if c)]
    print(f"outer fit: {args.outer}; {args.models} models, {args.reps} replications per cell; 94 % intervals")
    print("| world | n | K | holes | metric | covered | Wilson 94 % | median width | known-world width | ratio | "
          "spans most | s per calibration |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    results = {}
    for name, n, k, holes in cells:
        cell = run_cell(name, n, k, holes, args)
        results[f"{name},{n},{k},{holes:g}"] = cell
        for m in METRICS:
            c = cell[m]
            ratio = "" if c["ratio"] is None else f"{c['ratio']:.1f}"
            flag = "" if c["hits"] >= 0.85 * c["total"] else " **below 85 %**"
            print(f"| {name} | {n} | {k} | {holes:.0%} | {m} | {c['hits']}/{c['total']}{flag} | "
                  f"[{c['wilson'][0]:.2f}, {c['wilson'][1]:.2f}] | {c['median_width']:.3f} | "
                  f"{c['known_world_width']:.3f} | {ratio} | {c['spans_most']} | {cell['seconds']:.1f} |", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
