"""DDM, gaps, Max Gap and Top-k Gap Sum: hand-computed values and properties (benchmeasure.core.metrics)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import wasserstein_distance

from benchmeasure.base.errors import InputError
from benchmeasure.core.metrics import (
    ddm,
    diagnose,
    gaps,
    largest_gaps,
    max_gap,
    normalize_min_max,
    top_k_gap_sum,
)

# b = (-1, 0, 0.5, 2): z = (0, 1/3, 1/2, 1); uniform grid (1/8, 3/8, 5/8, 7/8)
B = [2.0, -1.0, 0.5, 0.0]


def test_normalize_min_max_by_hand():
    assert normalize_min_max(B) == pytest.approx([1.0, 0.0, 0.5, 1 / 3])


def test_ddm_by_hand():
    z = normalize_min_max(B)
    expected = (1 / 8 + abs(1 / 3 - 3 / 8) + abs(1 / 2 - 5 / 8) + 1 / 8) / 4
    assert ddm(z) == pytest.approx(expected)
    assert ddm(z) == pytest.approx(0.1041666667)


def test_gaps_include_boundaries():
    assert gaps([0.25, 0.5]) == pytest.approx([0.25, 0.25, 0.5])
    assert gaps(normalize_min_max(B)) == pytest.approx([0.0, 1 / 3, 1 / 6, 1 / 2, 0.0])


def test_max_gap_and_top_k_by_hand():
    z = [0.1, 0.2, 0.7]  # gaps 0.1, 0.1, 0.5, 0.3
    assert max_gap(z) == pytest.approx(0.5)
    assert top_k_gap_sum(z, 2) == pytest.approx(0.8)
    assert top_k_gap_sum(z, 5) == pytest.approx(1.0)  # k beyond n + 1 sums every gap


def test_largest_gaps_endpoints_and_ranks():
    found = largest_gaps([0.1, 0.2, 0.7], 2)
    assert [(g.rank, g.left, g.right) for g in found] == [(1, 0.2, 0.7), (2, 0.7, 1.0)]
    assert found[0].midpoint == pytest.approx(0.45)


def test_uniform_grid_has_zero_ddm():
    n = 10
    assert ddm([(i + 0.5) / n for i in range(n)]) == pytest.approx(0.0, abs=1e-15)


def test_diagnose_names_top_k_key():
    record = diagnose(B, top_k=3).as_dict()
    assert record["top3_gap_sum"] == pytest.approx(1 / 2 + 1 / 3 + 1 / 6)
    assert record["normalization"].startswith("per-benchmark min-max")


@pytest.mark.parametrize("values, fragment", [
    ([1.0], "at least 2"),
    ([1.0, 1.0, 1.0], "all 3 difficulties equal"),
    ([0.0, math.nan], "not a finite"),
    ([0.0, math.inf], "not a finite"),
])
def test_normalization_rejects(values, fragment):
    with pytest.raises(InputError, match=fragment):
        normalize_min_max(values)


def test_normalized_scale_is_kept_and_checked():
    assert diagnose([0.2, 0.4], normalized=True).max_gap == pytest.approx(0.6)
    with pytest.raises(InputError, match="outside"):
        diagnose([0.2, 1.4], normalized=True)


finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
spread = st.lists(finite, min_size=2, max_size=60).filter(lambda v: max(v) - min(v) > 1e-6)


@settings(max_examples=200, deadline=None)
@given(spread)
def test_ddm_is_wasserstein_to_uniform_reference(b):
    z = normalize_min_max(b)
    n = len(z)
    reference = [(i + 0.5) / n for i in range(n)]
    assert ddm(z) == pytest.approx(wasserstein_distance(z, reference), abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(spread)
def test_max_gap_at_least_one_over_n_plus_one(b):
    z = normalize_min_max(b)
    assert max_gap(z) >= 1 / (len(z) + 1) - 1e-12
    assert math.fsum(gaps(z)) == pytest.approx(1.0)


@settings(max_examples=200, deadline=None)
@given(spread, st.floats(min_value=1e-3, max_value=1e3), st.floats(min_value=-1e3, max_value=1e3))
def test_metrics_invariant_to_increasing_affine_maps(b, scale, shift):
    moved = [scale * v + shift for v in b]
    if max(moved) - min(moved) <= 1e-9 * max(1.0, max(map(abs, moved))):
        return  # the map collapsed the spread below float resolution
    a, c = diagnose(b), diagnose(moved)
    assert c.ddm == pytest.approx(a.ddm, abs=1e-6)
    assert c.max_gap == pytest.approx(a.max_gap, abs=1e-6)
    assert c.top_k_gap_sum == pytest.approx(a.top_k_gap_sum, abs=1e-6)
