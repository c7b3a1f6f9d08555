"""fit_irt.py --fixed-difficulties: an anchored joint NUTS fit puts new items on an existing scale."""

import csv
import json

import numpy as np
import pytest
import xarray as xr

from conftest import assert_rejected, run_script

K = 4


@pytest.fixture(scope="module")
def anchored(tmp_path_factory):
    """Old items with known b (the anchors), new items, and models whose abilities are shifted off the prior."""
    folder = tmp_path_factory.mktemp("fixed")
    rng = np.random.default_rng(21)
    theta = rng.normal(0.9, 1.0, 10)            # a stronger panel: the N(0, 1) prior alone would misplace the scale
    b_old, b_new = rng.normal(0, 1, 40), rng.normal(0.5, 1, 15)
    b = np.concatenate([b_old, b_new])
    items = [f"old{i}" for i in range(40)] + [f"new{i}" for i in range(15)]
    counts = rng.binomial(K, 1 / (1 + np.exp(b[None, :] - theta[:, None])))
    with open(folder / "matrix.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", *items])
        writer.writerows([f"m{j}", *row] for j, row in enumerate(counts.tolist()))
    (folder / "anchors.csv").write_text("item,b_mean\n" + "".join(f"old{i},{v:.10f}\n" for i, v in enumerate(b_old)))
    done = run_script("fit_irt.py", folder / "matrix.csv", "--n-trials", K, "--output-dir", folder / "out",
                      "--fixed-difficulties", folder / "anchors.csv", "--chains", 2, "--tune", 400, "--draws", 400,
                      "--seed", 3, "--save-posterior", "--quiet")
    assert done.returncode == 0, done.stderr
    return folder, b_old, b_new, theta


def test_new_items_land_on_the_old_scale(anchored):
    folder, _, b_new, _ = anchored
    posterior = xr.open_datatree(folder / "out" / "posterior.zarr", engine="zarr")["posterior"]
    draws = posterior["b"].sel(item=[f"new{i}" for i in range(15)]).values.reshape(-1, 15)
    offset = draws.mean(axis=1) - b_new.mean()          # posterior draws of the new items' mean offset
    assert abs(offset.mean()) < 3 * offset.std(), (offset.mean(), offset.std())
    rows = list(csv.DictReader(open(folder / "out" / "difficulty.csv", encoding="utf-8")))
    new = np.array([float(r["b_mean"]) for r in rows if r["item"].startswith("new")])
    assert np.corrcoef(new, b_new)[0, 1] > 0.9


def test_fixed_items_are_reported_as_fixed(anchored):
    folder, b_old, _, _ = anchored
    rows = {r["item"]: r for r in csv.DictReader(open(folder / "out" / "difficulty.csv", encoding="utf-8"))}
    for i, value in enumerate(b_old):
        row = rows[f"old{i}"]
        assert float(row["b_mean"]) == pytest.approx(value, abs=1e-6)
        assert float(row["b_sd"]) == 0.0 and row["r_hat"] == "" and row["ess_bulk"] == "" and row["fixed"] == "true"
    assert rows["new0"]["fixed"] == "false" and float(rows["new0"]["b_sd"]) > 0
    record = json.loads((folder / "out" / "diagnostics.json").read_text())
    fixed = record["settings"]["fixed_difficulties"]
    assert fixed["items"] == [f"old{i}" for i in range(40)] and fixed["sha256"]
    assert record["settings"]["route"] == "joint"
    assert record["max_r_hat"] is not None and record["max_r_hat"] < 1.05


def test_abilities_recovered_on_the_anchored_scale(anchored):
    folder, _, _, theta = anchored
    rows = list(csv.DictReader(open(folder / "out" / "ability.csv", encoding="utf-8")))
    est = np.array([float(r["theta_mean"]) for r in rows])
    sd = np.array([float(r["theta_sd"]) for r in rows])
    assert np.all(np.abs(est - theta) < 4 * sd)
    assert abs(est.mean() - theta.mean()) < 0.3   # the panel's shift is kept, not pulled to the prior's 0


@pytest.mark.parametrize("content,extra,fragment", [
    ("item,b_mean\nold0,0.1\nzz,0.2\n", [], "item 'zz' is not in the matrix"),
    ("item,b_mean\nold0,0.1\nold1,inf\n", [], "not a finite number"),
    ("item,b_mean\nold0,0.1\nold0,0.2\n", [], "appears more than once"),
    ("item,b_mean\nold0,0.1\nold1,0.2\n", ["--route", "collapsed"], "joint route"),
    ("item,b_mean\nold0,0.1\nold1,0.2\n", ["--method", "map"], "--method nuts"),
])
def test_bad_fixed_difficulties_are_one_error_line(anchored, tmp_path, content, extra, fragment):
    folder = anchored[0]
    (tmp_path / "fixed.csv").write_text(content)
    done = run_script("fit_irt.py", folder / "matrix.csv", "--n-trials", K, "--output-dir", tmp_path / "out",
                      "--fixed-difficulties", tmp_path / "fixed.csv", *extra)
    assert_rejected(done, fragment)
    assert not (tmp_path / "out").exists()


def test_an_anchor_file_in_the_output_folder_is_not_overwritten(anchored, tmp_path):
    folder = anchored[0]
    (tmp_path / "difficulty.csv").write_text("item,b_mean\nold0,0.1\nold1,0.2\n")
    done = run_script("fit_irt.py", folder / "matrix.csv", "--n-trials", K, "--output-dir", tmp_path,
                      "--fixed-difficulties", tmp_path / "difficulty.csv")
    assert_rejected(done)
    assert (tmp_path / "difficulty.csv").read_text() == "item,b_mean\nold0,0.1\nold1,0.2\n"


def test_scoring_integrates_over_the_saved_posterior(anchored, tmp_path):
    """score_models.py --difficulty-draws reads fit_irt.py's posterior.zarr (anchors' draws are constant)."""
    folder = anchored[0]
    (tmp_path / "new_model.csv").write_text("model,old0,old1,new0,new1\nnewcomer,4,3,1,0\n")
    done = run_script("score_models.py", tmp_path / "new_model.csv", "--difficulty", folder / "out" / "difficulty.csv",
                      "--n-trials", K, "--difficulty-draws", folder / "out" / "posterior.zarr", "--max-draws", 40,
                      "--output", tmp_path / "scores.csv")
    assert done.returncode == 0, done.stderr
    row = next(csv.DictReader(open(tmp_path / "scores.csv", encoding="utf-8")))
    assert row["model"] == "newcomer" and int(row["n_items_answered"]) == 4
    assert 0.0 < float(row["accuracy_predicted_low"]) < float(row["accuracy_predicted_full"]) \
        < float(row["accuracy_predicted_high"]) < 1.0
    record = json.loads((tmp_path / "scores.csv.json").read_text())
    assert record["settings"]["difficulty_draws_used"] == 40
