"""Held-out log-loss of the paper's N(0, 1) prior against the hierarchical prior (``fit --prior``) on real matrices.

For each shared real matrix (``/work/shared/data``: ChemBench, ZeroEval GSM8K and MATH level 5; MMLU-Pro with
``--mmlu-pro``), a random ``--holdout`` share of the present cells is made absent (a hole, as ``fit --allow-missing``
reads a blank cell), the 1PL is fitted by NUTS under each prior (paper: ``--route auto``, the project's default path;
hierarchical: the joint route, the only one that fits it, on its compiled density; ``--paper-route`` picks the paper
prior's route), and each held-out cell's log-loss is
−log E_post[P(y | θ_m, b_i)] (the posterior predictive of its count, per trial). Printed: the mean over the held-out
cells with its standard error, the paired difference (hierarchical − paper) with its standard error, the fitted
hyperparameters, the fits' max R-hat and wall time.

    .venv-irt/bin/python bench/bench_priors.py                          # 2 chains x (300 + 300), 10 % held out
    .venv-irt/bin/python bench/bench_priors.py --only zeroeval/math_l5 --draws 150
"""

from __future__ import annotations

import argparse
import csv
import os
import runpy
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
runpy.run_path(str(ROOT / "scripts" / "_bootstrap.py"))["use_checkout"]()
_machine = runpy.run_path(str(Path(__file__).with_name("machine.py")))  # CPU name and versions, shared by the benches
cpu_name, versions = _machine["cpu_name"], _machine["versions"]

from benchmeasure.core.matrix import ResponseMatrix  # noqa: E402
from benchmeasure.irt.fit import available_cpus, fit_1pl  # noqa: E402
from benchmeasure.irt.plan import FitSettings  # noqa: E402

DATA = Path("/work/shared/data")
MATRICES = ("chembench", "zeroeval/gsm8k", "zeroeval/math_l5")


def read_wide(path: Path):
    """ChemBench's wide table: items as rows, models as columns, 0.0/1.0 cells."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    models = rows[0][1:]
    items = [r[0] for r in rows[1:]]
    values = np.array([[float(v) for v in r[1:]] for r in rows[1:]]).T
    return models, items, values.astype(np.int64), np.ones_like(values, dtype=np.int64)


def read_long(path: Path):
    """``model,item_id,correct`` rows (one graded answer each; absent pairs are holes)."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    models = sorted({r["model"] for r in rows})
    items = sorted({r["item_id"] for r in rows})
    mi, ii = {m: k for k, m in enumerate(models)}, {i: k for k, i in enumerate(items)}
    counts = np.zeros((len(models), len(items)), dtype=np.int64)
    trials = np.zeros_like(counts)
    for r in rows:
        j, i = mi[r["model"]], ii[r["item_id"]]
        counts[j, i] += int(float(r["correct"]))
        trials[j, i] += 1
    return models, items, counts, trials


def load(name: str):
    folder = DATA / name
    return read_wide(folder / "binary_matrix.csv") if (folder / "binary_matrix.csv").exists() else read_long(
        folder / "responses_long.csv")


def log_loss(result, counts, trials, cells) -> np.ndarray:
    """Per held-out cell, −log of the posterior predictive probability of its count, per trial."""
    from scipy.special import gammaln, logsumexp

    theta, b = result.draws("theta"), result.draws("b")
    j, i = cells
    eta = theta[:, j] - b[:, i]                                        # (draws, cells)
    y, k = counts[j, i], trials[j, i]
    logp = y * -np.logaddexp(0.0, -eta) + (k - y) * -np.logaddexp(0.0, eta)
    logp += gammaln(k + 1) - gammaln(y + 1) - gammaln(k - y + 1)
    return -(logsumexp(logp, axis=0) - np.log(eta.shape[0])) / k


