"""How much recall of planted wrong keys any item test can reach: the exact conditional (Rasch) test at known abilities.

Under the 1PL with abilities θ known, an item's total successes r is sufficient for its b, and given r the
successes fall on the models with probability ∝ exp(Σ_j y_j θ_j) (binary cells, K = 1): b drops out. The lower
tail P(Σ_j y_j θ_j ≤ observed | r) is then the uniformly most powerful unbiased test of "success runs against
ability" (a reversed response curve) with b a nuisance — no item test that sees only the item's responses and the
abilities does better. It is computed exactly here, by a dynamic programme over models on a 0.001-logit grid of
Σ θ (the grid's rounding moved to the conservative side), once per pattern of present models.

For each shared real matrix (bench/bench_check_fit.py's readers and its planting: 2 % of the varied items
inverted for every model, one model's row shuffled, 5 items made unsolvable; same seed, same planted items) the
test runs at Benjamini–Hochberg FDR 5 % with
  * the **oracle** abilities: the MAP fit of the unmodified matrix (what a test could use if the defects did not
    move the abilities), and
  * the abilities of the planted matrix's own MAP fit (what any real check has), then
  * those abilities re-estimated without the flagged items, three rounds ("purification", as in DIF analysis).
Printed: keys planted, flagged, precision and recall (items flagged on the unmodified matrix count neither way).

Last, the likelihood-ratio route against the reversed curve itself: a **two-group model** (ours) in which each item
is either a 1PL item or a reversed one (P(y = 1) = σ(b − θ), a wrong key), with the reversed share π, each b
integrated on a grid under N(μ, s²) and θ ~ N(0, 1) re-estimated by EM with every item weighted by its posterior
probability of being reversed (so a wrong key stops lifting the weak models' θ); items are flagged in order of that
probability while the mean posterior probability of the flagged being 1PL items (the Bayesian FDR) stays ≤ 5 %.
It is run with s = 1 (the paper's prior) and s = 2, from the planted fit's θ, and on the unmodified matrix for
its suspects.

    .venv-irt/bin/python bench/bench_wrong_key_bound.py                      # all four matrices
    .venv-irt/bin/python bench/bench_wrong_key_bound.py --matrices chembench
"""

from __future__ import annotations

import argparse
import runpy
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CHECK = runpy.run_path(str(HERE / "bench_check_fit.py"), run_name="bench_check_fit")   # load, plant, score
_machine = runpy.run_path(str(HERE / "machine.py"))

from benchmeasure.analyses.item_fit import benjamini_hochberg  # noqa: E402
from benchmeasure.irt.fit import fit_1pl  # noqa: E402

GRID = 1e-3   # logits per step of Σ θ


def conditional_lower_tail(theta: np.ndarray, y: np.ndarray, present: np.ndarray) -> np.ndarray:
    """P(Σ_j y_ji θ_j ≤ observed | Σ_j y_ji) per item i (K = 1 cells; absent cells left out), exactly up to the grid."""
    p = np.ones(y.shape[1])
    patterns: dict = {}
    for i in range(y.shape[1]):
        patterns.setdefault(present[:, i].tobytes(), []).append(i)
    for key, columns in patterns.items():
        mask = np.frombuffer(key, dtype=bool)
        th = theta[mask]
        steps = np.round((th - th.min()) / GRID).astype(int)
        m, top = len(th), int(steps.sum()) + 1
        weight = np.exp(th - th.max())
        mass = np.zeros((m + 1, top))   # mass[r, t]: Σ over sets of r models with Σ steps = t of Π weights
        mass[0, 0] = 1.0
        for j in range(m):
            mass[1:, steps[j]:] = mass[1:, steps[j]:] + mass[:-1, :top - steps[j]] * weight[j]
        tail = np.cumsum(mass, axis=1)
        tail /= np.maximum(tail[:, -1:], 1e-300)
        for i in columns:
            yi = y[mask, i] > 0
            observed = int(steps[yi].sum()) + (m + 1) // 2   # rounding of up to half a step per model: conservative
            p[i] = tail[int(yi.sum()), min(observed, top - 1)]
    return p


def mode_abilities(theta, b, y, k, left_out, steps: int = 30):
    """Each θ_j at its posterior mode (N(0, 1) prior) given b, on the items not ``left_out``."""
    use = (~left_out)[None, :] & (k > 0)
    th = theta.copy()
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(th[:, None] - b[None, :])))
        th = th + (np.where(use, y - k * p, 0).sum(1) - th) / (np.where(use, k * p * (1 - p), 0).sum(1) + 1)
    return th


B_GRID = np.linspace(-8.0, 8.0, 81)


def _marginal(theta, y, k, sign, log_prior):
    """Per item: log ∫ Π_j Binom(y_j | k_j, σ(sign·θ_j − b)) N(b) db on the grid, and b's posterior mean."""
    eta = sign * theta[:, None] - B_GRID[None, :]
    log_p, log_q = -np.logaddexp(0.0, -eta), -np.logaddexp(0.0, eta)
    ll = y.T.astype(float) @ log_p + (k - y).T.astype(float) @ log_q + log_prior
    top = ll.max(axis=1)
    weight = np.exp(ll - top[:, None])
    return top + np.log(weight.sum(axis=1)), (weight @ B_GRID) / weight.sum(axis=1)


