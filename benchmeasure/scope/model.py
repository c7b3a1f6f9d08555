"""The shared strategy's model: the error's logit as a linear function of a configuration's features
(:meth:`benchmeasure.scope.space.Space.features`) plus a per-configuration effect.

    logit p_c = x_c · w + u_c,    w ~ N(0, prior_sd² I),    u_c ~ N(0, σ_u²)

Fitted on the arms' empirical logits y_c = logit((k+½)/(n+1)), each with variance
1/((n+1)·p̃(1−p̃)) + σ_u² (the binomial noise plus the configuration's own effect), so a heavily pulled
configuration counts as one configuration, not as n independent ones: the posterior of w is Gaussian in
closed form (Bayesian weighted least squares), σ_u² is re-estimated by moments. A posterior draw of a
configuration's rate draws w, then combines the prior N(x_c·w, σ_u²) with the configuration's own counts
(Laplace approximation). The model only steers pulls; certification never uses it.
"""

from __future__ import annotations

import numpy as np


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.clip(x, -40, 40)))


class LogitModel:
    def __init__(self, prior_sd: float = 2.0, effect_sd: float = 1.0):
        self.prior_sd = prior_sd
        self.effect_var = effect_sd ** 2
        self.mean = None
        self.cov = None
        self.w_draw = None

    def fit(self, features: np.ndarray, errors: np.ndarray, pulls: np.ndarray, n_features: int) -> None:
        seen = pulls > 0
        x, k, n = features[seen], errors[seen], pulls[seen]
        p = (k + 0.5) / (n + 1.0)
        y = np.log(p / (1 - p))
        noise = 1.0 / ((n + 1.0) * p * (1 - p))
        prior_precision = np.eye(n_features) / self.prior_sd ** 2
        for _ in range(3):
            weights = 1.0 / (noise + self.effect_var)
            precision = prior_precision + (x * weights[:, None]).T @ x
            cov = np.linalg.inv(precision)
            mean = cov @ (x.T @ (weights * y))
            if len(y) < 10:
                break
            resid = y - x @ mean
            self.effect_var = float(np.clip(np.mean(resid ** 2 - noise), 0.05, 4.0))
        self.mean, self.cov = mean, 0.5 * (cov + cov.T)

    def new_draw(self, rng: np.random.Generator) -> None:
        """Draw the coefficients shared by every configuration's draw of this batch."""
        self.w_draw = rng.multivariate_normal(self.mean, self.cov, method="cholesky")

    def draw_rates(self, features: np.ndarray, errors: np.ndarray, pulls: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
        """One posterior draw of each configuration's error rate (after :meth:`new_draw`)."""
        prior_mean = features @ self.w_draw
        eta = prior_mean.copy()
        curvature = np.full_like(eta, 1.0 / self.effect_var)
        for _ in range(12):
            p = _sigmoid(eta)
            gradient = -(eta - prior_mean) / self.effect_var + errors - pulls * p
            curvature = 1.0 / self.effect_var + pulls * p * (1 - p)
            eta = eta + gradient / curvature
        return _sigmoid(eta + rng.standard_normal(len(eta)) / np.sqrt(curvature))
