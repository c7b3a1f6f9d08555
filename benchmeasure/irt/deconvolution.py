"""A population of difficulties learned from the data (empirical-Bayes deconvolution), and draws under it.

The paper's fit puts an iid Normal(0, 1) prior on every difficulty b_i. When the benchmark's
difficulties do not look like that (a band with no items, two clusters, a flat spread), the
posterior pulls each b_i toward a Gaussian bulk and the posterior sd smears the items into
every band: gaps are filled and tails grow (docs/gap_noise.md). Here the Normal(0, 1) is
replaced by a density g learned from the benchmark itself.

**From the saved draws alone.** A fit's draws of b_i come from p_i(b) = φ(b) L_i(b) / Z_i
(φ the Normal(0, 1) prior, L_i the item's likelihood averaged over the abilities' posterior).
For a density g that is constant on the bins of a grid (mass π_k on bin k of width w_k)

    ∫ g(b) L_i(b) db = Z_i Σ_k π_k A_ik,      A_ik = E_{p_i}[ 1{b ∈ bin k} / φ(b) ] / w_k,

so the marginal likelihood of g is known up to a constant from the draws (A is a Monte Carlo
average over them), and draws of b_i under the prior g are the fit's draws resampled with
weights g(b)/φ(b) (sampling importance resampling). Items are treated as independent given
g, which ignores the weak dependence through the shared abilities (a common shift of every
b, which min–max normalized metrics do not see).

**The density.** log π = α − logsumexp(α) on G bins, with a second-difference penalty
κ Σ (Δ²α)² on the log-density; κ is chosen by two-fold cross-validated marginal likelihood
over a fixed ladder, never by the benchmark's truth. Its uncertainty is carried by a
Bayesian bootstrap over items (Dirichlet(1, …, 1) weights; Rubin 1981): each replicate
refits g and draws one difficulty vector under it.
"""

from __future__ import annotations

import math

import numpy as np

from benchmeasure.base.errors import fail

PENALTIES = (0.01, 0.1, 1.0, 10.0, 100.0)
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _log_phi(b: np.ndarray) -> np.ndarray:
    return -0.5 * b * b - LOG_SQRT_2PI


def make_edges(b_draws: np.ndarray, bins: int = 80) -> np.ndarray:
    """``bins + 1`` equal-width bin edges covering every draw (with half a bin to spare each side)."""
    low, high = float(b_draws.min()), float(b_draws.max())
    if not high > low:
        fail("every difficulty draw is equal; no population density can be estimated")
    pad = 0.5 * (high - low) / bins
    return np.linspace(low - pad, high + pad, bins + 1)


def bin_likelihoods(b_draws, edges) -> tuple[np.ndarray, np.ndarray]:
    """``(A, bin_index)``: A[i, k] ∝ ∫_bin k L_i(b) db / w_k from draws of shape (D, N); bin of every draw (D, N).

    Rows of A are rescaled to a maximum of 1 (each item's constant Z_i does not matter).
    """
    b = np.asarray(b_draws, dtype=float)
    edges = np.asarray(edges, dtype=float)
    idx = np.clip(np.searchsorted(edges, b, side="right") - 1, 0, len(edges) - 2)
    weights = np.exp(-_log_phi(b))  # 1/φ(b)
    n_items, n_bins = b.shape[1], len(edges) - 1
    a = np.zeros((n_items, n_bins))
    rows = np.broadcast_to(np.arange(n_items), b.shape)
    np.add.at(a, (rows.ravel(), idx.ravel()), weights.ravel())
    a /= np.diff(edges)[None, :] * b.shape[0]
    a /= a.max(axis=1, keepdims=True)
    return a, idx


def _softmax(alpha: np.ndarray) -> np.ndarray:
    e = np.exp(alpha - alpha.max())
    return e / e.sum()


def _objective(alpha, a, w, kappa):
    pi = _softmax(alpha)
    m = a @ pi
    m = np.maximum(m, 1e-300)
    d2 = np.diff(alpha, 2)
    value = -(w * np.log(m)).sum() + kappa * (d2 @ d2)
    r = (a * pi[None, :]) * (w / m)[:, None]           # weighted responsibilities
    grad = -(r.sum(axis=0) - w.sum() * pi)
    pen = np.zeros_like(alpha)
    pen[:-2] += d2
    pen[1:-1] -= 2 * d2
    pen[2:] += d2
    return value, grad + 2 * kappa * pen


def _hessian(alpha, a, w, kappa):
    """Hessian of :func:`_objective` in α."""
    pi = _softmax(alpha)
    m = np.maximum(a @ pi, 1e-300)
    r = a * pi[None, :] / m[:, None]
    wr = r * w[:, None]
    h = -np.diag(wr.sum(axis=0)) + np.einsum("ik,il->kl", wr, r) + w.sum() * (np.diag(pi) - np.outer(pi, pi))
    d2 = np.diff(np.eye(alpha.size), 2, axis=0)
    return h + 2 * kappa * np.einsum("ik,il->kl", d2, d2)