def two_group(theta, y, k, b_mu: float, b_sd: float, fdr: float = 0.05, sweeps: int = 40) -> np.ndarray:
    """Items flagged by the two-group EM (1PL item or reversed curve; see the module docstring)."""
    log_prior = -0.5 * ((B_GRID - b_mu) / b_sd) ** 2
    log_prior -= np.log(np.exp(log_prior).sum())
    share, th, use = 0.02, theta.copy(), k > 0
    for _ in range(sweeps):
        up, b_up = _marginal(th, y, k, 1.0, log_prior)
        down, b_down = _marginal(th, y, k, -1.0, log_prior)
        q = 1.0 / (1.0 + np.exp(np.clip(up - down, -700, 700)) * (1 - share) / share)
        share = (q.sum() + 1) / (len(q) + 2)
        for _ in range(3):   # Newton steps for θ with the items' responses read both ways, weighted by q
            p_up = 1.0 / (1.0 + np.exp(b_up[None, :] - th[:, None]))
            p_down = 1.0 / (1.0 + np.exp(b_down[None, :] + th[:, None]))
            grad = ((1 - q) * np.where(use, y - k * p_up, 0) - q * np.where(use, y - k * p_down, 0)).sum(1) - th
            info = ((1 - q) * np.where(use, k * p_up * (1 - p_up), 0)
                    + q * np.where(use, k * p_down * (1 - p_down), 0)).sum(1) + 1
            th = th + grad / info
    order = np.argsort(-q)
    mean_null = np.cumsum(1 - q[order]) / np.arange(1, len(q) + 1)
    below = np.flatnonzero(mean_null <= fdr)
    flagged = np.zeros(len(q), dtype=bool)
    flagged[order[:below[-1] + 1 if len(below) else 0]] = True
    return flagged


def one(name: str, seed: int, work: Path) -> list:
    rng = np.random.default_rng(seed)   # as bench_check_fit: the planting is the first use of the generator
    matrix = CHECK["load"](Path("/work/shared/data"), name, work)
    start = time.perf_counter()
    clean = fit_1pl(matrix, method="map", seed=seed)
    planted, inverted, _, _ = CHECK["plant"](matrix, rng)
    fit = fit_1pl(planted, method="map", seed=seed + 1)
    k = CHECK["trials_of"](matrix)
    present, items = k > 0, np.array(matrix.items)
    accuracy = matrix.counts.sum(0) / np.maximum(k.sum(0), 1)
    middle = {items[i] for i in range(len(items)) if items[i] in inverted and 0.1 <= accuracy[i] <= 0.9}
    runs = [("oracle θ (unmodified matrix)", clean.theta_mean), ("θ of the planted fit", fit.theta_mean)]
    base = mode_abilities(fit.theta_mean, fit.b_mean, planted.counts, k, np.zeros(len(items), bool))
    theta = fit.theta_mean
    for round_ in range(3):
        left_out = benjamini_hochberg(conditional_lower_tail(theta, planted.counts, present)) <= 0.05
        theta = fit.theta_mean + mode_abilities(base, fit.b_mean, planted.counts, k, left_out) - base
        runs.append((f"purified, round {round_ + 1} ({int(left_out.sum())} left out)", theta))
    rows = []
    for label, th in runs:
        suspects = set(items[benjamini_hochberg(conditional_lower_tail(th, matrix.counts, present)) <= 0.05])
        flagged = set(items[benjamini_hochberg(conditional_lower_tail(th, planted.counts, present)) <= 0.05])
        precision, recall = CHECK["score"](flagged, inverted, suspects)
        rows.append((name, f"{len(matrix.models)}×{len(items)}", label, len(inverted), len(flagged), precision,
                     recall, len(flagged & middle) / max(len(middle), 1), f"{np.ptp(th):.2f}"))
    for b_sd in (1.0, 2.0):
        b_mu = float(np.mean(fit.b_mean))
        suspects = set(items[two_group(clean.theta_mean, matrix.counts, k, b_mu, b_sd)])
        flagged = set(items[two_group(fit.theta_mean, planted.counts, k, b_mu, b_sd)])
        precision, recall = CHECK["score"](flagged, inverted, suspects)
        rows.append((name, f"{len(matrix.models)}×{len(items)}", f"two-group EM, b prior sd {b_sd:g}",
                     len(inverted), len(flagged), precision, recall, len(flagged & middle) / max(len(middle), 1),
                     "(EM)"))
    print(f"done {name} ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matrices", nargs="+", default=["chembench", "gsm8k", "math_l5", "mmlu_pro"],
                        choices=sorted(CHECK["SOURCES"]))
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.matrices:
            rows += one(name, args.seed, Path(tmp))
    print("| matrix | M×N | abilities | wrong keys | flagged | precision | recall | recall, acc. 0.1–0.9 | θ range |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.2f} | {r[6]:.2f} | {r[7]:.2f} | {r[8]} |")
    print(f"\nmachine: {_machine['cpu_name']()}; exact conditional test, BH FDR 0.05; two-group EM, Bayesian FDR "
          "0.05; MAP fits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
