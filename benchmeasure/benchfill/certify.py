"""Certified keeps: a child is kept only when its calibrated difficulty is pinned inside the target band.

The paper keeps, per gap, the valid child whose one online calibration lies closest to z*. Each calibration
comes from the panel's few trials (12 models × K), so among many children the closest one owes part of its
closeness to noise (a winner's curse), and a fitted deviation of 0.004 can hide a true one ten times larger
(issue 30). With ``[search] keep = "certified"`` (the default for new runs) a child is kept only when the
posterior interval of its difficulty lies inside the *target band*

    [max(left, z* − tol), min(right, z* + tol)],      tol = ``[search] certify_tolerance``,

i.e. inside the target gap and within ``tol`` of its midpoint, at credible mass ``[search] certify_level``.

**The interval.** The panel's abilities θ_j are held fixed (as in the online calibration,
:mod:`.calibration`), so the posterior of one child's b is one-dimensional,

    p(b | y, θ) ∝ N(b; 0, 1) · Π_j Binomial(y_j; n, p_j(b)),

and :func:`benchmeasure.irt.anchored.difficulty_posterior` computes it exactly by quadrature on a fine grid.
A child's counts are pooled over its screening rollouts (the verifier's K per model) and every race batch
(K more per model each, fresh draws under their own request keys): a sum of binomials with one p_j is a
binomial with n = K·(1 + batches). The interval is the equal-tailed one of that posterior, mapped to z with the
original benchmark's min and max.

**The race** (:func:`pick`, run by :meth:`benchmeasure.benchfill.loop.Loop.race` after every round of a gap).
Each valid child of the gap is an arm; its *standing* is its posterior interval and the posterior probability
``p_band`` that its z lies in the band. A child whose interval lies inside the band is certified: the race ends
and the gap keeps it (among several, the one whose posterior mean is closest to z*). A child whose interval no
longer meets the band is eliminated. Otherwise the plausible child expected to need the fewest further batches
(:func:`batches_needed`: its interval's half-width shrinks as 1/√n and must fit between its mean and the nearer
band edge) gets one more batch (one call per panel model), sequentially, until one is certified, no child can be
expected to be certified within the gap's remaining ``race_batches`` (then the next round of rewrites, or the
gap ends when the batches are spent). This is the elimination form of best-arm identification (racing, Maron &
Moore 1997; successive elimination, Even-Dar et al. 2006): sampling goes where a certificate is cheapest and
stops at the first one. The noise-aware bounds of the scope search
(:mod:`benchmeasure.scope.bounds`) bound one Bernoulli rate; here every model answers with its own rate through
the one shared b, so the exact posterior of b is the sharper bound and is used instead.

**Why it removes the winner's curse.** A child is chosen for racing by its noisy screening estimate, but it is
kept only once its interval — mostly built from fresh batches drawn *after* it was chosen — lies in the band.
The screening trials are one batch among the several that certification needs at the default tolerance, so
the selection effect on the kept estimate is diluted by that ratio, and a child that only looked close is
eliminated by its own fresh rollouts. A gap whose budget runs out with no certified child keeps nothing and
says so (its :class:`~.records.Keep` has ``certified = false``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchmeasure.irt.anchored import difficulty_posterior


@dataclass(frozen=True)
class Standing:
    """One child's state in the race: its pooled posterior, on the normalized axis."""

    item_id: str
    batches: int          # race batches so far
    trials: int           # trials per panel model, screening and batches together
    counts: dict          # correct answers per model, pooled
    b_mean: float
    b_sd: float
    z: float
    z_sd: float
    z_low: float
    z_high: float
    p_band: float         # posterior probability that z lies in the band
    certified: bool       # the interval lies inside the band (and the child fits)
    plausible: bool       # the interval meets the band (and the child fits)
    fit: dict | None = None   # the item-fit test on the pooled counts (calibration.item_fit), when it was run

    def distance(self, z_star: float) -> float:
        return abs(self.z - z_star)


def band(left: float, right: float, z_star: float, tolerance: float) -> tuple[float, float]:
    """The target band: inside the gap [left, right] and within ``tolerance`` of z*."""
    return max(left, z_star - tolerance), min(right, z_star + tolerance)


def standing(item_id: str, screening: dict, batches: list, abilities: dict, n_trials: int, b_min: float,
             b_max: float, guessing: float, level: float, target_band: tuple, item_fit=None) -> Standing:
    """The pooled posterior of one child (screening counts plus ``batches``, each ``{model: correct}`` of
    ``n_trials`` per model) and where its ``level`` interval lies against ``target_band``.

    ``item_fit(counts, trials)``, when given, tests the pooled counts against the panel's abilities
    (:meth:`~.loop.Loop.item_fit`): a child that misfits is neither certified nor plausible (out of the race)."""
    models = sorted(abilities)
    counts = {m: screening.get(m, 0) + sum(b.get(m, 0) for b in batches) for m in models}
    trials = n_trials * (1 + len(batches))
    posterior = difficulty_posterior([counts[m] for m in models], [abilities[m] for m in models], trials, guessing)
    span = b_max - b_min
    alpha = 1.0 - level
    b_low, b_high = (float(v) for v in posterior.quantile([alpha / 2, 1 - alpha / 2]))
    z_low, z_high = (b_low - b_min) / span, (b_high - b_min) / span
    low, high = target_band
    cdf_at = np.interp([low * span + b_min, high * span + b_min], posterior.grid, posterior.cdf())
    fit = item_fit(counts, trials) if item_fit is not None else None
    fits = not (fit and fit["misfit"])
    return Standing(item_id, len(batches), trials, counts, posterior.mean, posterior.sd,
                    (posterior.mean - b_min) / span, posterior.sd / span, z_low, z_high,
                    float(cdf_at[1] - cdf_at[0]), fits and low <= z_low and z_high <= high,
                    fits and z_high >= low and z_low <= high, fit)


def certified_best(standings: list, z_star: float) -> Standing | None:
    """The certified child to keep (posterior mean closest to z*, ties by ID), or None."""
    done = [s for s in standings if s.certified]
    return min(done, key=lambda s: (s.distance(z_star), s.item_id)) if done else None


def batches_needed(s: Standing, target_band: tuple, level: float) -> float:
    """Race batches a child still needs, if its posterior mean stays where it is: its interval's half-width
    q·sd shrinks as 1/√n with n = 1 + batches (units of the screening's K trials per model), and it must fit
    between the mean and the nearer band edge. Infinite when the mean lies outside the band."""
    room = min(s.z - target_band[0], target_band[1] - s.z)
    if room <= 0:
        return math.inf
    q = _normal_quantile(0.5 + level / 2)
    n_now = 1 + s.batches
    return max(0.0, n_now * (q * s.z_sd / room) ** 2 - n_now)


def pick(standings: list, z_star: float, target_band: tuple, level: float, left: float) -> Standing | None:
    """The child that gets the next batch: among the plausible, uncertified children whose expected need
    (:func:`batches_needed`) fits in the ``left`` batches of the gap, the one needing fewest, then the most likely
    in the band, then by ID; None when no child can be expected to be certified within the budget."""
    options = []
    for s in standings:
        if s.plausible and not s.certified:
            need = batches_needed(s, target_band, level)
            if need <= left:
                options.append((need, -s.p_band, s.distance(z_star), s.item_id, s))
    return min(options, key=lambda o: o[:4])[-1] if options else None


def _normal_quantile(p: float) -> float:
    """Φ⁻¹(p) by bisection on erf (standard library only)."""
    low, high = -10.0, 10.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p else (low, mid)
    return (low + high) / 2
