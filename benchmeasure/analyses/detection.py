"""Localized-improvement detection: a one-sided stratified randomization test (paper, Table 12).

Setting: one model answers the same items before (``pre``) and after (``post``) some
training, several rollouts per item and condition. The statistic is the change in
benchmark accuracy, each item weighted equally (paper Table 12, "Gain"):

    G = (1/N) Σ_i ( s⁺_i / n⁺_i − s⁻_i / n⁻_i ),

with s±_i the correct rollouts and n±_i the rollouts of item i in each condition.

Null hypothesis: within each item, the outcomes do not depend on the condition. The
randomization distribution reassigns the n⁻_i + n⁺_i outcomes of item i between the
conditions, keeping n⁻_i and n⁺_i. Only the number of successes landing in ``post``
matters, and under a uniformly random reassignment it is hypergeometric: X_i ~
Hypergeometric(t_i successes among n_i = n⁻_i + n⁺_i, n⁺_i drawn), t_i = s⁻_i + s⁺_i,
independently across items. Drawing X_i directly is the same distribution as shuffling
rows, at O(N) per permutation instead of O(Σ n_i). The permuted statistic is

    G* = (1/N) Σ_i [ X_i (1/n⁺_i + 1/n⁻_i) − t_i / n⁻_i ],

and the one-sided p-value is p = (1 + #{G* ≥ G}) / (1 + B), which is a valid level-α
test for any B (the observed assignment counts as one of the B + 1).
"G* ≥ G" is compared on Σ_i w_i X_i with w_i = 1/n⁺_i + 1/n⁻_i, exactly in integers when
all w_i are equal (the usual balanced design) and otherwise with a relative tolerance of
1e-12 so that rounding cannot turn a tie into a miss.

Input (``scripts/detect_improvement.py``): a CSV with columns
``model,item_id,trial,correct,condition``; condition is ``pre`` or ``post``. Each model is
tested separately.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import fail

COLUMNS = ("model", "item_id", "trial", "correct", "condition")
CONDITIONS = ("pre", "post")
# permutations drawn per block; bounds memory at about _BLOCK_CELLS integers
_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class PrePost:
    """Per-item tallies of one model in the two conditions.

    Attributes
    ----------
    items : list of str, length N
    pre_n, pre_s, post_n, post_s : ndarray of int64, shape (N,)
        Rollouts and correct rollouts per item, before and after.
    """

    items: list
    pre_n: np.ndarray
    pre_s: np.ndarray
    post_n: np.ndarray
    post_s: np.ndarray

    def gain(self) -> float:
        """Change in mean per-item accuracy, post − pre (a fraction; ×100 for points)."""
        return float(np.mean(self.post_s / self.post_n - self.pre_s / self.pre_n))


@dataclass(frozen=True)
class DetectionResult:
    """Outcome of :func:`stratified_test` for one model."""

    gain: float
    p_value: float
    exceed: int
    permutations: int
    seed: int
    items: int
    rollouts_pre: int
    rollouts_post: int

    def as_dict(self, alpha: float = 0.05) -> dict:
        return {
            "gain": self.gain,
            "gain_points": 100 * self.gain,
            "p_value": self.p_value,
            "detected": self.p_value < alpha,
            "alpha": alpha,
            "permutations": self.permutations,
            "seed": self.seed,
            "permuted_at_least_observed": self.exceed,
            "items": self.items,
            "rollouts_pre": self.rollouts_pre,
            "rollouts_post": self.rollouts_post,
        }


def stratified_test(data: PrePost, permutations: int = 100_000, seed: int = 0) -> DetectionResult:
    """One-sided stratified randomization test of G > 0 (module docstring).

    Parameters
    ----------
    data : PrePost
        Tallies of N items; every item needs at least one rollout in each condition.
    permutations : int
        B, the number of random reassignments (≥ 1).
    seed : int
        Seed of the NumPy generator that draws them.
    """
    if permutations < 1:
        fail(f"--permutations must be at least 1, got {permutations}")
    n_pre, n_post = data.pre_n.astype(np.int64), data.post_n.astype(np.int64)
    total = data.pre_s + data.post_s
    n = n_pre + n_post
    # items where every outcome is equal add a constant to G and G*: leave them out of the draws
    vary = (total > 0) & (total < n)
    balanced = np.unique(n_post[vary]).size <= 1 and np.unique(n_pre[vary]).size <= 1
    rng = np.random.default_rng(seed)
    exceed = 0
    if vary.any():
        good, bad, draw = total[vary], n[vary] - total[vary], n_post[vary]
        weight = 1.0 / n_post[vary] + 1.0 / n_pre[vary]
        observed_x = data.post_s[vary]
        observed = int(observed_x.sum()) if balanced else float(observed_x @ weight)
        block = max(1, _BLOCK_CELLS // good.size)
        for start in range(0, permutations, block):
            size = min(block, permutations - start)
            x = rng.hypergeometric(good, bad, draw, size=(size, good.size))
            if balanced:
                exceed += int((x.sum(axis=1) >= observed).sum())
            else:
                exceed += int((x @ weight >= observed - 1e-12 * max(1.0, abs(observed))).sum())
    else:
        exceed = permutations  # every reassignment reproduces the data: G* = G always
    return DetectionResult(
        gain=data.gain(), p_value=(1 + exceed) / (1 + permutations), exceed=exceed,
        permutations=permutations, seed=seed, items=len(data.items),
        rollouts_pre=int(n_pre.sum()), rollouts_post=int(n_post.sum()))


def tallies_from_outcomes(items, pre, post) -> PrePost:
    """Build :class:`PrePost` from per-item 0/1 outcome arrays (for simulations and tests).

    Parameters
    ----------
    items : list of str, length N
    pre, post : sequences of length N of 1-D 0/1 arrays
        Rollout outcomes of each item in each condition.
    """
    return PrePost(list(items),
                   np.array([len(o) for o in pre], dtype=np.int64), np.array([int(np.sum(o)) for o in pre]),
                   np.array([len(o) for o in post], dtype=np.int64), np.array([int(np.sum(o)) for o in post]))


def read_pre_post(path: str | os.PathLike) -> dict:
    """Read ``model,item_id,trial,correct,condition`` rows into one :class:`PrePost` per model.

    Rejected, naming the line, model and item: a missing file or column; a condition
    other than ``pre``/``post``; ``correct`` other than 0/1; a repeated
    (model, item, condition, trial); an item a model answered in one condition only.
    Models keep their first-seen order; items keep their first-seen order per model.
    """
    path = os.fspath(path)
    table = read_table(path, required=COLUMNS, expected=",".join(COLUMNS))
    if not table.rows:
        fail(f"{path}: no responses (header only)")
    frame = pd.DataFrame({name: table.column(name, strip=False) for name in COLUMNS}, dtype=object)
    frame = frame[list(COLUMNS)].apply(lambda col: col.str.strip())
    frame["line"] = np.asarray(table.lines, dtype=np.int64)

    def where(row) -> str:
        return f"{path} line {row.line}, model {row.model!r}, item {row.item_id!r}"

    bad = frame[~frame.condition.isin(CONDITIONS)]
    if len(bad):
        row = bad.iloc[0]
        fail(f"{where(row)}: condition {row.condition!r}, expected 'pre' or 'post'")
    bad = frame[~frame.correct.isin(("0", "1"))]
    if len(bad):
        row = bad.iloc[0]
        fail(f"{where(row)}: correct is {row.correct!r}, expected 0 or 1")
    for column in ("model", "item_id", "trial"):
        bad = frame[frame[column] == ""]
        if len(bad):
            fail(f"{where(bad.iloc[0])}: blank {column}")
    dup = frame.duplicated(["model", "item_id", "condition", "trial"])
    if dup.any():
        row = frame[dup].iloc[0]
        fail(f"{where(row)}: duplicate {row.condition} trial {row.trial!r}")
    frame["correct"] = frame.correct.astype(np.int64)
    result = {}
    for model, rows in frame.groupby("model", sort=False):
        items = list(dict.fromkeys(rows.item_id))
        table = rows.groupby(["item_id", "condition"], sort=False).correct.agg(["size", "sum"])
        tallies = {c: ([], []) for c in CONDITIONS}
        for item in items:
            for condition in CONDITIONS:
                if (item, condition) not in table.index:
                    other = "post" if condition == "pre" else "pre"
                    line = int(rows[rows.item_id == item].line.iloc[0])
                    fail(f"{path} line {line}, model {model!r}, item {item!r}: has {other} responses but no "
                         f"{condition} responses (pre and post must cover the same items)")
                size, correct = table.loc[(item, condition)]
                tallies[condition][0].append(int(size))
                tallies[condition][1].append(int(correct))
        result[model] = PrePost(items, *(np.array(v, dtype=np.int64) for c in CONDITIONS for v in tallies[c]))
    return result
