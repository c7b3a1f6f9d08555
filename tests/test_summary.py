"""Tests of the Table 1 summary and scripts/summarize_benchmarks.py."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmeasure.analyses.summary import markdown_table, marked_counts, summarize
from benchmeasure.core.benchmarks import find_benchmarks
from conftest import make_benchmark

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "summarize_benchmarks.py"


@pytest.fixture
def root(tmp_path):
    # z = 0, .25, .5, 1: DDM = (.125+.125+.125+.125)/4 = .125; gaps 0, .25, .25, .5, 0
    make_benchmark(tmp_path, "AIME24", [0, 1, 2, 4])
    # evenly spread 11 items: DDM = mean |i/10 − (i + .5)/11| small, Max Gap 0.1, Top-5 0.5
    make_benchmark(tmp_path, "Even", [i / 10 for i in range(11)])
    return tmp_path


def test_rows_by_hand(root):
    rows = summarize(find_benchmarks([root]), {"AIME24": "Math"})
    aime, even = rows
    assert (aime.benchmark, aime.domain, aime.items) == ("AIME24", "Math", 4)
    assert aime.ddm == pytest.approx(0.125) and aime.max_gap == pytest.approx(0.5)
    assert aime.top5_gap_sum == pytest.approx(1.0)
    assert even.domain == "" and even.max_gap == pytest.approx(0.1) and even.top5_gap_sum == pytest.approx(0.5)
    expected_ddm = sum(abs(i / 10 - (i + 0.5) / 11) for i in range(11)) / 11
    assert even.ddm == pytest.approx(expected_ddm)
    assert aime.marked("ddm") and aime.marked("max_gap") and aime.marked("top5_gap_sum")
    assert not even.marked("ddm")
    assert marked_counts(rows) == {"ddm": (1, 2), "max_gap": (2, 2), "top5_gap_sum": (2, 2)}


def test_markdown_layout_and_marks(root):
    table = markdown_table(summarize(find_benchmarks([root]), {"AIME24": "Math"}))
    assert table.splitlines()[0] == (
        "| Benchmark | Domain | DDM (plug-in) | true ≈ estimate [calibrated 94 %] | Max Gap (plug-in) | "
        "true ≈ estimate [calibrated 94 %] | widest gap resolved | Top-5 Sum (plug-in) | "
        "true ≈ estimate [calibrated 94 %] | # | items flagged | models flagged |")
    # a hand-made difficulty file: no fit beside it, so no interval, no b_sd to judge the gap by and no model-fit check
    assert ("| AIME24 | Math | **0.125** | uncalibrated | **0.500** | uncalibrated | ? | **1.000** | uncalibrated | 4 "
            "| not checked | not checked |" in table)
    assert "DDM ≥ 0.10 in 1/2" in table


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_cli_default_domains_json_and_outputs(root, tmp_path):
    out_dir = tmp_path / "out"
    out = _run(root, "--json", "--output-dir", out_dir)
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert [b["benchmark"] for b in record["benchmarks"]] == ["AIME24", "Even"]
    assert record["benchmarks"][0]["domain"] == "Math"      # from the paper's Table 3 rows
    assert record["marked_counts"]["ddm"] == {"marked": 1, "total": 2}
    assert len(record["inputs"]["AIME24"]) == 64
    assert (out_dir / "table1.csv").read_text().splitlines()[1].startswith("AIME24,Math,0.125,0.5,")
    assert "**0.125**" in (out_dir / "table1.md").read_text()
    assert json.loads((out_dir / "table1.json").read_text())["benchmarks"] == record["benchmarks"]


@pytest.mark.parametrize("make, fragment", [
    (lambda r: [r / "missing"], "no such benchmark folder or file"),
    (lambda r: [make_benchmark(r, "Bad", [0, 1, 2], test_ids=[0, 2, 3])], "found 3, missing 1"),
    (lambda r: [make_benchmark(r, "Short", [0, 1, 2], test_ids=[0, 1])], "has 3 items but test.jsonl has 2"),
])
def test_cli_rejects(tmp_path, make, fragment):
    out_dir = tmp_path / "out"
    out = _run(*make(tmp_path), "--output-dir", out_dir)
    assert out.returncode == 2 and out.stdout == "" and not out_dir.exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0]


def test_cli_warns_about_skipped_folders_and_still_summarizes(root):
    (root / "notes").mkdir()
    out = _run(root, "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert [b["benchmark"] for b in record["benchmarks"]] == ["AIME24", "Even"]
    assert record["skipped_folders"] == [str(root / "notes")]
    warning = f"warning: {root / 'notes'}: skipped, not a benchmark folder (no difficulty.csv)"
    # and the 4-item AIME24 fixture's Top-5 Gap Sum is 1 by construction (issue 22)
    few = f"warning: {root / 'AIME24' / 'difficulty.csv'}: 4 items leave only 5 gaps"
    assert sorted(line[:len(few)] for line in out.stderr.splitlines()) == sorted([warning[:len(few)], few])


def test_cli_released_ids_checked_without_test_jsonl_and_no_warning_before_an_error(tmp_path):
    make_benchmark(tmp_path, "Gappy", [0, 1, 2], test_ids=None)
    (tmp_path / "Gappy" / "difficulty.csv").write_text("item_id,b_mean\n0,0.1\n1,0.2\n4,0.3\n")
    (tmp_path / "notes").mkdir()
    out_dir = tmp_path / "out"
    out = _run(tmp_path, "--output-dir", out_dir)
    assert out.returncode == 2 and out.stdout == "" and not out_dir.exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Gappy" in lines[0]
    assert "found 4, missing 2 (4 is on line 4)" in lines[0]
    flat = tmp_path / "flat"                         # loads, then fails in the summary: still one line
    make_benchmark(flat, "Flat", [1.0, 1.0, 1.0])
    (flat / "notes").mkdir()
    out = _run(flat)
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stderr.startswith("error:") and "Flat" in out.stderr
    empty = tmp_path / "empty"
    (empty / "notes").mkdir(parents=True)
    out = _run(empty)
    assert out.returncode == 2 and out.stderr.splitlines() == [
        f"error: {empty}: no benchmark folders (no */difficulty.csv inside)"]
