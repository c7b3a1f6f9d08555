"""Tests of the reported-vs-local comparison (benchmeasure.reproduce) and scripts/reproduce_tables.py."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_benchmarks import make_benchmark

from benchmeasure.checks import check_matrix
from benchmeasure.matrix import ResponseMatrix, write_matrix
from benchmeasure.reproduce import REPORTED_DIR, compare_all, markdown, read_reported

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "reproduce_tables.py"


def test_reported_files_hold_the_papers_numbers():
    table1 = {r["benchmark"]: r for r in read_reported("table1")}
    assert table1["AIME24"] == {"benchmark": "AIME24", "ddm": 0.077, "max_gap": 0.179, "top5_sum": 0.502,
                                "items": 30}
    assert read_reported("readme_example")[0]["max_gap"] == 0.178623
    assert [r["benchmarks_at_or_over"] for r in read_reported("table1_counts")] == [10, 8, 9]
    table8 = read_reported("table8")
    assert all(r["delta_bic"] == r["bic_2pl"] - r["bic_1pl"] for r in table8)
    assert (REPORTED_DIR / "SOURCE.md").is_file()


@pytest.fixture
def local(tmp_path):
    data = tmp_path / "benchmarks"
    make_benchmark(data, "AIME24", [0, 1, 2, 4])           # DDM .125, Max Gap .5, Top-5 1.0, 4 items
    counts = np.random.default_rng(0).binomial(32, 0.5, size=(4, 6))
    matrix = ResponseMatrix([f"m{j}" for j in range(4)], [str(i) for i in range(6)], counts, 32)
    write_matrix(matrix, tmp_path / "matrix" / "AIME24_response_matrix.csv")
    robust = tmp_path / "robust" / "AIME24"
    robust.mkdir(parents=True)
    (robust / "robustness.json").write_text(json.dumps({
        "diagnostics_1pl": {"max_rhat": 1.01, "min_ess_bulk": 300, "divergences": 0},
        "leave_one_model_out": {"pearson_mean": 0.99, "pearson_min": 0.98, "spearman_mean": 0.97,
                                "spearman_min": 0.95},
        "mirt": {"2": {"max_rhat": 1.5, "min_ess_bulk": 7, "divergences": 1}},
    }))
    return tmp_path, check_matrix(matrix)


def test_compare_all_fills_only_what_exists(local):
    root, checks = local
    rows = compare_all(root / "benchmarks", root / "matrix", root / "robust", {})
    by = {(r.table, r.key, r.quantity): r for r in rows}
    ddm = by[("table1", "AIME24", "ddm")]
    assert ddm.local == pytest.approx(0.125) and ddm.difference == pytest.approx(0.125 - 0.077)
    assert by[("table1", "AIME24", "items")].difference == 4 - 30
    assert by[("table1", "AMC23", "ddm")].local is None and "absent" in by[("table1", "AMC23", "ddm")].note
    assert by[("table5", "AIME24", "model_information")].local == pytest.approx(checks.model_information)
    assert by[("table5", "AIME25", "model_information")].local is None
    assert by[("table6", "AIME24", "max_rhat")].difference == pytest.approx(1.01 - 1.02)
    assert by[("table7", "AIME24", "spearman_min")].local == 0.95
    assert by[("table9", "AIME24 / 2PL", "max_rhat")].local is None
    assert "no diagnostics_2pl" in by[("table9", "AIME24 / 2PL", "max_rhat")].note
    assert by[("table10", "AIME24 / MIRT-2", "min_ess_bulk")].local == 7
    assert by[("table10", "AIME24 / MIRT-3", "min_ess_bulk")].local is None
    assert all(r.local is None for r in rows if r.table in ("table2", "table12"))
    text = markdown(rows)
    assert "| AMC23 | all | ddm 0.089, max_gap 0.217, top5_sum 0.539, items 40 | absent |" in text


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_cli_outputs(local):
    root, _ = local
    out_dir = root / "out"
    out = _run("--data-dir", root / "benchmarks", "--matrix-dir", root / "matrix", "--robustness-dir",
               root / "robust", "--output-dir", out_dir)
    assert out.returncode == 0, out.stderr
    assert "## Table 1: DDM" in out.stdout and "## Table 12" in out.stdout
    with open(out_dir / "reproduction.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    aime = next(r for r in rows if r["table"] == "table1" and r["row"] == "AIME24" and r["quantity"] == "ddm")
    assert float(aime["local"]) == pytest.approx(0.125)
    assert json.loads((out_dir / "reproduction.json").read_text())["rows"][0]["table"] == "table1"
    only = _run("--data-dir", root / "benchmarks", "--tables", "readme_example")
    assert only.returncode == 0 and "## Table 5" not in only.stdout and "| AIME24 | ddm | 0.077077 | 0.125 |" \
        in only.stdout


@pytest.mark.parametrize("args, fragment", [
    (["--n-trials", "AIME25"], "expected NAME=K"),
    (["--n-trials", "AIME25=0"], "expected NAME=K"),
    (["--robustness-dir", "/nonexistent/robust"], "no such folder"),
])
def test_cli_rejects(tmp_path, args, fragment):
    out = _run(*args, "--output-dir", tmp_path / "out")
    assert out.returncode == 2 and not (tmp_path / "out").exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0]
