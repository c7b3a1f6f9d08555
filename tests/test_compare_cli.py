"""scripts/compare_difficulty.py through its command line, on a hand-made pair of difficulty files."""

import json

import pytest

from conftest import assert_rejected, run_script

# Estimate x = (0, 1, 2, 4) and reference y = (0, 2, 1, 3) for items a, b, c, d; the reference
# file lists them in another order and calls its columns item_id / b_true.
#   Pearson: dx = (-1.75, -.75, .25, 2.25), dy = (-1.5, .5, -.5, 1.5); Sxy = 5.5, Sxx = 8.75,
#            Syy = 5 -> r = 5.5 / sqrt(43.75) = 0.831522
#   Spearman: ranks (1, 2, 3, 4) vs (1, 3, 2, 4), sum d^2 = 2 -> 1 - 6*2 / (4*15) = 0.8
#   z_est = (0, .25, .5, 1), z_ref = (0, 2/3, 1/3, 1): |errors| = (0, 5/12, 1/6, 0),
#            mean 7/48 = 0.145833, max 5/12 = 0.416667
#   DDM (grid .125, .375, .625, .875): est .125 each -> .125; ref (.125, 1/24, 1/24, .125) -> 1/12
#   gaps (with the ends): est (0, .25, .25, .5, 0) -> Max Gap .5, Top-5 1.0, Top-2 .75;
#            ref (0, 1/3, 1/3, 1/3, 0) -> Max Gap 1/3, Top-5 1.0, Top-2 2/3
ESTIMATE = "item,b_mean,b_sd\na,0,0.1\nb,1,0.1\nc,2,0.1\nd,4,0.1\n"
REFERENCE = "item_id,b_true\nd,3\na,0\nc,1\nb,2\n"


@pytest.fixture
def pair(tmp_path):
    (tmp_path / "est.csv").write_text(ESTIMATE)
    (tmp_path / "ref.csv").write_text(REFERENCE)
    return tmp_path / "est.csv", tmp_path / "ref.csv"


def test_text_output_by_hand(pair):
    out = run_script("compare_difficulty.py", *pair, "--reference-column", "b_true")
    # 4 items, Top-5: the sum is 1 by construction, and each file says so (issue 22)
    assert out.returncode == 0 and out.stderr.count("Top-5 Gap Sum adds every gap") == 2, out.stderr
    assert out.stdout.splitlines() == [
        "Items compared: 4",
        "Pearson r: 0.8315   Spearman rho: 0.8000",
        "Normalized difficulty error |z_est - z_ref|: mean 0.1458, max 0.4167",
        "metric             estimate  reference  difference",
        "DDM                  0.1250     0.0833     +0.0417",
        "Max Gap              0.5000     0.3333     +0.1667",
        "Top-5 Gap Sum        1.0000     1.0000     +0.0000",
    ]


def test_json_output_by_hand(pair):
    out = run_script("compare_difficulty.py", *pair, "--reference-column", "b_true", "--top-k", 2, "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["items"] == 4
    assert r["pearson"] == pytest.approx(5.5 / 43.75 ** 0.5)
    assert r["spearman"] == pytest.approx(0.8)
    assert r["mean_abs_z_error"] == pytest.approx(7 / 48)
    assert r["max_abs_z_error"] == pytest.approx(5 / 12)
    est, ref = r["estimate"], r["reference"]
    assert (est["ddm"], est["max_gap"], est["top2_gap_sum"], est["top_k"]) == pytest.approx((0.125, 0.5, 0.75, 2))
    assert (ref["ddm"], ref["max_gap"], ref["top2_gap_sum"]) == pytest.approx((1 / 12, 1 / 3, 2 / 3))


def test_identical_files_agree_perfectly(pair):
    estimate, _ = pair
    out = run_script("compare_difficulty.py", estimate, estimate, "--json")
    r = json.loads(out.stdout)
    assert r["pearson"] == pytest.approx(1) and r["spearman"] == pytest.approx(1)
    assert r["max_abs_z_error"] == 0 and r["estimate"] == r["reference"]


@pytest.mark.parametrize("estimate, reference, extra, fragments", [
    (None, REFERENCE, [], ["est.csv: no such file"]),
    (ESTIMATE, None, [], ["ref.csv: no such file"]),
    (ESTIMATE, REFERENCE, [], ["ref.csv: no column 'b_mean'", "columns: item_id, b_true"]),
    (ESTIMATE, REFERENCE, ["--column", "b"], ["est.csv: no column 'b'"]),
    (ESTIMATE, "item_id,b_true\nd,3\na,0\nc,1\nz,2\n", [], ["ref.csv: item 'b' of", "est.csv is not there"]),
    (ESTIMATE, REFERENCE + "e,5\n", [], ["est.csv: item 'e' of", "ref.csv is not there"]),
    (ESTIMATE, "item_id,b_true\nd,3\na,0\nc,1\nb,2\na,9\n", [], ["ref.csv: item 'a' appears more than once"]),
    (ESTIMATE + "b,3,0.1\n", REFERENCE, [], ["est.csv: item 'b' appears more than once"]),
    (ESTIMATE, "item_id,b_true\nd,1\na,1\nc,1\nb,1\n", [], ["ref.csv: all 4 difficulties equal"]),
    (ESTIMATE, "item_id,b_true\nd,3\na,x\nc,1\nb,2\n", [], ["ref.csv: line 3, item 'a': b_true 'x' is not a number"]),
    (ESTIMATE, REFERENCE, ["--top-k", "0"], ["--top-k", "0 is outside the allowed range [1, "]),
])
def test_rejected_inputs(tmp_path, estimate, reference, extra, fragments):
    for name, text in (("est.csv", estimate), ("ref.csv", reference)):
        if text is not None:
            (tmp_path / name).write_text(text)
    column = [] if "b_mean'" in fragments[0] else ["--reference-column", "b_true"]
    out = run_script("compare_difficulty.py", tmp_path / "est.csv", tmp_path / "ref.csv", *column, *extra)
    assert out.stdout == ""
    assert_rejected(out, *fragments)
