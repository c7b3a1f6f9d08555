"""Tests of the reported-vs-local comparison (benchmeasure.analyses.reproduce) and scripts/reproduce_tables.py."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmeasure.analyses.checks import check_matrix
from benchmeasure.analyses.reproduce import REPORTED_DIR, compare_all, markdown, read_reported
from benchmeasure.core.matrix import ResponseMatrix, write_matrix
from conftest import BENCHFILL_CLI, make_benchmark, sim_run

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "reproduce_tables.py"


def test_reported_files_hold_the_papers_numbers():
    table1 = {r["benchmark"]: r for r in read_reported("table1")}
    assert table1["AIME24"] == {"benchmark": "AIME24", "ddm": 0.077, "max_gap": 0.179, "top5_gap_sum": 0.502,
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
        "diagnostics_1pl": {"max_r_hat": 1.01, "min_ess_bulk": 300, "divergences": 0},
        "leave_one_model_out": {"pearson_mean": 0.99, "pearson_min": 0.98, "spearman_mean": 0.97,
                                "spearman_min": 0.95},
        "mirt": {"2": {"max_r_hat": 1.5, "min_ess_bulk": 7, "divergences": 1}},
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
    assert by[("table6", "AIME24", "max_r_hat")].difference == pytest.approx(1.01 - 1.02)
    assert by[("table7", "AIME24", "spearman_min")].local == 0.95
    assert by[("table9", "AIME24 / 2PL", "max_r_hat")].local is None
    assert "no diagnostics_2pl" in by[("table9", "AIME24 / 2PL", "max_r_hat")].note
    assert by[("table10", "AIME24 / MIRT-2", "min_ess_bulk")].local == 7
    assert by[("table10", "AIME24 / MIRT-3", "min_ess_bulk")].local is None
    assert all(r.local is None for r in rows if r.table in ("table2", "table12"))
    assert "no --benchfill-run AIME24=RUN_DIR" in by[("table2", "AIME24", "target_dev_benchfill")].note
    assert "no --detection AIME25:Phi-4:benchfill=FILE" in \
        by[("table12", "AIME25 Phi-4 / Original + BenchFill", "p_value")].note
    text = markdown(rows)
    assert "| AMC23 | all | ddm 0.089, max_gap 0.217, top5_gap_sum 0.539, items 40 | absent |" in text


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


def test_a_robustness_record_written_before_the_rename_is_read(local):
    # robustness.json of earlier versions spelled max_r_hat as max_rhat (CHANGELOG.md)
    root, _ = local
    path = root / "robust" / "AIME24" / "robustness.json"
    path.write_text(path.read_text().replace('"max_r_hat"', '"max_rhat"'))
    by = {(r.table, r.key, r.quantity): r for r in compare_all(root / "benchmarks", root / "matrix", root / "robust",
                                                                 {})}
    assert by[("table6", "AIME24", "max_r_hat")].local == 1.01
    assert by[("table10", "AIME24 / MIRT-2", "max_r_hat")].local == 1.5


def test_a_broken_robustness_record_is_one_error_line(local):
    root, _ = local
    (root / "robust" / "AIME24" / "robustness.json").write_bytes(b"{\"diagnostics_1pl\": ")
    out = _run("--data-dir", root / "benchmarks", "--matrix-dir", root / "matrix", "--robustness-dir",
               root / "robust", "--output-dir", root / "out")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "robustness.json: not JSON" in lines[0], out.stderr
    assert not (root / "out").exists()


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


# --- Table 2 from BenchFill runs, Table 12 from detect_improvement.py outputs ------------------------------------


def _rows(out_dir, table):
    return {(r["row"], r["quantity"]): r for r in json.loads((out_dir / "reproduction.json").read_text())["rows"]
            if r["table"] == table}


@pytest.mark.slow
def test_cli_table2_from_a_benchfill_run(tmp_path):
    folder, env, server = sim_run(tmp_path, 1, search={"rounds": 1})
    try:
        done = subprocess.run([*BENCHFILL_CLI, "run", str(folder)], capture_output=True, text=True, env=env)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((folder / "summary.json").read_text())
    out = _run("--tables", "table2", "--benchfill-run", f"AIME24={folder}", "--output-dir", tmp_path / "out")
    assert out.returncode == 0, out.stderr
    rows = _rows(tmp_path / "out", "table2")
    for method in ("baseline", "benchfill", "oracle"):
        row = rows[("AIME24", f"top3_reduction_{method}_pct")]
        assert row["local"] == summary[method]["top3_gap_sum_reduction"]
        assert row["difference"] == pytest.approx(row["local"] - row["reported"])
    assert rows[("AIME24", "target_dev_benchfill")]["local"] == summary["benchfill"]["target_deviation"]
    assert rows[("AIME24", "target_dev_baseline")]["local"] == summary["baseline"]["target_deviation"]
    assert "run of 'math_sim'" in rows[("AIME24", "target_dev_baseline")]["source"]
    assert all(r["local"] is None and "absent" in r["source"] for (key, _), r in rows.items() if key != "AIME24")
    assert "5 of 25 reported values computed locally" in out.stdout


def _responses(path, models, seed=0):
    """pre/post rollouts (10 items x 8 per condition); post is better on the first 3 items."""
    rng = np.random.default_rng(seed)
    lines = ["model,item_id,trial,correct,condition"]
    for model in models:
        for item in range(10):
            for condition, p in (("pre", 0.4), ("post", 0.9 if item < 3 else 0.4)):
                lines += [f"{model},{item},{t},{int(rng.random() < p)},{condition}" for t in range(8)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def detections(tmp_path_factory):
    """Outputs of the real detect_improvement.py: one with two models (--json), one with a single model (--output)."""
    root = tmp_path_factory.mktemp("detect")
    script = ROOT / "scripts" / "detect_improvement.py"
    both = subprocess.run([sys.executable, str(script), _responses(root / "two.csv", ["Phi-4", "other"]),
                           "--permutations", "2000", "--seed", "1", "--json"], capture_output=True, text=True)
    assert both.returncode == 0, both.stderr
    (root / "two.json").write_text(both.stdout)
    one = subprocess.run([sys.executable, str(script), _responses(root / "one.csv", ["my-olmo"], seed=2),
                          "--permutations", "2000", "--output", root / "one.json"], capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    return root


def test_cli_table12_from_detection_outputs(detections, tmp_path):
    two = json.loads((detections / "two.json").read_text())
    one = json.loads((detections / "one.json").read_text())
    out = _run("--tables", "table12", "--detection", f"AIME25:Phi-4:benchfill={detections / 'two.json'}",
               "--detection", f"AIME24:Olmo-3.1-32B-Think:original={detections / 'one.json'}",
               "--output-dir", tmp_path / "out")
    assert out.returncode == 0, out.stderr
    rows = _rows(tmp_path / "out", "table12")
    phi = next(r for r in two if r["model"] == "Phi-4")
    key = "AIME25 Phi-4 / Original + BenchFill"
    assert rows[(key, "gain_as_printed")]["local"] == phi["gain_points"]
    assert rows[(key, "p_value")]["local"] == phi["p_value"]
    assert rows[(key, "detected")]["local"] == ("yes" if phi["detected"] else "no")
    olmo = "AIME24 Olmo-3.1-32B-Think / Original"
    assert rows[(olmo, "p_value")]["local"] == one["p_value"]      # a one-model file, whatever it calls the model
    assert "model 'my-olmo'" in rows[(olmo, "p_value")]["source"]
    assert rows[(olmo, "detected")]["difference"] == ("same" if not one["detected"] else "differs")
    computed = {k for k, r in rows.items() if r["local"] is not None}
    assert {row for row, _ in computed} == {key, olmo}
    assert "6 of 18 reported values computed locally" in out.stdout


@pytest.mark.parametrize("args, fragment", [
    (lambda d, t: ["--benchfill-run", "AIME24"], "expected BENCH=DIR"),
    (lambda d, t: ["--benchfill-run", f"AIME99={t}"], "Table 2 reports no 'AIME99'"),
    (lambda d, t: ["--benchfill-run", f"AIME24={t / 'nope'}"], "no such folder"),
    (lambda d, t: ["--benchfill-run", f"AIME24={d}"], "no summary.json"),
    (lambda d, t: ["--benchfill-run", f"AIME24={d}", "--benchfill-run", f"AIME24={t}"], "given twice"),
    (lambda d, t: ["--detection", f"AIME25:Phi-4={d / 'two.json'}"], "expected BENCH:MODEL:VARIANT=FILE"),
    (lambda d, t: ["--detection", f"AIME25:Phi-4:sft={d / 'two.json'}"], "variant must be one of"),
    (lambda d, t: ["--detection", f"AIME25:Llama:benchfill={d / 'two.json'}"], "Table 12 reports no such row"),
    (lambda d, t: ["--detection", f"AIME24:Olmo-3.1-32B-Think:benchfill={d / 'two.json'}"],
     "no record for model 'Olmo-3.1-32B-Think' (models: Phi-4, other)"),
    (lambda d, t: ["--detection", f"AIME25:Phi-4:benchfill={d / 'one.csv'}"], "not JSON"),
    (lambda d, t: ["--detection", f"AIME25:Phi-4:benchfill={d / 'missing.json'}"], "no such file"),
])
def test_cli_rejects_benchfill_and_detection_inputs(detections, tmp_path, args, fragment):
    out = _run(*args(detections, tmp_path), "--output-dir", tmp_path / "out")
    assert out.returncode == 2 and out.stdout == "" and not (tmp_path / "out").exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], out.stderr


def test_cli_rejects_a_file_that_is_not_a_detection_output(detections, tmp_path):
    summary_like = tmp_path / "summary.json"
    summary_like.write_text(json.dumps({"benchfill": {"top3_gap_sum_reduction": 1.0}}))
    out = _run("--detection", f"AIME25:Phi-4:benchfill={summary_like}")
    assert out.returncode == 2 and "not a benchmeasure detect --json output" in out.stderr
    bad_run = tmp_path / "run"
    bad_run.mkdir()
    (bad_run / "summary.json").write_text(json.dumps({"benchfill": {"top3_gap_sum_reduction": 1.0}}))
    out = _run("--benchfill-run", f"AIME24={bad_run}")
    assert out.returncode == 2 and "no baseline.top3_gap_sum_reduction" in out.stderr
