"""What to ask the panel next (issue 18, items 3 and 6): extra trials per model on a gap's edge items,
derived from the posterior sd's dependence on K and checked here against exact posteriors by simulation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmeasure.core.resolution import SEPARATION, gap_table, trials_to_resolve
from benchmeasure.irt.routes.collapsed.quadrature import sample
from tests.conftest import run_script

THETA = np.random.default_rng(7).normal(0, 1.5, 12)   # a panel of 12 models


def _exact_sds(b: float, k: int, rows: int = 300, seed: int = 0) -> np.ndarray:
    """Exact posterior sds of b (given the panel's abilities) for ``rows`` simulated items at difficulty b."""
    rng = np.random.default_rng([seed, k])
    p = 1 / (1 + np.exp(-(THETA - b)))
    counts = rng.binomial(k, p, (rows, len(THETA)))
    return sample(counts, k, THETA, size=400, seed=seed).std(axis=1, ddof=1)


def test_formula_by_hand():
    # σ = 0.5 on both edges, K = 4: K·J = 1/0.25 − 1 = 3 each; resolved when 2/(1 + 3r) ≤ (1.0/2)², r ≥ 7/3: K' = 10
    assert trials_to_resolve(1.0, 0.5, 0.5, 4) == 6
    assert trials_to_resolve(3.0, 0.5, 0.5, 4) == 0                 # 3 / √0.5 = 4.2 sds: resolved already
    assert trials_to_resolve(0.5, 1.0, 1.2, 4) is None              # no information at either edge
    assert trials_to_resolve(0.0, 0.3, 0.3, 4) is None
    assert SEPARATION == 2


@pytest.mark.parametrize("b, k, more", [(0.3, 4, 16), (1.5, 2, 12), (-1.0, 8, 32)])
def test_predicted_sd_at_more_trials_matches_the_exact_posterior(b, k, more):
    now = _exact_sds(b, k)
    predicted = 1 / (1 + (more / k) * (1 / now ** 2 - 1))           # σ'² from each item's own σ at K
    exact = _exact_sds(b, more) ** 2
    assert predicted.mean() == pytest.approx(exact.mean(), rel=0.07)   # measured: within 0.2-5.3 %
    if b == 1.5:   # scaling σ² by K/K' alone (ignoring the prior) misses by 23 %: the check can tell
        assert (now ** 2 * k / more).mean() < 0.85 * exact.mean()


def test_the_predicted_trials_resolve_a_real_gap_in_simulation():
    lo_b, hi_b, k = 0.0, 0.7, 2
    lo, hi = _exact_sds(lo_b, k, seed=1), _exact_sds(hi_b, k, seed=2)
    extra = trials_to_resolve(hi_b - lo_b, float(np.sqrt((lo ** 2).mean())), float(np.sqrt((hi ** 2).mean())), k)
    assert extra is not None and extra > 0
    after = (hi_b - lo_b) / np.sqrt((_exact_sds(lo_b, k + extra, seed=3) ** 2).mean()
                                    + (_exact_sds(hi_b, k + extra, seed=4) ** 2).mean())
    before = (hi_b - lo_b) / np.sqrt((lo ** 2).mean() + (hi ** 2).mean())
    assert before < SEPARATION <= after < SEPARATION * 1.2


def test_gap_table_and_diagnose_name_the_edge_items_and_the_trials(tmp_path):
    b = [0.0, 0.1, 0.2, 0.9, 1.0, 1.1]
    sd = [0.3] * 6
    rows = gap_table(b, sd, [f"q{i}" for i in range(6)], top_k=1, n_trials=4)
    g = rows[0]
    assert (g["lower_item"], g["upper_item"], g["resolved"]) == ("q2", "q3", False)
    assert g["extra_trials_per_model"] == trials_to_resolve(0.7, 0.3, 0.3, 4) > 0
    assert "extra_trials_per_model" not in gap_table(b, sd, top_k=1)[0]      # K unknown: nothing claimed
    folder = tmp_path / "fit"
    folder.mkdir()
    (folder / "difficulty.csv").write_text("item,b_mean,b_sd\n" + "".join(f"q{i},{v},0.3\n" for i, v in enumerate(b)))
    (folder / "diagnostics.json").write_text(json.dumps({"input": {"n_trials": 4}}))
    out = run_script("diagnose_benchmark.py", folder / "difficulty.csv", "--top-k", "1")
    assert out.returncode == 0, out.stderr
    assert f"ask the panel for about {g['extra_trials_per_model']} more trials per model on q2 and q3" in out.stdout
    rec = json.loads(run_script("diagnose_benchmark.py", folder / "difficulty.csv", "--json").stdout)
    assert rec["gaps"][0]["extra_trials_per_model"] == g["extra_trials_per_model"]
