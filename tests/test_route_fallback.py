"""--route auto falls back from gibbs to collapsed when gibbs does not mix, and --strict makes an unconverged fit
fail by exit status (issue 31, item 4)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np

from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.irt.fit import _auto_fallback
from benchmeasure.irt.plan import FitSettings, plan_fit
from conftest import run_script


def _holes_matrix():
    rng = np.random.default_rng(1)
    counts = rng.binomial(1, 0.5, (5, 8))
    trials = np.ones((5, 8), dtype=int)
    trials[0, :4] = 0
    return ResponseMatrix([f"m{j}" for j in range(5)], [f"q{i}" for i in range(8)], counts * trials, 1,
                          trials=trials)


def _result(r_hat, ess):
    return SimpleNamespace(diagnostics={"max_r_hat": r_hat, "min_ess_bulk": ess, "sampling_time_s": 1.0})


def test_auto_gibbs_that_did_not_mix_is_refitted_on_the_collapsed_route():
    matrix = _holes_matrix()
    auto = plan_fit(matrix, FitSettings(route="auto", seed=1))
    gibbs = auto.__class__(**{**auto.__dict__, "route": "gibbs"})   # as if auto had chosen gibbs
    plan, why = _auto_fallback(_result(2.15, 5.0), gibbs)
    assert plan.route == plan.settings.route == "collapsed" and plan.seed_used == gibbs.seed_used
    assert why == {"from": "gibbs", "to": "collapsed", "gibbs_max_r_hat": 2.15, "gibbs_min_ess_bulk": 5.0,
                   "gibbs_sampling_time_s": 1.0}
    assert _auto_fallback(_result(1.004, 3000.0), gibbs) is None            # it mixed: kept
    assert _auto_fallback(_result(1.2, 3000.0), gibbs)[0].route == "collapsed"   # R-hat alone is enough
    chosen = plan_fit(matrix, FitSettings(route="gibbs", seed=1))           # the user asked for gibbs: kept
    assert not chosen.auto and _auto_fallback(_result(2.15, 5.0), chosen) is None


def test_strict_fails_an_unconverged_fit_by_exit_status_and_keeps_its_outputs(tmp_path):
    rng = np.random.default_rng(4)
    counts = rng.binomial(1, 0.5, (6, 10))
    (tmp_path / "m.csv").write_text("model," + ",".join(f"q{i}" for i in range(10)) + "\n" + "".join(
        f"m{j}," + ",".join(map(str, row)) + "\n" for j, row in enumerate(counts)))
    short = ("--n-trials", 1, "--seed", 1, "--chains", 2, "--tune", 20, "--draws", 10, "--no-calibrate")
    done = run_script("fit_irt.py", tmp_path / "m.csv", "--output-dir", tmp_path / "s", "--strict", *short)
    assert done.returncode == 3, done.stderr
    assert "error: --strict: the fit did not converge" in done.stderr and "min bulk ESS" in done.stderr
    assert json.loads((tmp_path / "s" / "diagnostics.json").read_text())["min_ess_bulk"] < 400
    lenient = run_script("fit_irt.py", tmp_path / "m.csv", "--output-dir", tmp_path / "l", *short)
    assert lenient.returncode == 0 and "warning: min bulk ESS" in lenient.stderr
