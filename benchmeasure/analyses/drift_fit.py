"""The fit that drift tests are judged against: a MAP 1PL (optionally one slope per item group) and, per model,
the item difficulties without that model's responses.

Model: ``P(correct) = σ(a_g(i)·(θ_m − b_i))`` with binomial cells (K per cell, 0 = a hole), θ ~ N(0, 1),
b_i ~ N(μ_i, 3²) (μ = 0 unless given: drift gives each item the mean difficulty of its month, see
:func:`benchmeasure.analyses.drift.run_drift`), log a_g ~ N(0, 0.5²). With slopes, in two stages: the slopes'
ratios from the joint mode with every group's a free (log a_g ~ N(0, 0.5²) on each), then, on the largest group's
scale (its a = 1, the 1PL's scale; the likelihood is the same for (sθ, sb, a/s)), θ and b at their mode with the
slopes held, under the priors above as they read on that scale (what the leave-out steps use). With one
group (``a`` = 1) it is the project's 1PL at its mode. Fitted by
alternating Newton steps (θ, then b, then a), each a set of 1-D problems, vectorized with NumPy, with a step
along each direction the likelihood is flat in (a common shift of θ and b; with slopes, a common scale), which
only the priors set and the alternating steps cross slowly.

Why the scale is free during the fit: pinning the reference group's a = 1 while fitting left the priors' pull on
the scale (θ ~ N(0, 1) and b ~ N(μ, 3²) favour a narrower θ and b) nowhere to go but the other groups' slopes: on
the bench's slopes worlds with the steep release (a = 1.6) as the reference, the other releases' slopes came out
5 % (3–5 Laplace s.d.) above their true ratio to it, a misfit by release — by date — that the bootstrap's draw
of the estimates' error does not hold (docs/drift.md).

Leaving a model out: with every other model's θ (and the slopes) held fixed, an item's difficulty is a 1-D
problem; :func:`leave_out_difficulties` solves it by Newton from the full fit's b (the first step is the usual
one-step approximation; further steps make it exact given the fixed θ). :func:`exact_leave_out` refits the whole
model without one model, to measure what holding θ fixed costs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

B_SD = 3.0
LOG_A_SD = 0.5


def sigmoid(x):
    from scipy.special import expit

    return expit(x)


@dataclass
class DriftFit:
    theta: np.ndarray    # (M,)
    b: np.ndarray        # (N,)
    slope: np.ndarray    # (G,) one per slope group
    group: np.ndarray    # (N,) int, each item's slope group
    iterations: int
    prior_mean: np.ndarray | float = 0.0   # (N,) or 0: the mean of each b's prior

    @property
    def a(self) -> np.ndarray:
        return self.slope[self.group]


def fit_map(counts: np.ndarray, trials: np.ndarray, group: np.ndarray | None = None, tol: float = 1e-5,
            max_iter: int = 500, start: DriftFit | None = None, prior_mean: np.ndarray | float = 0.0) -> DriftFit:
    """Mode of the 1PL (with per-group slopes when ``group`` has several values) for counts/trials (M, N).

    With slopes, the slopes' ratios come from the mode with every group's a free; then θ and b go to their mode
    on the largest group's scale (a = 1 there) with the slopes held (the module's docstring says why)."""
    y = np.asarray(counts, dtype=float)
    n = np.asarray(trials, dtype=float)
    M, N = y.shape
    group = np.zeros(N, dtype=np.int64) if group is None else np.asarray(group, dtype=np.int64)
    G = int(group.max()) + 1 if N else 1
    if start is not None:
        theta, b, slope = start.theta.copy(), start.b.copy(), start.slope.copy()
    else:
        rate = (y.sum(1) + 0.5) / (n.sum(1) + 1.0)
        theta = np.log(rate / (1 - rate))
        theta = (theta - theta.mean()) / max(theta.std(), 1e-6) if M > 1 else theta * 0
        item_rate = (y.sum(0) + 0.5) / (n.sum(0) + 1.0)
        b = -np.log(item_rate / (1 - item_rate))
        slope = np.ones(G)
    reference = int(np.bincount(group, minlength=G).argmax())   # the largest group: a = 1 in what is returned
    theta, b, slope, it = _sweeps(y, n, group, theta, b, slope, prior_mean, G > 1, tol, max_iter)
    if G > 1:
        # the slopes' ratios from the free-scale mode; on the reference group's scale (the same likelihood), θ and b
        # then go to their mode under the priors as they read on that scale, with the slopes held
        c = slope[reference]
        theta, b, slope, more = _sweeps(y, n, group, theta * c, b * c, slope / c, prior_mean, False, tol, max_iter)
        it += more
    return DriftFit(theta, b, slope, group, it, prior_mean)


def _sweeps(y, n, group, theta, b, slope, prior_mean, free_slopes: bool, tol: float, max_iter: int):
    """Alternating Newton sweeps (θ, b, the common shift; with ``free_slopes`` the slopes and the common scale)
    until no step exceeds ``tol``; returns (θ, b, slopes, sweeps)."""
    G = len(slope)
    it = 0
    while it < max_iter:
        it += 1
        a = slope[group]
        p = sigmoid(a * (theta[:, None] - b))
        r = y - n * p
        w = n * p * (1 - p)
        step_t = ((r * a).sum(1) - theta) / ((w * a * a).sum(1) + 1.0)
        theta = theta + np.clip(step_t, -1, 1)
        p = sigmoid(a * (theta[:, None] - b))
        r = y - n * p
        w = n * p * (1 - p)
        step_b = (-(a * r.sum(0)) - (b - prior_mean) / B_SD**2) / (a * a * w.sum(0) + 1 / B_SD**2)
        b = b + np.clip(step_b, -1, 1)
        theta, b, step_c = _shift_step(theta, b, prior_mean)
        biggest = max(np.abs(step_t).max(initial=0), np.abs(step_b).max(initial=0), abs(step_c))
        if free_slopes:
            p = sigmoid(a * (theta[:, None] - b))
            d = theta[:, None] - b
            r = (y - n * p) * d
            w = n * p * (1 - p) * d * d
            log_a = np.log(slope)
            grad = np.bincount(group, r.sum(0), G) - log_a / (slope * LOG_A_SD**2)
            hess = np.bincount(group, w.sum(0), G) + 1 / (slope**2 * LOG_A_SD**2)
            step_a = np.clip(grad / hess, -0.3, 0.3)
            slope = np.maximum(slope + step_a, 0.05)
            theta, b, slope, step_s = _scale_step(theta, b, slope, prior_mean)
            biggest = max(biggest, np.abs(step_a).max(), abs(step_s))
        if biggest < tol:
            break
    return theta, b, slope, it


def _shift_step(theta, b, prior_mean):
    """The Newton step of a common shift c: (θ, b) → (θ + c, b + c) leaves the likelihood as it is, so the priors
    alone set c, −½Σ(θ + c)² − Σ(b + c − μ)²/(2·3²) (exactly quadratic: one step is the optimum)."""
    c = -(theta.sum() + (b - prior_mean).sum() / B_SD**2) / (len(theta) + len(b) / B_SD**2)
    return theta + c, b + c, float(c)


def _scale_step(theta, b, slope, prior_mean):
    """One Newton step of the common scale s: (θ, b, a) → (sθ, sb, a/s) leaves the likelihood as it is, so only
    the priors set s; the coordinate steps above move along it slowly (it is a joint direction of every θ, b and
    slope), this step goes straight to it. With u = log s the log prior is
    −½Σ(sθ)² − Σ(sb − μ)²/(2·3²) − Σ(log a − u)²/(2·0.5²)."""
    s_theta, s_b = (theta * theta).sum(), (b * b).sum()
    cross = (b * (b - prior_mean)).sum()
    grad = -s_theta - cross / B_SD**2 + np.log(slope).sum() / LOG_A_SD**2
    hess = 2 * s_theta + (2 * s_b - (b * prior_mean).sum()) / B_SD**2 + len(slope) / LOG_A_SD**2
    u = float(np.clip(grad / max(hess, 1e-12), -0.3, 0.3))
    s = np.exp(u)
    return theta * s, b * s, slope / s, u


def item_newton(y, n, theta_others, a_item, b0, steps: int, prior_mean: np.ndarray | float = 0.0):
    """Up to ``steps`` Newton steps of each item's b (columns) with the models' θ fixed; y, n: (M', N)."""
    b = b0.copy()
    for _ in range(steps):
        p = sigmoid(a_item * (theta_others[:, None] - b))
        grad = -a_item * (y - n * p).sum(0) - (b - prior_mean) / B_SD**2     # d log posterior / d b
        hess = a_item * a_item * (n * p * (1 - p)).sum(0) + 1 / B_SD**2
        step = np.clip(grad / hess, -2, 2)
        b = b + step
        if np.abs(step).max(initial=0) < 1e-8:
            break
    return b


def leave_out_difficulties(counts, trials, fit: DriftFit, steps: int = 30) -> np.ndarray:
    """(M, N): row m holds the items' b with model m's responses removed (other θ and slopes fixed)."""
    y = np.asarray(counts, dtype=float)
    n = np.asarray(trials, dtype=float)
    M = y.shape[0]
    out = np.empty_like(y)
    for m in range(M):
        keep = np.arange(M) != m
        out[m] = item_newton(y[keep], n[keep], fit.theta[keep], fit.a, fit.b, steps, fit.prior_mean)
    return out


@dataclass
class LeaveOutError:
    """How one model's leave-out difficulties (and the slopes) may be off, as the bootstrap draws it:
    ``δb = sd·z₁ + shared_b @ z₂`` and ``δa = (slope_rows @ z₂)[group]`` with z₁ ~ N(0, I_N), z₂ ~ N(0, I_P) —
    the items' own estimation noise, and the part every item shares through the other models' θ and the slopes
    (the slope group's error for every item of the group)."""
    sd: np.ndarray          # (N,)
    shared_b: np.ndarray    # (N, P)
    slope_rows: np.ndarray  # (G, P); the reference group's row is 0
    group: np.ndarray       # (N,) each item's slope group

    def items(self, keep: np.ndarray) -> LeaveOutError:
        """The same error over the items ``keep`` (a mask or indices)."""
        return LeaveOutError(self.sd[keep], self.shared_b[keep], self.slope_rows, self.group[keep])

    def draw(self, rng, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(δa, δb), each (size, N)."""
        z = rng.standard_normal((size, self.shared_b.shape[1]))
        return (z @ self.slope_rows.T)[:, self.group], (self.sd * rng.standard_normal((size, len(self.sd)))
                                                        + z @ self.shared_b.T)


def leave_out_error(counts, trials, fit: DriftFit, b_m: np.ndarray, m: int) -> LeaveOutError:
    """The Laplace approximation of the posterior without model m, at (``b_m``, the other θ, the slopes).

    Parameters: the N difficulties b and the nuisance ν = (θ_j for j ≠ m; the free slopes). With w = n·p(1 − p)
    per cell and η = a(θ − b), the Fisher information has the blocks D = diag(Σ_j a²w + 1/3²) (b, b),
    C (b, ν): −a²w for θ_j and −Σ_j a·w·(θ_j − b) for the item's slope, and E (ν, ν): Σ_i a²w + 1 for θ_j,
    Σ a·w·(θ_j − b) between θ_j and a slope, Σ w·(θ − b)² + 1/(a²·0.5²) for a slope. Then ν ~ N(ν̂, S⁻¹) with
    S = E − CᵀD⁻¹C (the Schur complement), and b | ν ~ N(b̂ − D⁻¹C(ν − ν̂), D⁻¹); with S = LLᵀ and
    ν − ν̂ = L⁻ᵀz₂, δb = D^(−1/2)·z₁ − D⁻¹C·L⁻ᵀz₂ and δa = the slope rows of L⁻ᵀz₂."""
    from scipy.linalg import cho_factor, solve_triangular

    y = np.asarray(counts, dtype=float)
    n = np.asarray(trials, dtype=float)
    keep = np.arange(y.shape[0]) != m
    theta, nn, a, group = fit.theta[keep], n[keep], fit.a, fit.group
    G = len(fit.slope)
    reference = int(np.bincount(group, minlength=G).argmax())
    free = [g for g in range(G) if g != reference]
    J, N = len(theta), len(b_m)
    p = sigmoid(a * (theta[:, None] - b_m))
    w = nn * p * (1 - p)                                          # (J, N)
    D = a * a * w.sum(0) + 1 / B_SD**2
    C = np.zeros((N, J + len(free)))
    C[:, :J] = -(a * a * w).T
    E = np.zeros((J + len(free), J + len(free)))
    E[np.arange(J), np.arange(J)] = (a * a * w).sum(1) + 1.0
    gap = theta[:, None] - b_m
    for k, g in enumerate(free):
        inside = group == g
        slope = fit.slope[g]
        cross = w[:, inside] * slope * gap[:, inside]
        E[J + k, J + k] = (w[:, inside] * gap[:, inside] ** 2).sum() + 1 / (slope**2 * LOG_A_SD**2)
        E[J + k, :J] = E[:J, J + k] = cross.sum(1)
        C[inside, J + k] = -cross.sum(0)
    S = E - C.T @ (C / D[:, None])
    lower, _ = cho_factor(S + 1e-10 * np.eye(len(S)), lower=True)
    root = solve_triangular(np.tril(lower), np.eye(len(S)), lower=True).T      # L⁻ᵀ
    shared_b = -(C / D[:, None]) @ root
    slope_rows = np.zeros((G, len(S)))
    for k, g in enumerate(free):
        slope_rows[g] = root[J + k]
    return _low_rank(LeaveOutError(1 / np.sqrt(D), shared_b, slope_rows, group))


def _low_rank(error: LeaveOutError, dropped: float = 1e-6) -> LeaveOutError:
    """The same law with z₂ rotated onto the principal directions of the shared part and the weakest dropped,
    while what they drop is under ``dropped`` of its variance: the error shared through the nuisances is mostly a
    few directions (a common shift of every b, then a tilt), so a draw costs a product with a few columns, not
    with one per model. The slope rows are weighted by their group's size, as their error reaches every item."""
    sizes = np.bincount(error.group, minlength=len(error.slope_rows)).astype(float)
    stacked = np.vstack([error.shared_b, np.sqrt(sizes)[:, None] * error.slope_rows])
    _, sing, vt = np.linalg.svd(stacked, full_matrices=False)
    power = sing**2
    tail = np.cumsum(power[::-1])[::-1]                   # variance from each direction on
    keep = max(1, int(np.sum(tail > dropped * power.sum())))
    basis = vt[:keep].T                                   # (P, keep), orthonormal columns
    return LeaveOutError(error.sd, error.shared_b @ basis, error.slope_rows @ basis, error.group)


def judged_theta(y_row, n_row, b_row, a, steps: int = 30, ridge: float = 1e-3) -> float:
    """One model's θ against fixed difficulties (nearly flat prior)."""
    present = n_row > 0
    y, n, b, a = y_row[present], n_row[present], b_row[present], a[present]
    if not present.any():
        return float("nan")
    rate = (y.sum() + 0.5) / (n.sum() + 1.0)
    theta = float(np.log(rate / (1 - rate)) + np.average(b))
    for _ in range(steps):
        p = sigmoid(a * (theta - b))
        step = ((a * (y - n * p)).sum() - ridge * theta) / ((a * a * n * p * (1 - p)).sum() + ridge)
        theta += float(np.clip(step, -2, 2))
        if abs(step) < 1e-10:
            break
    return theta


def exact_leave_out(counts, trials, fit: DriftFit, model: int) -> np.ndarray:
    """The items' b from a full refit (θ, b and slopes) without ``model``: the reference of the approximation."""
    keep = np.arange(counts.shape[0]) != model
    start = DriftFit(fit.theta[keep], fit.b, fit.slope, fit.group, 0)
    return fit_map(np.asarray(counts)[keep], np.asarray(trials)[keep], fit.group, start=start,
                   prior_mean=fit.prior_mean).b
