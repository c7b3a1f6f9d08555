"""scripts/demo.sh, the README's first command: every step runs and writes what it announces."""

from __future__ import annotations

import csv
import json
import re
import subprocess

import pytest

from conftest import ROOT


@pytest.mark.slow  # one NUTS fit at the paper's settings (about 10 s)
def test_demo_runs_end_to_end_on_the_bundled_example(tmp_path):
    out = tmp_path / "demo"
    result = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh"), str(out)], capture_output=True, text=True,
                            cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert len(re.findall(r"^==> \d\. ", result.stdout, re.M)) == 8
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
