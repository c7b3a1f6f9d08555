"""One fit, one number per concept (issue 53): ``fit``, ``diagnose``, ``posterior-metrics``, ``summarize`` and the
explorer print the same plug-in (tied items' draws pooled, as fit pools them), the same calibrated estimate and
interval of the true value, and the same verdict on the widest gaps, for a K = 1 fit whose items tie."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tests.conftest import run_script

NAMES = {"ddm": "DDM", "max_gap": "Max Gap", "top5_gap_sum": "Top-5 Gap Sum"}
LINE = re.compile(r"  (DDM|Max Gap|Top-5 Gap Sum): plug-in (\d\.\d{4}) \(the paper's value\) · true \1 ≈ (\d\.\d{4}), "
                  r"94 % interval \[(\d\.\d{4}), (\d\.\d{4})\](?: \([^)]*\))? \(width [^)]*\)(?:; (.*))?$")


@pytest.fixture(scope="module")
def k1_fit(tmp_path_factory):
    """8 models × 60 items, one trial per cell (at most 9 distinct column sums: a staircase of tied items), fitted
    once through the real command line with its posterior saved."""
    root = tmp_path_factory.mktemp("agreement")
    rng = np.random.default_rng(11)
    theta, b = rng.normal(0, 1.5, 8), rng.normal(0, 1.2, 60)
    counts = rng.binomial(1, 1 / (1 + np.exp(-(theta[:, None] - b[None, :]))))
    (root / "m.csv").write_text("model," + ",".join(f"q{i}" for i in range(60)) + "\n" + "".join(
        f"m{j}," + ",".join(map(str, row)) + "\n" for j, row in enumerate(counts)))
    done = run_script("fit_irt.py", root / "m.csv", "--n-trials", 1, "--output-dir", root / "fit", "--seed", 3,
                      "--chains", 2, "--tune", 300, "--draws", 300, "--save-posterior")
    assert done.returncode == 0, done.stderr
    return root, done.stderr


def _fit_lines(text: str) -> dict:
    """``{metric: (plug-in, estimate, low, high, resolution words)}`` from the calibrated lines of fit/diagnose."""
    found = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            key = next(k for k, v in NAMES.items() if v == m.group(1))
            found[key] = m.groups()[1:]
    assert set(found) == set(NAMES), text
    return found


def test_every_command_prints_the_same_numbers(k1_fit):
    root, fit_out = k1_fit
    fit = root / "fit"
    record = json.loads((fit / "diagnostics.json").read_text())
    assert record["ties"]["staircase"] is True   # tied items: own draws and pooled draws give different means
    stored = record["calibrated_intervals"]["metrics"]
    printed = _fit_lines(fit_out)

    diagnose = run_script("diagnose_benchmark.py", fit / "difficulty.csv")
    assert diagnose.returncode == 0, diagnose.stderr
    assert _fit_lines(diagnose.stdout) == printed   # the same lines, resolution included
    values = json.loads(run_script("diagnose_benchmark.py", fit / "difficulty.csv", "--json").stdout)
    for key, (plugin, estimate, low, high, _) in printed.items():
        assert f"{values[key]:.4f}" == plugin
        assert f"{NAMES[key]}: {values[key]:.6f}" in diagnose.stdout
        e = stored[key]
        assert (f"{e['estimate']:.4f}", f"{e['low']:.4f}", f"{e['high']:.4f}") == (estimate, low, high)
        assert e["low"] <= e["estimate"] <= e["high"]
    assert ("widest gap resolved" == printed["max_gap"][4]) == values["gaps"][0]["resolved"]

    pm = run_script("posterior_metrics.py", fit / "posterior.zarr")
    assert pm.returncode == 0, pm.stderr
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in pm.stdout.splitlines() if line.startswith("| ") and not line.startswith("| Metric")}
    for key, (plugin, estimate, low, high, _) in printed.items():
        assert rows[key][0] == plugin and rows[key][1].startswith(f"≈ {estimate} [{low}, {high}]"), rows[key]
    assert rows["max_gap"][2] == ("yes" if printed["max_gap"][4] == "widest gap resolved" else "NO")
    assert rows["top5_gap_sum"][2] == printed["top5_gap_sum"][4].split(" widest")[0]
    rec = json.loads(run_script("posterior_metrics.py", fit / "posterior.zarr", "--json").stdout)
    assert rec["means"].startswith("pooled")
    for key in NAMES:
        assert rec["metrics"][key]["plugin"] == pytest.approx(values[key], abs=1e-7)   # CSV keeps 8 digits
        assert rec["metrics"][key]["plugin"] == pytest.approx(stored[key]["plugin"], abs=1e-7)

    summary = run_script("summarize_benchmarks.py", fit, "--output-dir", root / "table")
    assert summary.returncode == 0, summary.stderr
    row = [c.strip() for c in (root / "table" / "table1.md").read_text().splitlines()[2].split("|")[1:-1]]
    for key, col in (("ddm", 2), ("max_gap", 4), ("top5_gap_sum", 7)):
        e = stored[key]
        assert row[col].strip("*") == f"{values[key]:.3f}"
        assert row[col + 1] == f"≈ {e['estimate']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"
    assert row[6] == ("yes" if values["gaps"][0]["resolved"] else "no")

    from benchmeasure.analyses.posterior_metrics import read_posterior_b
    from benchmeasure.core.metrics import plugin_values
    from benchmeasure.explorer.collect import posterior_view

    items, draws = read_posterior_b(fit / "posterior.zarr")
    view = posterior_view(draws, 0.94, str(fit / "posterior.zarr"), items=items)["intervals"]
    for key in NAMES:
        assert view[key]["plugin"] == rec["metrics"][key]["plugin"]
        e = stored[key]
        assert view[key]["text"] == f"≈ {e['estimate']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"
    # the bug this guards against: each item's own draws give another plug-in than the pooled ones
    own = plugin_values(draws.mean(axis=0))
    assert any(own[key] != rec["metrics"][key]["plugin"] for key in NAMES)


def test_a_record_written_before_the_estimate_gives_the_same_estimate(k1_fit):
    """The estimate is recomputed from the stored worlds for a calibration record that predates it, and lies in
    its interval."""
    from benchmeasure.core.calibrated_text import checked

    root, _ = k1_fit
    block = json.loads((root / "fit" / "diagnostics.json").read_text())["calibrated_intervals"]
    old = {**block, "metrics": {k: {x: v for x, v in e.items() if x != "estimate"}
                                for k, e in block["metrics"].items()}}
    for key, e in checked(old)["metrics"].items():
        assert e["estimate"] == block["metrics"][key]["estimate"]
        assert e["low"] <= e["estimate"] <= e["high"]
