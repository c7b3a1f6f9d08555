"""No NaN or infinity is printed or written as a result (issue 15, item 3 and its rule): a result that would not be
finite is one error line naming its cause; --json output is always valid JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import assert_rejected, run_script


def test_difficulties_spanning_the_float_range_give_finite_metrics(tmp_path):
    (tmp_path / "d.csv").write_text("item,b_mean\na,1e308\nb,-1e308\nc,0\nd,1\n")
    result = run_script("diagnose_benchmark.py", "d.csv", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)  # strict JSON: NaN would not parse with parse_constant below
    json.loads(result.stdout, parse_constant=lambda name: pytest.fail(f"{name} in --json output"))
    assert 0 <= record["ddm"] <= 1 and 0 < record["max_gap"] <= 1


@pytest.mark.parametrize("content, fragment", [
    ("item,b_mean\na,1\nb,1\nc,1\n", "all 3 difficulties equal"),
    ("item,b_mean\na,1\nb,nan\n", "not a finite number"),
    ("item,b_mean\na,1\nb,Infinity\n", "not a finite number"),
])
def test_undefined_metrics_are_an_error_naming_the_cause(tmp_path, content, fragment):
    (tmp_path / "d.csv").write_text(content)
    for extra in ((), ("--json",)):
        result = run_script("diagnose_benchmark.py", "d.csv", *extra, cwd=tmp_path)
        assert_rejected(result, fragment)
        assert "nan" not in result.stdout.lower()


def test_posterior_draws_that_are_not_finite_are_refused(tmp_path):
    draws = np.random.default_rng(1).normal(size=(2, 10, 4))
    draws[1, 3, 2] = np.inf
    np.savez(tmp_path / "p.npz", b=draws)
    result = run_script("posterior_metrics.py", "p.npz", "--json", "--output", "o.json", cwd=tmp_path)
    assert_rejected(result, "p.npz", "not a finite number")
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize("make, fragment", [
    (lambda p: p.write_bytes(b"not a zip"), "cannot read as .npz"),
    (lambda p: p.write_bytes(b"PK\x03\x04broken"), "cannot read as .npz"),
    (lambda p: np.save(open(p, "wb"), np.zeros((3, 4))), "single .npy array"),
    (lambda p: np.savez(p, b=np.array([["a", "b"]])), "expected numbers"),
    (lambda p: np.savez(p, b=np.zeros((0, 4))), "has shape"),
    (lambda p: np.savez(p, b=np.zeros((5, 2)), items=np.zeros((2, 2))),
     "one-dimensional"),
])
def test_bad_npz_draws_are_one_line(tmp_path, make, fragment):
    path = tmp_path / "p.npz"
    make(path)
    assert_rejected(run_script("posterior_metrics.py", path), fragment)
