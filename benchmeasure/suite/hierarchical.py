"""The hierarchical prior on a suite's EM calibration (``fit-suite`` and ``chain --prior hierarchical``).

The prior is the registry's (:data:`benchmeasure.irt.priors.PRIORS`, ``hierarchical``), per benchmark: θ_j ~
Normal(0, σ_θ), b_i ~ Normal(μ_b,k, σ_b,k) for the items of benchmark k, with the registry's hyperpriors σ_θ,
σ_b,k ~ HalfNormal(h) and μ_b,k ~ Normal(0, h), h = :data:`benchmeasure.irt.priors.HYPER_SCALE`. The EM of
:mod:`.calibration` (θ integrated out on a grid, each b at its mode) is extended by the hyperparameters, which are
estimated with the difficulties (empirical Bayes; what the paper-prior EM does with its fixed N(0, 1) and
N(0, 3²)). Each iteration:

* E-step: every model's posterior over :data:`GRID` (the paper-prior grid's step 0.2 over twice its span, ±12: an
  LLM panel's abilities reach −7 and beyond, where the ±6 grid would cut them off) under N(0, σ_θ²);
* σ_θ: the exact EM update of the θ-marginal likelihood, the mode of −M log σ − S/(2σ²) − σ²/(2h²) with
  S = Σ_j E[θ_j²] (:func:`scale_mode`);
* b: Newton steps on each free item's expected complete-data log-likelihood plus log N(b; μ_b,k, σ_b,k²), as the
  paper-prior EM does with its N(0, 3²);
* the panel's location (all free b and μ_b,k moved by one c; only the priors on θ and μ_b hold it, so plain EM
  creeps along that ridge): one Newton step in c (:func:`_location_step`) before the b update. Its gradient and
  curvature come from the identity "moving b is moving θ's prior mean", exact for the integral but not for a
  sum over the grid: where each model's posterior is narrower than the grid's step (thousands of items per model:
  sd 0.025–0.031 on MMLU-Pro's first 10 categories, step 0.2), E[θ] moves in steps as c moves, and the whole
  Newton step overshot and turned back every iteration (a cycle: MMLU-Pro's 10-category calibration on 22 models
  changed by 0.034 per iteration up to the 2,000-iteration cap). So the step is bounded once it turns back: after
  a step of the other sign than the last, no step is longer than half the last one. The bound never grows, so
  each turn halves it, the location step fades, and the b, μ_b, σ_b updates (EM on the grid) finish (52
  iterations on that calibration); where the step never turns back (ZeroEval, MMLU-Pro's 14 categories on every
  model) the iteration is the unbounded one's, step for step;
* μ_b,k, σ_b,k: the normal-hierarchy EM update with each free b_i's conditional posterior approximated by a normal
  at its mode, variance v_i = 1/(information + 1/σ_b,k²) (Laplace): μ = Σ b_i/(n + σ²/h²), then σ the mode of
  −n log σ − Σ((b_i − μ)² + v_i)/(2σ²) − σ²/(2h²). The v_i keep σ_b from collapsing, as a joint mode of b and
  σ_b would (its density grows without bound as every b meets μ_b and σ_b → 0); items whose data say little
  (solved by every model, or by none) have v_i ≈ σ_b² and leave σ_b to the others.

So what is computed is the EM's fixed point: the marginal MAP difficulties given hyperparameters that maximize the
marginal likelihood, θ integrated exactly on the grid and each b by the Laplace approximation (the only
approximation added to the paper-prior EM). Fixed items (the chain's earlier benchmarks) keep their b and inform
the E-step only; a benchmark without free items keeps its starting hyperparameters.

How precisely the grid sets the panel's location: where each model's posterior is narrower than the grid's step,
the sum over the grid is not smooth along the ridge, and the fixed point reached depends on the path to within a
fraction of a step. Measured (2026-12-07): on ChemBench the bounded and unbounded steps end 0.003 apart, one common
shift of every b (b_i − b_k agree to 0.0002); on simulated 10 × 2,000 panels where both converge, 0.04–0.07 apart,
again mostly one shift (b_i − b_k to 0.003–0.02). A common shift moves θ with b and leaves σ(θ − b) unchanged, so
predicted accuracies do not move with it; the remedy for the rest is quadrature on each model's own posterior
(adaptive Gauss–Hermite), not done here.

A spread the data cannot estimate collapses: the HalfNormal's mode is 0, so a benchmark of one or a few items, or a
panel whose models answered alike, drives σ_b,k or σ_θ towards 0 and pools its parameters at the mean (a mode of a
scale is not its posterior mean). :meth:`Hyper.collapsed` names them and the commands warn; the NUTS routes
(``fit --prior hierarchical``, ``fit-suite --abilities correlated``) average over the scale instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmeasure.irt.priors import HYPER_SCALE
from benchmeasure.suite.calibration import grid_loglik, normalize, sigmoid

GRID = np.linspace(-12.0, 12.0, 121)
START_SIGMA_B = 3.0   # the paper-prior EM's b sd: where the hyperparameters start
COLLAPSED = 0.05      # a spread estimated below this has collapsed (module docstring, last paragraph)


@dataclass(frozen=True)
class Hyper:
    """The hierarchical prior's hyperparameters in the EM: σ_θ, and μ_b, σ_b per benchmark (index = group)."""

    sigma_theta: float
    mu_b: np.ndarray
    sigma_b: np.ndarray
    estimated: np.ndarray   # (groups,) True where the group had free items (else its starting values)

    def collapsed(self, names: list) -> list:
        """The spreads estimated below :data:`COLLAPSED`, in words (``names[k]`` is group k)."""
        out = [f"sigma_theta {self.sigma_theta:.2g}"] if self.sigma_theta < COLLAPSED else []
        return out + [f"sigma_b of {name} {self.sigma_b[k]:.2g}" for k, name in enumerate(names)
                      if k < self.estimated.size and self.estimated[k] and self.sigma_b[k] < COLLAPSED]

    def record(self, names: list) -> dict:
        """The estimates by benchmark name (``names[k]`` is group k), for a command's record; groups with no free
        item are left out."""
        return {"sigma_theta": float(self.sigma_theta), "collapsed": self.collapsed(names),
                "per_benchmark": {name: {"mu_b": float(self.mu_b[k]), "sigma_b": float(self.sigma_b[k])}
                                  for k, name in enumerate(names) if k < self.estimated.size and self.estimated[k]}}


