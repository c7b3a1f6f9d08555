"""scripts/demo.sh, the README's first command: every step runs and writes what it announces."""

from __future__ import annotations

import csv
import json
import re
import subprocess

import pytest

from conftest import ROOT


@pytest.mark.slow  # two NUTS fits at the paper's settings (ChemBench 22 x 2,854: 1-3 min; simulated: about 10 s)
def test_demo_runs_end_to_end_on_the_bundled_example(tmp_path):
    out = tmp_path / "demo"
    result = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh"), str(out)], capture_output=True, text=True,
                            cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert len(re.findall(r"^==> \d\. ", result.stdout, re.M)) == 8
    assert re.findall(r"^==> (C\d)\. ", result.stdout, re.M) == [f"C{k}" for k in range(1, 7)]
    # the real example comes first
    assert result.stdout.index("==> C1. ") < result.stdout.index("==> 1. ")
    check_chembench(out / "chembench", result.stdout)
    for name in ("response_matrix.csv", "difficulty.csv", "ability.csv", "diagnostics.json",
                 "metric_intervals.json", "difficulty_ecdf.png", "difficulty_ecdf.pdf", "explorer.html"):
        assert (out / name).is_file(), name
    assert (out / "posterior.zarr").is_dir()
    with open(out / "difficulty.csv", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 60
    diagnostics = json.loads((out / "diagnostics.json").read_text())
    assert diagnostics["max_r_hat"] <= 1.01 and diagnostics["divergences"] == 0
    # the fit recovers the simulated truth it is compared with in step 5
    pearson = float(re.search(r"Pearson r: ([0-9.]+)", result.stdout).group(1))
    assert pearson > 0.95
    assert (out / "difficulty_ecdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the explorer page shows the fitted benchmark with its posterior (same numbers as step 4)
    page = (out / "explorer.html").read_text()
    assert "posterior" in page and '"ddm":' in page


def check_chembench(real, stdout):
    """The ChemBench steps: every printed number is the one in the files they wrote."""
    for name in ("response_matrix.csv", "difficulty.csv", "ability.csv", "diagnostics.json", "metric_intervals.json",
                 "difficulty_ecdf.png", "validity.json"):
        assert (real / name).is_file(), name
    with open(real / "difficulty.csv", newline="") as handle:
        b = [float(row["b_mean"]) for row in csv.DictReader(handle)]
    assert len(b) == 2854
    diagnostics = json.loads((real / "diagnostics.json").read_text())
    assert diagnostics["input"]["models"] == 22 and diagnostics["divergences"] == 0
    part = stdout[stdout.index("==> C3. "):stdout.index("==> C4. ")]
    from benchmeasure.core.metrics import diagnose

    expected = diagnose(b, top_k=5)
    assert f"DDM: {expected.ddm:.6f}" in part and f"Max Gap: {expected.max_gap:.6f}" in part
    assert f"Top-5 Gap Sum: {expected.top_k_gap_sum:.6f}" in part
    assert (real / "difficulty_ecdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    intervals = json.loads((real / "metric_intervals.json").read_text())
    part = stdout[stdout.index("==> C5. "):stdout.index("==> C6. ")]
    for key, m in intervals["metrics"].items():  # K = 1: the noise-aware estimate is refused
        own, cal = m["per_draw_min_max"], m["calibrated"]   # the per-draw interval is in the record, labelled
        assert own["low"] <= own["median"] <= own["high"] and "per-draw" in own["for"]
        assert m["low"] is None and "K = 1" in m["refused"]
        # printed first: the plug-in, and the calibrated interval with the estimate of the true value it contains
        assert f"| {key} | {m['plugin']:.4f} | ≈ {cal['estimate']:.4f} [{cal['low']:.4f}, {cal['high']:.4f}]" in part
        assert m["plugin"] == pytest.approx(diagnose(b, top_k=5).as_dict()[key], abs=1e-7)
    validity = json.loads((real / "validity.json").read_text())
    labels = validity["labels"]
    assert labels["label_counts"] == {"easy": 859, "intermediate": 1973, "hard": 22}
    assert labels["auc_low"] <= labels["auc"] <= labels["auc_high"]
    part = stdout[stdout.index("==> C6. "):stdout.index("==> 1. ")]
    assert f"{labels['auc']:.3f}   95% bootstrap interval [{labels['auc_low']:.3f}, {labels['auc_high']:.3f}]" in part
    models = validity["models"]
    assert len(models) == 22 and [m["theta_mean"] for m in models] == sorted((m["theta_mean"] for m in models),
                                                                             reverse=True)
    with open(real / "response_matrix.csv", newline="") as handle:
        rows = {row[0]: row[1:] for row in list(csv.reader(handle))[1:]}
    for m in models:  # raw accuracy recomputed from the matrix the fit read
        assert m["correct"] == sum(map(int, rows[m["model"]])) and f"{m['correct']}/2854" in part
