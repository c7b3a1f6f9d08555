"""The bundled real repeated samples (data/real_repeats/: SmolLM2-135M on CPU, 8 samples per item) refit through the
real commands by bench/real_repeats.py --refit: the summary it writes agrees with a direct count of the responses,
and every K > 1 fit carries its dispersion check (issue 18, item 4)."""

import csv
import json
import shutil
import subprocess
import sys
from collections import defaultdict

import pytest

from benchmeasure.irt.dispersion import THRESHOLD_P
from conftest import ROOT


@pytest.mark.slow  # two NUTS fits of 3 × 60 and 2 × 60 (about 25 s)
def test_refit_of_the_bundled_real_repeats(tmp_path):
    shutil.copy(ROOT / "data" / "real_repeats" / "responses.csv", tmp_path / "responses.csv")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "real_repeats.py"), "--output-dir", str(tmp_path),
                           "--refit", "--items", "60", "--n-trials", "8", "--seed", "1"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    cells = defaultdict(int)
    with open(tmp_path / "responses.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            cells[row["model"], row["item_id"]] += int(row["correct"])
    for label, models in (("all", {m for m, _ in cells}), ("sampling", {m for m, _ in cells} - {"smollm2-greedy"})):
        mine = [v for (m, _), v in cells.items() if m in models]
        assert set(summary[label]["models"]) == models
        assert summary[label]["all_or_none_share_observed"] == round(sum(v in (0, 8) for v in mine) / len(mine), 4)
        d = summary[label]["dispersion"]
        assert d["observed_low"] <= d["observed"] <= d["observed_high"] and 0 < d["replicated"]
        assert d["overdispersed"] == (d["p_value"] < THRESHOLD_P)  # the rule the check states
    bundled = json.loads((ROOT / "data" / "real_repeats" / "summary.json").read_text())
    for label in ("all", "sampling"):  # same data, same seed: the bundled summary is what the commands give
        assert summary[label]["all_or_none_share_observed"] == bundled[label]["all_or_none_share_observed"]
        assert summary[label]["accuracy"] == bundled[label]["accuracy"]
