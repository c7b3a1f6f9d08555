"""Numeric options: NaN, infinities, out-of-range and absurd values are one error line, exit 2, for every command
(benchmeasure/base/options.py; issue 15, item 4 and the rule on numeric option parsing)."""

from __future__ import annotations

import pytest

from conftest import assert_rejected, run_script

CASES = [
    ("prepare_response_matrix.py", ["r.csv", "--n-trials", "100000000000000000000", "--output", "o.csv"], "--n-trials"),
    ("prepare_response_matrix.py", ["r.csv", "--n-trials", "10**20", "--output", "o.csv"], "--n-trials"),
    ("prepare_response_matrix.py", ["--from", "lm-eval", "x", "--metric", "acc", "--threshold", "nan",
                                    "--n-trials", "1", "--output", "o.csv"], "--threshold"),
    ("fit_irt.py", ["m.csv", "--n-trials", "2", "--output-dir", "o", "--chains", "1"], "--chains"),
    ("fit_irt.py", ["m.csv", "--n-trials", "2", "--output-dir", "o", "--draws", "1"], "--draws"),
    ("fit_irt.py", ["m.csv", "--n-trials", "2", "--output-dir", "o", "--seed", "-1"], "--seed"),
    ("fit_irt.py", ["m.csv", "--n-trials", "2", "--output-dir", "o", "--target-accept", "nan"], "--target-accept"),
    ("fit_irt.py", ["m.csv", "--n-trials", "2", "--output-dir", "o", "--guessing", "inf"], "--guessing"),
    ("verifier/grade.py", ["--kind", "math", "--reference", "1", "--response", "1", "--timeout", "nan"], "--timeout"),
    ("verifier/grade.py", ["--kind", "math", "--reference", "1", "--response", "1", "--timeout", "-5"], "--timeout"),
    ("detect_improvement.py", ["r.csv", "--alpha", "inf"], "--alpha"),
    ("detect_improvement.py", ["r.csv", "--seed", "-1"], "--seed"),
    ("detect_improvement.py", ["r.csv", "--permutations", "1e9"], "--permutations"),
    ("posterior_metrics.py", ["p.npz", "--probability", "1.5"], "--probability"),
    ("diagnose_benchmark.py", ["d.csv", "--top-k", "0"], "--top-k"),
    ("rank_flip_bound.py", ["m.csv", "d.csv", "--n-trials", "2", "--lipschitz", "nan"], "--lipschitz"),
    ("make_example.py", ["--seed", "-1"], "--seed"),
    ("irt_robustness.py", ["m.csv", "--n-trials", "2", "--output-dir", "o", "--workers", "0"], "--workers"),
    ("check_response_matrix.py", ["m.csv", "--n-trials", "-3"], "--n-trials"),
    ("compare_difficulty.py", ["a.csv", "b.csv", "--top-k", "Infinity"], "--top-k"),
    ("plot_difficulty.py", ["a.csv", "--output", "f.png", "--columns", "nan"], "--columns"),
]


@pytest.mark.parametrize("script, args, option", CASES, ids=[f"{c[0]}:{c[2]}:{c[1][-1]}" for c in CASES])
def test_bad_numeric_option_is_one_error_line(tmp_path, script, args, option):
    result = run_script(script, *args, cwd=tmp_path)
    assert_rejected(result, option)
    assert list(tmp_path.iterdir()) == []  # nothing written
