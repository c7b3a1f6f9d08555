"""A model's full-benchmark accuracy from its anchor answers, with a predictive interval.

The target is the model's accuracy over its present cells of one benchmark: (correct on anchors + correct on
the other items) / all trials. The anchors' part is observed; the rest is a sum of Bernoulli trials whose
probabilities depend on θ. Given posterior nodes θ_q with weights w_q (a grid posterior, or Gauss–Hermite nodes
of a normal posterior), the rest has, at θ_q, mean μ_q = Σ K_i σ(θ_q − b_i) and variance Σ K_i p(1 − p); its
distribution is taken as the mixture Σ_q w_q Normal(μ_q, v_q) (normal approximation to each Poisson-binomial
sum). The point prediction is the mixture mean, the interval its central quantiles (found by bisection).

* :func:`one_ability_nodes` — one θ per model, the exact grid posterior given every anchor answered so far.
* :func:`correlated_nodes` — one θ per model per benchmark, θ ~ Normal(μ, Σ) across benchmarks: the joint
  posterior given the anchors by a Laplace approximation (Newton on the log posterior, which is concave), then
  the benchmark's marginal by Gauss–Hermite nodes. μ and Σ come from :func:`ability_covariance`.
* :func:`anchor_accuracy_interval` — the raw anchor accuracy and a normal interval with the finite-population
  correction (the baseline).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from benchmeasure.suite.calibration import GRID, ability_summary, grid_loglik, normalize, sigmoid

HERMITE_NODES, HERMITE_WEIGHTS = np.polynomial.hermite_e.hermegauss(41)
HERMITE_WEIGHTS = HERMITE_WEIGHTS / HERMITE_WEIGHTS.sum()


def one_ability_nodes(counts: np.ndarray, trials: np.ndarray, b: np.ndarray, mean: float = 0.0,
                      sd: float = 1.0, grid: np.ndarray = GRID) -> tuple[np.ndarray, np.ndarray]:
    """Grid posterior of θ for each model given the anchor answers (columns = anchors), under a
    Normal(``mean``, ``sd``²) prior: nodes (M, G), weights (``grid``: the paper-prior EM's, or the hierarchical
    one's, :data:`.hierarchical.GRID`)."""
    w = normalize(-0.5 * ((grid - mean) / sd)[None, :] ** 2 + grid_loglik(counts, trials, b, grid))
    return np.broadcast_to(grid, w.shape), w


def mixture_prediction(nodes: np.ndarray, weights: np.ndarray, b_rest: np.ndarray, k_rest: np.ndarray,
                       anchor_correct: np.ndarray, total_trials: np.ndarray, level: float
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predicted accuracy and interval per model.

    nodes, weights : (M, Q) posterior of the model's θ on this benchmark
    b_rest : (R,) difficulties of the non-anchor items; k_rest : (M, R) the model's trials on them (0 = absent)
    anchor_correct, total_trials : (M,) correct on this benchmark's anchors; all present trials of the benchmark
    """
    loc, scale = mixture_moments(nodes, b_rest, k_rest, anchor_correct, total_trials)
    return mixture_quantiles(loc, scale, weights, level)


def mixture_moments(nodes: np.ndarray, b_rest: np.ndarray, k_rest: np.ndarray, anchor_correct: np.ndarray,
                    total_trials: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd (M, Q) of the accuracy at each node: (anchors correct + rest's mean) / all trials."""
    p = sigmoid(nodes[:, :, None] - b_rest[None, None, :])           # (M, Q, R)
    mean = np.einsum("mqr,mr->mq", p, k_rest)
    var = np.einsum("mqr,mr->mq", p * (1 - p), k_rest)
    total = np.maximum(total_trials, 1).astype(float)[:, None]
    return (anchor_correct[:, None] + mean) / total, np.sqrt(np.maximum(var, 1e-12)) / total


def mixture_quantiles(loc: np.ndarray, scale: np.ndarray, weights: np.ndarray, level: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mixture Σ_q w_q Normal(loc_q, scale_q²) per model: its mean and central ``level`` interval."""
    predicted = (weights * loc).sum(axis=1)
    tail = (1 - level) / 2

    def quantile(q: float) -> np.ndarray:
        lo, hi = np.zeros(len(loc)), np.ones(len(loc))
        for _ in range(50):
            mid = (lo + hi) / 2
            below = (weights * ndtr((mid[:, None] - loc) / scale)).sum(axis=1) < q
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return (lo + hi) / 2

    return predicted, quantile(tail), quantile(1 - tail)


def ability_covariance(counts: list, trials: list, bs: list, grid: np.ndarray = GRID) -> tuple[np.ndarray, np.ndarray]:
    """μ and Σ of the per-benchmark abilities of the calibration models (method of moments).

    ``counts[d]``, ``trials[d]``, ``bs[d]``: benchmark d's columns. Each model's θ_d is estimated by its
    posterior mean under a wide prior; Σ is the covariance of those estimates over the models that answered
    both benchmarks, less the mean posterior variance on the diagonal (estimation noise), made positive
    definite by raising eigenvalues to at least 0.01.
    """
    est = [ability_summary(c, t, b, grid=grid) for c, t, b in zip(counts, trials, bs)]
    n_bench = len(est)
    mu = np.array([m[a].mean() for m, _, a in est])
    sigma = np.empty((n_bench, n_bench))
    for d in range(n_bench):
        for e in range(d, n_bench):
            both = est[d][2] & est[e][2]
            if both.sum() < 3:
                sigma[d, e] = sigma[e, d] = 1.0 if d == e else 0.0
                continue
            x, y = est[d][0][both], est[e][0][both]
            cov = float(np.mean((x - x.mean()) * (y - y.mean())) * both.sum() / (both.sum() - 1))
            if d == e:
                cov -= float(est[d][1][both].mean())
            sigma[d, e] = sigma[e, d] = cov
    values, vectors = np.linalg.eigh(sigma)
    sigma = (vectors * np.maximum(values, 0.01)) @ vectors.T
    return mu, sigma


def correlated_posterior(anchor_counts: list, anchor_trials: list, anchor_bs: list, mu: np.ndarray,
                         sigma: np.ndarray, iterations: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Laplace approximation of each model's joint posterior of (θ_1 … θ_D) given its anchors on every benchmark:
    the mode (M, D) by Newton steps on the concave log posterior, and the covariance (M, D, D)."""
    n_models, n_bench = anchor_counts[0].shape[0], len(mu)
    precision = np.linalg.inv(sigma)
    theta = np.tile(mu, (n_models, 1))
    correct = np.stack([c.sum(axis=1) for c in anchor_counts], axis=1).astype(float)
    for _ in range(iterations):
        grad = correct - (theta - mu) @ precision
        info = np.empty_like(theta)
        for d, (t, b) in enumerate(zip(anchor_trials, anchor_bs)):
            s = sigmoid(theta[:, d, None] - b[None, :])
            grad[:, d] -= (t * s).sum(axis=1)
            info[:, d] = (t * s * (1 - s)).sum(axis=1)
        hess = -precision[None] - info[:, :, None] * np.eye(n_bench)[None]
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        theta = theta - np.clip(step, -2.0, 2.0)
        if np.max(np.abs(step)) < 1e-8:
            break
    return theta, np.linalg.inv(-hess)


def correlated_nodes(theta: np.ndarray, cov: np.ndarray, target: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite nodes and weights of the Laplace marginal of θ_target, per model."""
    nodes = theta[:, target, None] + np.sqrt(cov[:, target, target])[:, None] * HERMITE_NODES[None, :]
    return nodes, np.broadcast_to(HERMITE_WEIGHTS, nodes.shape)


def anchor_accuracy_interval(correct: np.ndarray, trials: np.ndarray, population: np.ndarray, level: float
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raw anchor accuracy; interval p̂ ± z·sqrt(p̃(1 − p̃)/n · (1 − n/N)), p̃ = (s + ½)/(n + 1), clipped to [0, 1]."""
    n = np.maximum(trials, 1).astype(float)
    p = correct / n
    smooth = (correct + 0.5) / (n + 1)
    fpc = np.clip(1 - n / np.maximum(population, 1), 0.0, 1.0)
    half = ndtri(1 - (1 - level) / 2) * np.sqrt(smooth * (1 - smooth) / n * fpc)
    return p, np.clip(p - half, 0, 1), np.clip(p + half, 0, 1)