def fit_density(a, weights=None, kappa: float = 1.0, start=None, *, tol: float = 1e-9) -> np.ndarray:
    """Bin masses π maximizing Σ_i w_i log(A_i · π) − κ Σ (Δ² log π)² (penalized marginal likelihood).

    Damped Newton (Levenberg–Marquardt) on α = log π up to a constant; a handful of small
    dense solves, no compiled optimizer (SciPy's L-BFGS-B spent seconds per fit in its
    threaded BLAS on a loaded 2-core machine).
    """
    a = np.asarray(a, dtype=float)
    w = np.ones(a.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    alpha = np.zeros(a.shape[1]) if start is None else np.log(np.maximum(start, 1e-300))
    alpha -= alpha.mean()
    value, grad = _objective(alpha, a, w, kappa)
    damping, eye = 1e-3, np.eye(alpha.size)
    for _ in range(500):
        h = _hessian(alpha, a, w, kappa) + 1e-8 * np.ones_like(eye)   # the constant direction: fixed
        try:
            step = -np.linalg.solve(h + damping * (np.abs(np.diag(h)).mean() + 1.0) * eye, grad)
        except np.linalg.LinAlgError:
            damping *= 10
            continue
        new_value, new_grad = _objective(alpha + step, a, w, kappa)
        if np.isfinite(new_value) and new_value <= value:
            alpha = alpha + step
            alpha -= alpha.mean()
            done = value - new_value < tol * (1 + abs(value))
            value, grad = new_value, new_grad
            damping = max(damping / 10, 1e-10)
            if done:
                break
        else:
            damping *= 10
            if damping > 1e12:
                break
    return _softmax(alpha)


def choose_penalty(a, seed: int, penalties=PENALTIES) -> tuple[float, dict]:
    """κ with the best two-fold cross-validated log marginal likelihood; also every κ's score."""
    rng = np.random.default_rng(seed)
    fold = rng.permutation(a.shape[0]) % 2
    scores = {}
    for kappa in penalties:
        total = 0.0
        for f in (0, 1):
            pi = fit_density(a[fold != f], kappa=kappa)
            total += float(np.log(np.maximum(a[fold == f] @ pi, 1e-300)).sum())
        scores[kappa] = total
    best = max(scores, key=scores.get)
    return best, scores


def resample_draws(b_draws, bin_index, pi, edges, rng, size: int = 1) -> np.ndarray:
    """``size`` difficulty vectors under the prior with bin masses ``pi`` (SIR of each item's draws), (size, N)."""
    b = np.asarray(b_draws, dtype=float)
    dens = np.log(np.maximum(pi / np.diff(edges), 1e-300))
    logw = dens[bin_index] - _log_phi(b)                 # (D, N): log g(b) − log φ(b)
    logw -= logw.max(axis=0, keepdims=True)
    w = np.exp(logw)
    cum = np.cumsum(w, axis=0)
    u = rng.random((size, b.shape[1])) * cum[-1][None, :]
    out = np.empty((size, b.shape[1]))
    for i in range(b.shape[1]):
        out[:, i] = b[np.minimum(np.searchsorted(cum[:, i], u[:, i], side="right"), b.shape[0] - 1), i]
    return out


def effective_sizes(b_draws, bin_index, pi, edges) -> np.ndarray:
    """Kish effective sample size of each item's importance weights g/φ (how well its draws cover g)."""
    b = np.asarray(b_draws, dtype=float)
    logw = np.log(np.maximum(pi / np.diff(edges), 1e-300))[bin_index] - _log_phi(b)
    w = np.exp(logw - logw.max(axis=0, keepdims=True))
    return w.sum(axis=0) ** 2 / (w * w).sum(axis=0)


def population_draws(b_draws, *, replicates: int = 200, per_replicate: int = 2, bins: int = 80,
                     max_draws: int = 1000, seed: int = 0) -> tuple[np.ndarray, dict]:
    """Difficulty vectors under a learned population with its uncertainty (module docstring).

    Parameters
    ----------
    b_draws : array_like, shape (D, N)
        Posterior draws of the fit under the Normal(0, 1) prior.
    replicates : int
        Bayesian-bootstrap refits of the population density.
    per_replicate : int
        Difficulty vectors drawn under each refit.
    max_draws : int
        The fit's draws are thinned to at most this many (evenly spaced) before use.

    Returns
    -------
    (ndarray of shape (replicates · per_replicate, N), dict)
        The draws, and ``{"penalty", "bins", "min_effective_draws", "median_effective_draws", "density",
        "edges"}``.
    """
    b = np.asarray(b_draws, dtype=float)
    if b.ndim != 2 or b.shape[1] < 2 or b.shape[0] < 2:
        fail(f"the noise-aware estimator needs draws of shape (draws ≥ 2, items ≥ 2), got {b.shape}")
    if b.shape[0] > max_draws:
        b = b[np.linspace(0, b.shape[0] - 1, max_draws).round().astype(int)]
    rng = np.random.default_rng(seed)
    edges = make_edges(b, bins)
    a, idx = bin_likelihoods(b, edges)
    kappa, _ = choose_penalty(a, seed)
    pi_hat = fit_density(a, kappa=kappa)
    out = []
    n = b.shape[1]
    for _ in range(replicates):
        w = rng.dirichlet(np.ones(n)) * n
        pi = fit_density(a, weights=w, kappa=kappa, start=pi_hat)
        out.append(resample_draws(b, idx, pi, edges, rng, per_replicate))
    ess = effective_sizes(b, idx, pi_hat, edges)
    info = {"penalty": kappa, "bins": bins, "min_effective_draws": float(ess.min()),
            "median_effective_draws": float(np.median(ess)), "density": pi_hat / np.diff(edges),
            "edges": edges}
    return np.concatenate(out, axis=0), info
