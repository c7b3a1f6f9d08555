"""Theorem 2.1 in practice: can the benchmark's ranking of two models differ from the target's?

Paper, Section 2 (Theorem 2.1): let Δ(z) = s_θ'(z) − s_θ(z) be the difference of two
models' performance curves on the normalized difficulty axis. The benchmark reports
D_B = ∫ Δ dν_B = (1/n) Σ_i Δ(z_i); the target measure μ gives D_μ = ∫ Δ dμ. If Δ is
L-Lipschitz, Kantorovich–Rubinstein duality gives

    |D_B − D_μ| ≤ L · W₁(ν_B, μ).

So D_μ lies in [D_B − L·W₁, D_B + L·W₁]. When |D_B| > L·W₁ that interval excludes 0 and
the target must rank the two models as the benchmark does; otherwise a rank flip cannot
be ruled out. Here D_B is estimated by the mean per-item accuracy difference of the two
models, and μ is the uniform distribution on [0, 1] (the paper's neutral target), for
which W₁(ν_B, μ) = ∫₀¹ |F_B(x) − x| dx with F_B the benchmark's ECDF, computed exactly.
(DDM compares with the same-size grid (i − 0.5)/n instead; since W₁(grid, U[0, 1]) = 1/(4n),
the triangle inequality keeps the two within 1/(4n) of each other. Both are reported.)

L is an assumption of the user: the steepest change of the accuracy difference per unit
of normalized difficulty that they consider plausible (L = 1: the gap can change by at
most 0.1 over a tenth of the axis).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.core.metrics import ddm


def w1_to_uniform(z) -> float:
    """Exact W₁ between the empirical measure of ``z`` (shape (n,), values in [0, 1]) and U[0, 1].

    Integrates |F(x) − x| piecewise: on [z_(i), z_(i+1)) the ECDF is the constant c = i/n,
    and ∫_a^b |c − x| dx has a closed form.
    """
    x = np.sort(np.asarray(z, dtype=float))
    n = x.size
    left = np.r_[0.0, x]
    right = np.r_[x, 1.0]
    level = np.arange(n + 1) / n

    def integral(a, b, c):
        # ∫_a^b |c − x| dx for a ≤ b, split at x = c when c lies inside [a, b]
        m = np.clip(c, a, b)
        return ((c - a) ** 2 - (c - m) ** 2) / 2 + ((b - c) ** 2 - (m - c) ** 2) / 2

    return float(np.sum(integral(left, right, level)))


@dataclass(frozen=True)
class RankFlipBound:
    """Theorem 2.1 applied to one pair of models (``a`` minus ``b``)."""

    model_a: str
    model_b: str
    benchmark_gap: float
    lipschitz: float
    w1_uniform: float
    ddm: float

    @property
    def bound(self) -> float:
        """L · W₁(ν_B, U[0, 1]): the largest possible |D_B − D_μ|."""
        return self.lipschitz * self.w1_uniform

    @property
    def flip_possible(self) -> bool:
        """True unless |D_B| > L·W₁, in which case the target ranks the pair as the benchmark does."""
        return not abs(self.benchmark_gap) > self.bound

    def as_dict(self) -> dict:
        return {"model_a": self.model_a, "model_b": self.model_b, "benchmark_gap": self.benchmark_gap,
                "lipschitz": self.lipschitz, "w1_uniform": self.w1_uniform, "ddm": self.ddm,
                "bound": self.bound, "target_gap_interval": [self.benchmark_gap - self.bound,
                                                             self.benchmark_gap + self.bound],
                "flip_possible": self.flip_possible}


def rank_flip_bound(accuracy_a, accuracy_b, z, lipschitz: float, model_a: str = "a",
                    model_b: str = "b") -> RankFlipBound:
    """Apply Theorem 2.1 to two models.

    Parameters
    ----------
    accuracy_a, accuracy_b : array_like, shape (n,)
        Per-item accuracy of each model, items in the order of ``z``.
    z : array_like, shape (n,)
        Normalized item difficulties in [0, 1].
    lipschitz : float
        Assumed Lipschitz constant L ≥ 0 of the accuracy difference in z.
    """
    if not np.isfinite(lipschitz) or lipschitz < 0:
        fail(f"--lipschitz must be a finite number >= 0, got {lipschitz}")
    a, b, z = (np.asarray(v, dtype=float) for v in (accuracy_a, accuracy_b, z))
    gap = float(np.mean(a - b))
    return RankFlipBound(model_a, model_b, gap, float(lipschitz), w1_to_uniform(z), ddm(list(z)))
