"""The 1PL binomial log-likelihood in NumPy, shared by every consumer that needs it.

Model (paper, Appendix C.3): model j solves item i with probability
    p_ij = g_i + (1 − g_i) · σ(θ_j − b_i),
and the count of correct answers in K trials is Y_ij ~ Binomial(K, p_ij). With η = θ − b:

* g = 0:  log L = Y·η − K·softplus(η)                      (+ log C(K, Y))
* g > 0:  log L = Y·log(g + (1 − g)σ(η)) + (K − Y)·log((1 − g)(1 − σ(η)))   (+ log C(K, Y))

Both are written in log space (log-sigmoid via ``logaddexp``), so they stay finite for
any η. The binomial coefficient does not depend on θ or b; it is added only when a
reported log-likelihood needs it (BIC, paper Table 8).
"""

from __future__ import annotations

import numpy as np


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    """log σ(x), stable for large |x|."""
    return -np.logaddexp(0.0, -x)


def log_likelihood(counts, n_trials: int, eta, guessing=0.0, with_constant: bool = False) -> np.ndarray:
    """Element-wise binomial log-likelihood of ``counts`` under the 1PL with guessing.

    Parameters
    ----------
    counts : array_like of int
        Correct counts Y, any shape broadcastable with ``eta``.
    n_trials : int
        Trials per cell (K).
    eta : array_like of float
        θ − b for each cell.
    guessing : float or array_like
        Lower asymptote g in [0, 1), broadcastable with ``eta``.
    with_constant : bool
        Add log C(K, Y), which makes the value a proper log-probability.

    Returns
    -------
    ndarray
        log P(Y | η, g), the broadcast shape of the inputs.
    """
    y = np.asarray(counts, dtype=float)
    eta = np.asarray(eta, dtype=float)
    g = np.asarray(guessing, dtype=float)
    log_p_wrong = log_sigmoid(-eta) + np.log1p(-g)  # log((1 − g)(1 − σ(η)))
    if np.all(g == 0):
        log_p_right = log_sigmoid(eta)
    else:
        log_p_right = np.logaddexp(np.log(g, where=g > 0, out=np.full(np.broadcast(g).shape, -np.inf)),
                                   np.log1p(-g) + log_sigmoid(eta))
    value = y * log_p_right + (n_trials - y) * log_p_wrong
    if with_constant:
        # imported here: BenchFill's online calibration uses this module without the constant, in an
        # environment that need not have SciPy (docs/benchfill.md)
        from scipy.special import gammaln

        value = value + gammaln(n_trials + 1) - gammaln(y + 1) - gammaln(n_trials - y + 1)
    return value