def run(name, args):
    models, items, counts, trials = load(name)
    rng = np.random.default_rng(args.seed)
    present = np.argwhere(trials > 0)
    held = present[rng.random(len(present)) < args.holdout]
    cells = (held[:, 0], held[:, 1])
    fit_trials = trials.copy()
    fit_trials[cells] = 0
    fit_counts = np.where(fit_trials > 0, counts, 0)
    keep = fit_trials.sum(axis=0) > 0                                   # an item with no cell left is dropped
    index = np.cumsum(keep) - 1
    held_keep = keep[cells[1]]
    cells = (cells[0][held_keep], index[cells[1][held_keep]])
    counts_k, trials_k = counts[:, keep], trials[:, keep]
    matrix = ResponseMatrix(list(models), [it for it, k in zip(items, keep) if k], fit_counts[:, keep],
                            int(trials.max()), trials=fit_trials[:, keep])
    out = {"name": name, "shape": f"{len(models)} x {int(keep.sum())}", "held": len(cells[0])}
    for prior, route in (("paper", args.paper_route), ("hierarchical", "joint")):
        settings = FitSettings(chains=args.chains, tune=args.tune, draws=args.draws, seed=args.seed, route=route,
                               prior=prior, cores=min(args.chains, available_cpus()))
        start = time.perf_counter()
        result = fit_1pl(matrix, settings=settings)
        wall = time.perf_counter() - start
        loss = log_loss(result, counts_k, trials_k, cells)
        hyper = (result.diagnostics.get("prior") or {}).get("hyperparameters", {})
        density = (result.diagnostics.get("prior") or {}).get("density")
        out[prior] = {"loss": loss, "route": result.settings["route"] + (f" ({density})" if density else ""),
                      "r_hat": result.diagnostics["max_r_hat"], "wall": wall,
                      "hyper": {k: v["mean"] for k, v in hyper.items()}}
        print(f"  {name}: {prior} prior on the {out[prior]['route']} route, {wall:.0f} s, held-out log-loss "
              f"{loss.mean():.4f}, max R-hat {out[prior]['r_hat']:.3f}, load average {os.getloadavg()[0]:.1f}",
              file=sys.stderr, flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--holdout", type=float, default=0.10, help="share of present cells held out (default 0.1)")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--tune", type=int, default=300)
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", action="append", help="a matrix folder under /work/shared/data (repeatable)")
    parser.add_argument("--paper-route", default="auto", choices=("auto", "joint", "collapsed", "gibbs"),
                        help="the paper prior's route (default auto, the project's default path)")
    parser.add_argument("--mmlu-pro", action="store_true", help="also MMLU-Pro (29 x 12,032: minutes more)")
    args = parser.parse_args(argv)
    names = args.only or list(MATRICES) + (["mmlu_pro"] if args.mmlu_pro else [])
    print(f"machine: {cpu_name()}, {available_cpus()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; "
          f"{versions(['numpy', 'pymc', 'nutpie', 'numba'])}")
    print(f"held-out log-loss per trial, {100 * args.holdout:g} % of present cells held out (seed {args.seed}); "
          f"NUTS {args.chains} chains x ({args.tune} + {args.draws}); mean ± standard error over the held-out cells")
    rows = [run(name, args) for name in names]
    head = (f"{'matrix':<18} {'models x items':>15} {'held out':>8}  {'paper N(0,1)':>16}  {'hierarchical':>16}  "
            f"{'hier - paper':>18}  {'sigma_theta':>11} {'mu_b':>6} {'sigma_b':>7}  "
            f"{'R-hat p/h':>11}  {'wall s p/h':>10}  routes p/h")
    print(head)
    for r in rows:
        p, h = r["paper"], r["hierarchical"]
        d = h["loss"] - p["loss"]
        se = lambda x: x.std(ddof=1) / np.sqrt(x.size)  # noqa: E731
        print(f"{r['name']:<18} {r['shape']:>15} {r['held']:>8}  {p['loss'].mean():>8.4f} ± {se(p['loss']):.4f}  "
              f"{h['loss'].mean():>8.4f} ± {se(h['loss']):.4f}  {d.mean():>+9.4f} ± {se(d):.4f}  "
              f"{h['hyper'].get('sigma_theta', np.nan):>11.2f} {h['hyper'].get('mu_b', np.nan):>6.2f} "
              f"{h['hyper'].get('sigma_b', np.nan):>7.2f}  {p['r_hat']:>5.3f}/{h['r_hat']:.3f}  "
              f"{p['wall']:>4.0f}/{h['wall']:.0f}  {p['route']} / {h['route']}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
