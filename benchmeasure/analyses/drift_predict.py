"""``drift --predict-after``: each model's ability without the items before its flagged step, and the accuracy it
predicts on the newest items.

A flagged model did better on the items dated before its τ̂ than its ability on the rest predicts; that ability,
not the one from every item, is what it brings to items it cannot have seen. Per model:

* ``theta_all``: θ from every item it answered; ``theta``: θ from the items it answered at or after τ̂ when it is
  flagged (the same items as ``theta_all`` when it is not). Both are posterior modes against the model's
  leave-out difficulties and the slopes of the drift fit, with a weak prior N(θ̂_no-step, 5²) (the
  ``subset_theta`` of the step test), and a 95 % Wald interval θ ± 1.96/√I from the information I there.
* The **target** items stand for new items: the newest release when the item table has a ``release`` column (the
  release whose latest item is latest), otherwise the newest bin of ``--by``, or the items at or after the value
  given to ``--predict-after``. The predicted accuracy is the expected share of correct trials on them, each item
  weighted alike: ``A(θ) = mean_i σ(a_i·(θ − b_i))`` over every target item, answered or not. ``A`` increases with
  θ, so ``[A(θ_lo), A(θ_hi)]`` is exactly the image of θ's interval: it carries θ's uncertainty, not the
  difficulties' (each b is fitted from every other model, and its error averages over the target's items).
* ``accuracy_observed``: correct trials / trials on the target items the model answered, for comparison.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.analyses.drift_fit import sigmoid
from benchmeasure.analyses.drift_step import Z_95, subset_theta
from benchmeasure.base.errors import fail

PRIOR_SD = 5.0


def prediction_target(cov, release: list | None, start: str | None, where: str) -> tuple[np.ndarray, str]:
    """(mask over the items, a label) of the items the accuracy is predicted on; ``start`` None = the default."""
    if cov.kind == "category":
        fail(f"{where}: --predict-after needs an ordered --by column (a date or a number); {cov.name!r} is a "
             "category")
    order = np.asarray(cov.order, dtype=float)
    if start is not None:
        threshold, shown = _threshold(cov, start)
        mask = order >= threshold
        if not mask.any():
            fail(f"--predict-after {start[:40]}: no item of the matrix has {cov.name} at or after it (the newest is "
                 f"{cov.values[int(order.argmax())]})")
        return mask, f"the {int(mask.sum())} items with {cov.name} from {shown} on"
    if release is not None:
        names = sorted(set(release), key=lambda r: _release_key(r, release, order))
        newest = names[-1]
        mask = np.array([r == newest for r in release])
        return mask, f"the {int(mask.sum())} items of the newest release, {newest!r}"
    mask = order == order.max()
    return mask, f"the {int(mask.sum())} items of the newest {cov.name} bin"


def _release_key(name, release, order):
    inside = order[[r == name for r in release]]
    return inside.max(), inside.min(), name


def _threshold(cov, start: str) -> tuple[float, str]:
    from benchmeasure.core.item_meta import month_index, parse_date

    if cov.kind == "date":
        day = parse_date(start, f"--predict-after (the --by column {cov.name!r} holds dates)")
        return float(month_index(day)), f"{day.year:04d}-{day.month:02d} (its month)"
    try:
        value = float(start)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value):
        fail(f"--predict-after: {start[:40]!r} is not a number (the --by column {cov.name!r} holds numbers)")
    return value, f"{value:g}"


def accuracy(theta: float, b: np.ndarray, a: np.ndarray) -> float:
    """Expected share of correct trials on items (b, a), each item weighted alike."""
    return float(sigmoid(a * (theta - b)).mean())


def predict_rows(models, y, n, b_loo, a, bins, results, flagged, target: np.ndarray) -> list[dict]:
    """One row per model: the abilities with and without the pre-τ̂ items, and the predicted target accuracy."""
    rows = []
    for m, model in enumerate(models):
        present = n[m] > 0
        res = results[m]
        if not present.any():
            rows.append({"model": model, "flagged": False, "items_all": 0, "items_used": 0,
                         "target_items": int(target.sum()), "target_answered": 0})
            continue
        used = present & (bins >= res.tau_bin) if flagged[m] else present
        masks = np.stack([present, used])
        start = res.theta if np.isfinite(res.theta) else 0.0
        theta, info = subset_theta(y[m], n[m], b_loo[m], a, masks, start, prior_sd=PRIOR_SD)
        half = Z_95 / np.sqrt(info)
        bt, at = b_loo[m, target], a[target]
        answered = present & target
        row = {"model": model, "flagged": bool(flagged[m]), "items_all": int(present.sum()),
               "items_used": int(used.sum()), "theta_all": float(theta[0]),
               "theta_all_lo": float(theta[0] - half[0]), "theta_all_hi": float(theta[0] + half[0]),
               "theta": float(theta[1]), "theta_lo": float(theta[1] - half[1]), "theta_hi": float(theta[1] + half[1]),
               "target_items": int(target.sum()), "target_answered": int(answered.sum()),
               "accuracy_observed": float(y[m, answered].sum() / n[m, answered].sum()) if answered.any() else None,
               "accuracy_predicted_all": accuracy(theta[0], bt, at),
               "accuracy_predicted": accuracy(theta[1], bt, at),
               "accuracy_predicted_lo": accuracy(theta[1] - half[1], bt, at),
               "accuracy_predicted_hi": accuracy(theta[1] + half[1], bt, at)}
        rows.append(row)
    return rows
