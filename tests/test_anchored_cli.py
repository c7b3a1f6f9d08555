"""score_models.py, calibrate_items.py and select_anchors.py through their real command lines (docs/anchored.md)."""

import csv
import json

import numpy as np
import pytest

from benchmeasure.benchfill.calibration import annotate
from conftest import assert_rejected, run_script

K = 4
G = 0.25


def _write_matrix(path, models, items, counts):
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", *items])
        for model, row in zip(models, counts):
            writer.writerow([model, *map(int, row)])


def _read(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A benchmark of 400 items with known difficulties; new models with known abilities answer with guessing."""
    folder = tmp_path_factory.mktemp("anchored")
    rng = np.random.default_rng(11)
    n = 400
    b = rng.normal(0, 1, n)
    items = [f"q{i:03d}" for i in range(n)]
    with open(folder / "difficulty.csv", "w", encoding="utf-8") as handle:
        handle.write("item,b_mean,b_sd\n" + "".join(f"{i},{v:.8f},0.1\n" for i, v in zip(items, b)))
    theta = np.array([-1.2, -0.3, 0.4, 1.3])
    full = rng.binomial(K, G + (1 - G) / (1 + np.exp(b[None, :] - theta[:, None])))
    return {"folder": folder, "b": b, "items": items, "theta": theta, "full": full, "rng": rng}


def test_scores_recover_abilities_from_all_items_and_from_ten_percent(world):
    folder, items, theta, full = world["folder"], world["items"], world["theta"], world["full"]
    models = [f"m{j}" for j in range(len(theta))]
    _write_matrix(folder / "all.csv", models, items, full)
    subset = np.sort(world["rng"].choice(len(items), 40, replace=False))  # 10% of the items: anchors
    _write_matrix(folder / "tenth.csv", models, [items[i] for i in subset], full[:, subset])
    for name, answered in (("all", len(items)), ("tenth", 40)):
        done = run_script("score_models.py", folder / f"{name}.csv", "--difficulty", folder / "difficulty.csv",
                          "--n-trials", K, "--guessing", G, "--output", folder / f"{name}_scores.csv")
        assert done.returncode == 0, done.stderr
        rows = _read(folder / f"{name}_scores.csv")
        assert [r["model"] for r in rows] == models
        for row, true_theta, truth in zip(rows, theta, full):
            mean, sd = float(row["theta_mean"]), float(row["theta_sd"])
            assert abs(mean - true_theta) < 3 * sd, (name, row, true_theta)
            assert float(row["theta_hdi_low"]) < mean < float(row["theta_hdi_high"])
            assert int(row["n_items_answered"]) == answered
            realized = truth.mean() / K
            low, high = float(row["accuracy_predicted_low"]), float(row["accuracy_predicted_high"])
            assert low - 0.01 <= realized <= high + 0.01, (name, row, realized)
            if name == "all":  # every item answered: the prediction is the observation
                assert float(row["accuracy_predicted_full"]) == pytest.approx(realized, abs=1e-6)
                assert float(row["accuracy_observed"]) == pytest.approx(realized, abs=1e-6)
        record = json.loads((folder / f"{name}_scores.csv.json").read_text())
        assert record["settings"]["guessing"] == G and record["inputs"][0]["sha256"]
    # more items, tighter posteriors
    sd_all = [float(r["theta_sd"]) for r in _read(folder / "all_scores.csv")]
    sd_tenth = [float(r["theta_sd"]) for r in _read(folder / "tenth_scores.csv")]
    assert all(a < t / 2 for a, t in zip(sd_all, sd_tenth))


def test_scores_from_long_responses_and_difficulty_draws(world, tmp_path):
    folder, items, b = world["folder"], world["items"], world["b"]
    with open(tmp_path / "responses.csv", "w", encoding="utf-8") as handle:
        handle.write("model,item_id,trial,correct\n")
        for i in range(30):
            for t in range(K):
                handle.write(f"new,{items[i]},{t},{int(world['full'][2, i] > t)}\n")
    draws = b[None, :] + np.random.default_rng(0).normal(0, 0.3, (50, len(b)))
    np.savetxt(tmp_path / "draws.csv", draws, delimiter=",", header=",".join(items), comments="", fmt="%.6f")
    outputs = {}
    for label, extra in (("plug", []), ("draws", ["--difficulty-draws", tmp_path / "draws.csv"])):
        done = run_script("score_models.py", tmp_path / "responses.csv", "--difficulty", folder / "difficulty.csv",
                          "--n-trials", K, "--guessing", G, "--output", tmp_path / f"score_{label}.csv", *extra)
        assert done.returncode == 0, done.stderr
        outputs[label] = _read(tmp_path / f"score_{label}.csv")[0]
    # integrating over uncertain difficulties widens θ's posterior
    assert float(outputs["draws"]["theta_sd"]) > float(outputs["plug"]["theta_sd"])
    assert json.loads((tmp_path / "score_draws.csv.json").read_text())["settings"]["difficulty_draws_used"] == 50


def test_calibration_recovers_difficulties_and_is_benchfills(tmp_path):
    rng = np.random.default_rng(5)
    theta = rng.normal(0, 1.2, 40)
    models = [f"m{j}" for j in range(40)]
    b_new = np.array([-1.5, -0.5, 0.0, 0.7, 1.8])
    counts = rng.binomial(K, G + (1 - G) / (1 + np.exp(b_new[None, :] - theta[:, None])))
    items = [f"new{i}" for i in range(5)]
    _write_matrix(tmp_path / "new.csv", models, items, counts)
    with open(tmp_path / "ability.csv", "w", encoding="utf-8") as handle:
        handle.write("model,theta_mean,theta_sd\n" + "".join(f"{m},{t:.10f},0.1\n" for m, t in zip(models, theta)))
    (tmp_path / "reference.csv").write_text("item,b_mean\na,-2\nb,2\n")
    done = run_script("calibrate_items.py", tmp_path / "new.csv", "--abilities", tmp_path / "ability.csv",
                      "--n-trials", K, "--guessing", G, "--reference-difficulty", tmp_path / "reference.csv",
                      "--output", tmp_path / "out.csv")
    assert done.returncode == 0, done.stderr
    rows = _read(tmp_path / "out.csv")
    assert [r["item"] for r in rows] == items
    for row, true_b, column in zip(rows, b_new, counts.T):
        mean, sd = float(row["b_mean"]), float(row["b_sd"])
        assert abs(mean - true_b) < 3 * sd
        assert float(row["b_hdi_low"]) < mean < float(row["b_hdi_high"])
        # the same numbers as BenchFill's online calibration (one code path)
        note = annotate(dict(zip(models, column.tolist())), dict(zip(models, theta)), K, -2.0, 2.0, G)
        assert mean == pytest.approx(note.b_mean, rel=1e-5)
        assert float(row["z"]) == pytest.approx(note.z, rel=1e-5)
    # without a reference, z is empty (never NaN)
    done = run_script("calibrate_items.py", tmp_path / "new.csv", "--abilities", tmp_path / "ability.csv",
                      "--n-trials", K, "--output", tmp_path / "plain.csv")
    assert done.returncode == 0, done.stderr
    assert {r["z"] for r in _read(tmp_path / "plain.csv")} == {""}


@pytest.mark.parametrize("strategy", ["stratified", "information", "random"])
def test_select_anchors_is_seeded_and_names_benchmark_items(world, tmp_path, strategy):
    folder = world["folder"]
    paths = []
    for name, seed in (("a", 3), ("b", 3)):
        done = run_script("select_anchors.py", folder / "difficulty.csv", "--k", 25, "--strategy", strategy,
                          "--seed", seed, "--output", tmp_path / f"{name}.csv")
        assert done.returncode == 0, done.stderr
        paths.append(tmp_path / f"{name}.csv")
    assert paths[0].read_text() == paths[1].read_text()
    rows = _read(paths[0])
    assert len(rows) == 25 and len({r["item"] for r in rows}) == 25
    assert {r["item"] for r in rows} <= set(world["items"])
    assert json.loads((tmp_path / "a.csv.json").read_text())["settings"]["strategy"] == strategy


def _bad_inputs(folder, tmp_path):
    (tmp_path / "m.csv").write_text("model,q000,zz1,zz2\nx,1,0,1\n")
    (tmp_path / "ok.csv").write_text("model,q000,q001\nx,1,0\ny,2,1\n")
    (tmp_path / "big.csv").write_text("model,q000,q001\nx,1,0\ny,5,1\n")
    (tmp_path / "inf.csv").write_text("item,b_mean\nq000,0.5\nq001,inf\n")
    (tmp_path / "blank.csv").write_text("item,b_mean\nq000,0.5\nq001,\n")
    (tmp_path / "dupitem.csv").write_text("item,b_mean\nq000,0.5\nq001,1\nq000,2\n")
    (tmp_path / "dup.csv").write_text("model,theta_mean\nx,0.1\ny,0.2\nx,0.3\n")
    (tmp_path / "abil.csv").write_text("model,theta_mean\nx,0.1\n")
    (tmp_path / "nanabil.csv").write_text("model,theta_mean\nx,0.1\ny,nan\n")
    (tmp_path / "g.csv").write_text("item_id,guessing\nzz,0.2\n")
    d = folder / "difficulty.csv"
    score = ("score_models.py",)
    return [
        (score, [tmp_path / "m.csv", "--difficulty", d, "--n-trials", K], "2 item(s) have no difficulty"),
        (score, [tmp_path / "ok.csv", "--difficulty", tmp_path / "inf.csv", "--n-trials", K], "not a finite number"),
        (score, [tmp_path / "ok.csv", "--difficulty", tmp_path / "blank.csv", "--n-trials", K], "blank"),
        (score, [tmp_path / "ok.csv", "--difficulty", tmp_path / "dupitem.csv", "--n-trials", K],
         "'q000' appears more than once"),
        (score, [tmp_path / "big.csv", "--difficulty", d, "--n-trials", K], "outside [0, 4]"),
        (score, [tmp_path / "ok.csv", "--difficulty", d, "--n-trials", 0], "--n-trials"),
        (score, [tmp_path / "ok.csv", "--difficulty", d, "--n-trials", K, "--guessing-csv", tmp_path / "g.csv"],
         "item 'zz' is not in the difficulty file"),
        (score, [tmp_path / "ok.csv", "--difficulty", d, "--n-trials", K, "--guessing", 1], "--guessing"),
        (("calibrate_items.py",), [tmp_path / "ok.csv", "--abilities", tmp_path / "dup.csv", "--n-trials", K],
         "'x' appears more than once"),
        (("calibrate_items.py",), [tmp_path / "ok.csv", "--abilities", tmp_path / "abil.csv", "--n-trials", K],
         "'y' has no ability"),
        (("calibrate_items.py",), [tmp_path / "ok.csv", "--abilities", tmp_path / "nanabil.csv", "--n-trials", K],
         "not a finite number"),
        (("calibrate_items.py",), [tmp_path / "big.csv", "--abilities", tmp_path / "abil.csv", "--n-trials", K],
         "outside [0, 4]"),
        (("select_anchors.py",), [d, "--k", 401, "--seed", 1], "--k must be between 1 and the number of items"),
        (("select_anchors.py",), [tmp_path / "inf.csv", "--k", 1, "--seed", 1], "not a finite number"),
        (("select_anchors.py",), [tmp_path / "dupitem.csv", "--k", 1, "--seed", 1], "appears more than once"),
        (("select_anchors.py",), [d, "--k", 5, "--seed", 1, "--option", "depth=3"],
         "--option depth: not an option of the stratified anchor strategy (accepted: none)"),
    ]


def test_bad_input_is_one_error_line_and_writes_nothing(world, tmp_path):
    for (script,), args, fragment in _bad_inputs(world["folder"], tmp_path):
        out = tmp_path / "out.csv"
        done = run_script(script, *args, "--output", out)
        assert_rejected(done, fragment)
        assert not out.exists() and not (tmp_path / "out.csv.json").exists(), (script, args)


def test_k_recorded_by_prepare_must_match(world, tmp_path):
    """A K = 2 matrix read as K = 4 has no count above 4 but would halve every rate: its record says so."""
    rows = "".join(f"x,q00{i},{t},{(i + t) % 2}\n" for i in range(3) for t in range(2))
    (tmp_path / "responses.csv").write_text("model,item_id,trial,correct\n" + rows)
    made = run_script("prepare_response_matrix.py", tmp_path / "responses.csv", "--n-trials", 2,
                      "--output", tmp_path / "m.csv")
    assert made.returncode == 0, made.stderr
    for script, flag, other in (("score_models.py", "--difficulty", world["folder"] / "difficulty.csv"),
                                ("calibrate_items.py", "--abilities", tmp_path / "a.csv")):
        (tmp_path / "a.csv").write_text("model,theta_mean\nx,0.5\n")
        done = run_script(script, tmp_path / "m.csv", flag, other, "--n-trials", K, "--output", tmp_path / "o.csv")
        assert_rejected(done, "built with 2 trials", "--n-trials 2")
        assert not (tmp_path / "o.csv").exists()
        done = run_script(script, tmp_path / "m.csv", flag, other, "--n-trials", 2, "--output", tmp_path / "o.csv")
        assert done.returncode == 0, done.stderr
        (tmp_path / "o.csv").unlink()
        (tmp_path / "o.csv.json").unlink()


def test_output_may_not_overwrite_an_input(world):
    folder = world["folder"]
    before = (folder / "difficulty.csv").read_bytes()
    done = run_script("select_anchors.py", folder / "difficulty.csv", "--k", 5, "--seed", 1,
                      "--output", folder / "difficulty.csv")
    assert_rejected(done)
    assert (folder / "difficulty.csv").read_bytes() == before


def test_models_with_different_anchor_sets_come_in_separate_files(world, tmp_path):
    folder, items, full = world["folder"], world["items"], world["full"]
    _write_matrix(tmp_path / "a.csv", ["m0"], items[:30], full[:1, :30])
    _write_matrix(tmp_path / "b.csv", ["m3"], items[100:160], full[3:4, 100:160])
    done = run_script("score_models.py", tmp_path / "a.csv", tmp_path / "b.csv", "--difficulty",
                      folder / "difficulty.csv", "--n-trials", K, "--guessing", G, "--output", tmp_path / "s.csv")
    assert done.returncode == 0, done.stderr
    rows = _read(tmp_path / "s.csv")
    assert [(r["model"], r["n_items_answered"]) for r in rows] == [("m0", "30"), ("m3", "60")]
    assert float(rows[0]["theta_mean"]) < float(rows[1]["theta_mean"])   # true abilities -1.2 and 1.3
    _write_matrix(tmp_path / "c.csv", ["m0"], items[200:210], full[:1, 200:210])
    done = run_script("score_models.py", tmp_path / "a.csv", tmp_path / "c.csv", "--difficulty",
                      folder / "difficulty.csv", "--n-trials", K, "--output", tmp_path / "t.csv")
    assert_rejected(done, "model 'm0' is also in")
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize("strategy", ["stratified", "information", "random"])
def test_select_anchors_leaves_out_the_items_check_fit_flags(checked_fit, tmp_path, strategy):
    difficulty, inverted = checked_fit["fit"] / "difficulty.csv", set(checked_fit["inverted"])
    flagged = {r["item"] for r in _read(checked_fit["check"] / "items.csv") if r["flagged"] == "true"}
    assert inverted <= flagged   # the check found the wrong keys (test_check_fit.py tests the check itself)
    n = len(checked_fit["items"])
    done = run_script("select_anchors.py", difficulty, "--k", n - len(flagged), "--strategy", strategy,
                      "--check-fit", checked_fit["check"], "--output", tmp_path / "a.csv")
    assert done.returncode == 0, done.stderr
    chosen = {r["item"] for r in _read(tmp_path / "a.csv")}
    assert chosen == set(checked_fit["items"]) - flagged   # every candidate, none of the flagged items
    assert f"left out {len(flagged)} item(s) that check-fit" in done.stderr and "--keep-misfits" in done.stderr
    record = json.loads((tmp_path / "a.csv.json").read_text())["check_fit"]
    assert set(record["excluded"]) == flagged and record["kept_misfits"] is False
    assert record["misfits"] == len(flagged) and record["against_ability"] >= len(inverted)
    assert record["items_csv"] == str(checked_fit["check"] / "items.csv") and len(record["matrix_sha256"]) == 64


def test_select_anchors_keep_misfits_and_the_seed_with_check_fit(checked_fit, tmp_path):
    difficulty, n = checked_fit["fit"] / "difficulty.csv", len(checked_fit["items"])
    flagged = {r["item"] for r in _read(checked_fit["check"] / "items.csv") if r["flagged"] == "true"}
    # --keep-misfits: the flagged items are candidates again, and the record says so
    done = run_script("select_anchors.py", difficulty, "--k", n, "--strategy", "information", "--check-fit",
                      checked_fit["check"] / "items.csv", "--keep-misfits", "--output", tmp_path / "b.csv")
    assert done.returncode == 0, done.stderr
    assert {r["item"] for r in _read(tmp_path / "b.csv")} >= flagged and "kept the" in done.stderr
    record = json.loads((tmp_path / "b.csv.json").read_text())["check_fit"]
    assert record["excluded"] == [] and record["kept_misfits"] is True
    # a few anchors: seeded as before, drawn from the candidates only
    runs = [run_script("select_anchors.py", difficulty, "--k", 8, "--strategy", "random", "--seed", 4,
                       "--check-fit", checked_fit["check"], "--output", tmp_path / f"{name}.csv", "--quiet")
            for name in ("c", "d")]
    assert all(r.returncode == 0 and r.stderr == "" for r in runs)
    assert (tmp_path / "c.csv").read_text() == (tmp_path / "d.csv").read_text()
    assert not {r["item"] for r in _read(tmp_path / "c.csv")} & flagged