def scale_mode(sum_sq: float, n: int, hyper_scale: float = HYPER_SCALE) -> float:
    """The σ > 0 maximizing −n log σ − S/(2σ²) − σ²/(2h²) (n normal terms with Σ squares S, a HalfNormal(h) prior):
    σ⁴/h² + nσ² − S = 0, so σ² = h²(√(n² + 4S/h²) − n)/2."""
    h2 = hyper_scale**2
    disc = np.sqrt(n * n + 4.0 * sum_sq / h2)
    return float(np.sqrt(max(h2 * (disc - n) / 2.0, 1e-12)))


def fit_items_hierarchical(counts: np.ndarray, trials: np.ndarray, b_start: np.ndarray, free: np.ndarray,
                           groups: np.ndarray, *, tol: float = 1e-4, max_iter: int = 2000
                           ) -> tuple[np.ndarray, np.ndarray, int, Hyper]:
    """The EM above: (b, weights over :data:`GRID` (M, G), iterations, :class:`Hyper`).

    ``groups`` (N,) the benchmark index of each column; ``free`` the columns to estimate, the others keep
    ``b_start``.
    """
    b = np.where(np.isfinite(b_start), b_start, 0.0).astype(float)
    free = np.asarray(free, dtype=bool)
    groups = np.asarray(groups, dtype=np.int64)
    n_groups = int(groups.max()) + 1 if groups.size else 0
    counts = np.asarray(counts, dtype=float)
    trials = np.asarray(trials, dtype=float)
    fixed_ll = grid_loglik(counts[:, ~free], trials[:, ~free], b[~free], GRID)
    c_free, t_free = counts[:, free], trials[:, free]
    g_free = groups[free]
    estimated = np.bincount(g_free, minlength=n_groups) > 0
    bf = b[free].copy()
    sigma_theta = 1.0
    mu = np.array([b[~free][groups[~free] == k].mean() if np.any(groups[~free] == k) else 0.0
                   for k in range(n_groups)])
    sigma = np.full(n_groups, START_SIGMA_B)
    n_models = counts.shape[0]
    bound, last = np.inf, 0.0   # the location step's bound and its last step
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        w = normalize(-0.5 * (GRID / sigma_theta) ** 2 + fixed_ll + grid_loglik(c_free, t_free, bf, GRID))
        old = np.concatenate([bf, mu, sigma, [sigma_theta]])
        if free.all():   # the panel's location: a Newton step along the ridge, bounded (module docstring)
            step = _location_step(w, sigma_theta, mu[estimated])
            if step * last < 0:   # it turned back: at most half the last step from now on (module docstring)
                bound = abs(last) / 2
            shift = last = float(np.clip(step, -bound, bound))
            bf, mu = bf + shift, mu + np.where(estimated, shift, 0.0)
            w = normalize(-0.5 * (GRID / sigma_theta) ** 2 + grid_loglik(c_free, t_free, bf, GRID))
        r, n = w.T @ c_free, w.T @ t_free
        m_i, s2_i = mu[g_free], sigma[g_free] ** 2
        for _ in range(4):
            s = sigmoid(GRID[:, None] - bf[None, :])
            grad = (n * s - r).sum(axis=0) - (bf - m_i) / s2_i
            hess = -(n * s * (1 - s)).sum(axis=0) - 1.0 / s2_i
            bf = bf - np.clip(grad / hess, -1.0, 1.0)
        s = sigmoid(GRID[:, None] - bf[None, :])
        variance = 1.0 / ((n * s * (1 - s)).sum(axis=0) + 1.0 / s2_i)
        for k in np.flatnonzero(estimated):
            mine = g_free == k
            count = int(mine.sum())
            mu[k] = bf[mine].sum() / (count + sigma[k] ** 2 / HYPER_SCALE**2)
            sigma[k] = scale_mode(float(((bf[mine] - mu[k]) ** 2 + variance[mine]).sum()), count)
        sigma_theta = scale_mode(float((w @ GRID**2).sum()), n_models)
        change = np.abs(np.concatenate([bf, mu, sigma, [sigma_theta]]) - old)
        if np.max(change, initial=0.0) < tol:
            break
    else:
        import logging

        logging.getLogger(__name__).warning("hierarchical EM stopped after %d iterations (largest change %.2g)",
                                            max_iter, float(np.max(change)))
    b[free] = bf
    w = normalize(-0.5 * (GRID / sigma_theta) ** 2 + fixed_ll + grid_loglik(c_free, t_free, bf, GRID))
    return b, w, it, Hyper(sigma_theta, mu, sigma, estimated)


def _location_step(w: np.ndarray, sigma_theta: float, mu: np.ndarray) -> float:
    """The Newton step c along the direction (b + c, μ_b + c) of the marginal log posterior, whose likelihood part
    depends on θ − b only: moving every b by c is moving θ's prior mean by −c, so the gradient is
    −Σ_j E[θ_j]/σ_θ² − Σ_k μ_b,k/h² and the curvature −M/σ_θ² + Σ_j Var[θ_j]/σ_θ⁴ − K/h² (E and Var under the
    E-step's weights ``w``)."""
    mean = w @ GRID
    var = w @ GRID**2 - mean**2
    h2 = HYPER_SCALE**2
    grad = -mean.sum() / sigma_theta**2 - mu.sum() / h2
    curv = -w.shape[0] / sigma_theta**2 + var.sum() / sigma_theta**4 - mu.size / h2
    return float(-grad / curv) if curv < 0 else 0.0
