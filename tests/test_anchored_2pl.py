"""score-models against a 2PL fit's items (issue 51 part 3, the py-irt #56 request; docs/anchored.md): abilities of
new models recovered in a simulated 2PL world with known items, the quadrature against the model written out, a
1PL table unchanged, slopes of 1 giving the 1PL, and draws of (b, a) integrated over — through the real CLI."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from conftest import run_script

N_ITEMS, ANCHORS, MODELS, K = 300, 40, 100, 1


def _read(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _matrix(path, models, items, counts):
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", *items])
        writer.writerows([model, *map(int, row)] for model, row in zip(models, counts))
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A 2PL benchmark of 300 known items (b ~ N(0, 1), a ~ LogNormal(0, 0.5), the 2pl route's priors) and 100 new
    models, θ ~ N(0, 1) (the prior the scores assume, so the intervals' coverage is their nominal one), each answering
    40 random anchors once; the 2PL table (b_mean, a_mean) and the same table without slopes."""
    root = tmp_path_factory.mktemp("anchored_2pl")
    rng = np.random.default_rng(56)
    b, a = rng.normal(0, 1, N_ITEMS), np.exp(rng.normal(0, 0.5, N_ITEMS))
    theta = rng.normal(0, 1, MODELS)
    items = [f"q{i:03d}" for i in range(N_ITEMS)]
    p = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
    full = rng.binomial(K, p)
    with open(root / "difficulty.csv", "w", encoding="utf-8") as handle:
        handle.write("item,b_mean,b_sd,a_mean,a_sd\n"
                     + "".join(f"{i},{v:.10f},0.1,{s:.10f},0.1\n" for i, v, s in zip(items, b, a)))
    with open(root / "ones.csv", "w", encoding="utf-8") as handle:   # the same b with every slope 1
        handle.write("item,b_mean,a_mean\n" + "".join(f"{i},{v:.10f},1\n" for i, v in zip(items, b)))
    with open(root / "plain.csv", "w", encoding="utf-8") as handle:  # ... and with no slope column: a 1PL table
        handle.write("item,b_mean\n" + "".join(f"{i},{v:.10f}\n" for i, v in zip(items, b)))
    # each model's own anchors: one file per model (a matrix has no empty cells)
    files = []
    for j in range(MODELS):
        chosen = np.sort(rng.choice(N_ITEMS, ANCHORS, replace=False))
        files.append(_matrix(root / f"m{j}.csv", [f"m{j}"], [items[i] for i in chosen], full[j:j + 1, chosen]))
    return {"root": root, "b": b, "a": a, "theta": theta, "items": items, "files": files, "p": p}


def test_scores_recover_known_abilities_in_a_2pl_world(world):
    root = world["root"]
    done = run_script("score_models.py", *world["files"], "--difficulty", root / "difficulty.csv", "--n-trials", K,
                      "--output", root / "scores.csv")
    assert done.returncode == 0, done.stderr
    assert "of the 2pl (slopes" in done.stderr
    rows = _read(root / "scores.csv")
    assert [r["model"] for r in rows] == [f"m{j}" for j in range(MODELS)]
    mean = np.array([float(r["theta_mean"]) for r in rows])
    sd = np.array([float(r["theta_sd"]) for r in rows])
    low, high = (np.array([float(r[c]) for r in rows]) for c in ("theta_hdi_low", "theta_hdi_high"))
    theta = world["theta"]
    covered = float(np.mean((low <= theta) & (theta <= high)))
    # 94 % HDIs of 100 independent models: 94 expected, binomial sd 2.4
    assert 0.86 <= covered <= 1.0, covered
    z = (theta - mean) / sd
    assert 0.8 < z.std() < 1.2 and abs(z.mean()) < 0.3, (z.mean(), z.std())
    # the predicted accuracy on all 300 items (expected over the trials) within its 94 % interval
    truth = world["p"].mean(axis=1)
    acc_low, acc_high = (np.array([float(r[c]) for r in rows]) for c in ("accuracy_predicted_low",
                                                                         "accuracy_predicted_high"))
    assert np.mean((acc_low <= truth) & (truth <= acc_high)) >= 0.88
    record = json.loads((root / "scores.csv.json").read_text())
    assert record["settings"]["item_model"] == "2pl" and record["settings"]["model"].startswith("2PL")
    # scoring the same answers with the slopes ignored (a 1PL table of the same b) is the wrong model: worse
    done = run_script("score_models.py", *world["files"], "--difficulty", root / "plain.csv", "--n-trials", K,
                      "--output", root / "plain_scores.csv", "--quiet")
    assert done.returncode == 0, done.stderr
    plain = np.array([float(r["theta_mean"]) for r in _read(root / "plain_scores.csv")])
    assert np.sqrt(np.mean((mean - theta) ** 2)) < np.sqrt(np.mean((plain - theta) ** 2))


def test_unit_slopes_give_the_1pl_and_a_1pl_table_keeps_the_1pl_path(world, tmp_path):
    from benchmeasure.irt.anchored import score_model

    root, files = world["root"], world["files"][:6]
    outs = {}
    for name, table, extra in (("ones", "ones.csv", ()), ("plain", "plain.csv", ()),
                               ("plain_1pl", "plain.csv", ("--model", "1pl"))):
        done = run_script("score_models.py", *files, "--difficulty", root / table, "--n-trials", K, "--guessing", 0.2,
                          *extra, "--output", tmp_path / f"{name}.csv", "--quiet")
        assert done.returncode == 0, done.stderr
        outs[name] = _read(tmp_path / f"{name}.csv")
    # --model 1pl on a 1PL table is the default's path, byte for byte
    assert (tmp_path / "plain.csv").read_bytes() == (tmp_path / "plain_1pl.csv").read_bytes()
    record = json.loads((tmp_path / "plain.csv.json").read_text())
    assert "item_model" not in record["settings"] and record["settings"]["model"].startswith("1PL")
    for one, plain in zip(outs["ones"], outs["plain"]):
        for column in ("theta_mean", "theta_sd", "accuracy_predicted_full", "accuracy_predicted_low",
                       "accuracy_predicted_high"):
            assert float(one[column]) == pytest.approx(float(plain[column]), rel=2e-5, abs=2e-6), column
        for column in ("theta_hdi_low", "theta_hdi_high"):   # interpolated between the nodes of two other grids
            assert float(one[column]) == pytest.approx(float(plain[column]), abs=5e-4), column
    # the 1PL table's numbers are the library's 1PL (anchored.score_model), as before the 2PL existed
    position = {item: k for k, item in enumerate(world["items"])}
    for plain, path in zip(outs["plain"], files):
        rows = list(csv.reader(open(path, encoding="utf-8")))
        answered = [position[item] for item in rows[0][1:]]
        expected = score_model(np.array(rows[1][1:], dtype=float), answered, world["b"], K,
                               np.full(N_ITEMS, 0.2))
        assert plain["theta_mean"] == f"{expected.theta_mean:.6g}"
        assert plain["accuracy_predicted_high"] == f"{expected.accuracy_predicted_high:.6g}"


@pytest.mark.parametrize("g", [0.0, 0.25])
def test_slope_posterior_matches_the_model_written_out(g):
    from scipy import integrate
    from scipy.special import expit, log_expit

    from benchmeasure.irt.anchored_slopes import ability_posterior

    rng = np.random.default_rng(3)
    b, a = rng.normal(0, 1.5, 25), np.exp(rng.normal(0, 0.7, 25))
    trials = rng.integers(1, 5, 25)
    y = rng.binomial(trials, g + (1 - g) / (1 + np.exp(-a * (0.8 - b))))

    def log_density(t):
        eta = a * (t - b)
        log_right = np.log(g + (1 - g) * expit(eta))
        log_wrong = np.log1p(-g) + log_expit(-eta)
        return -0.5 * ((t - 0.3) / 1.7) ** 2 + np.sum(y * log_right + (trials - y) * log_wrong)

    top = max(log_density(t) for t in np.linspace(-20, 20, 4001))

    def density(t):
        return np.exp(log_density(t) - top)

    z = integrate.quad(density, -20, 20, limit=400)[0]
    mean = integrate.quad(lambda t: t * density(t), -20, 20, limit=400)[0] / z
    sd = np.sqrt(integrate.quad(lambda t: (t - mean) ** 2 * density(t), -20, 20, limit=400)[0] / z)
    posterior = ability_posterior(y, trials, b, a, g, prior=(0.3, 1.7))
    assert posterior.mean == pytest.approx(mean, abs=1e-7)
    assert posterior.sd == pytest.approx(sd, rel=1e-6)


def test_difficulty_and_slope_draws_are_integrated_over(world, tmp_path):
    """Draws of (b, a) in an .npz: θ's posterior is the mixture over the paired draws, so it widens."""
    from benchmeasure.irt.anchored import GridPosterior
    from benchmeasure.irt.anchored_slopes import ability_posterior

    rng = np.random.default_rng(8)
    root, path = world["root"], world["files"][0]
    b_draws = world["b"][None, :] + rng.normal(0, 0.3, (40, N_ITEMS))
    a_draws = world["a"][None, :] * np.exp(rng.normal(0, 0.2, (40, N_ITEMS)))
    np.savez(tmp_path / "post.npz", b=b_draws, a=a_draws, items=np.array(world["items"]))
    out = {}
    for name, extra in (("plug", ()), ("draws", ("--difficulty-draws", tmp_path / "post.npz"))):
        done = run_script("score_models.py", path, "--difficulty", root / "difficulty.csv", "--n-trials", K,
                          *extra, "--output", tmp_path / f"{name}.csv", "--quiet")
        assert done.returncode == 0, done.stderr
        out[name] = _read(tmp_path / f"{name}.csv")[0]
    assert float(out["draws"]["theta_sd"]) > float(out["plug"]["theta_sd"])
    rows = list(csv.reader(open(path, encoding="utf-8")))
    idx = [world["items"].index(item) for item in rows[0][1:]]
    y = np.array(rows[1][1:], dtype=float)
    nodes = np.linspace(-8, 8, 8001)
    mixture = GridPosterior.mixture([ability_posterior(y, K, bd[idx], ad[idx], nodes=nodes)
                                     for bd, ad in zip(b_draws, a_draws)])
    assert float(out["draws"]["theta_mean"]) == pytest.approx(mixture.mean, abs=2e-5)
    assert float(out["draws"]["theta_sd"]) == pytest.approx(mixture.sd, rel=2e-5)
    assert json.loads((tmp_path / "draws.csv.json").read_text())["settings"]["difficulty_draws_used"] == 40


def test_calibrate_recovers_known_items_against_2pl_abilities(tmp_path):
    """New items calibrated against the known abilities of a 2PL fit (its diagnostics.json says so): b within its
    94 % HDI at about that rate, a within its posterior sd's reach; the output is a 2PL difficulty file."""
    rng = np.random.default_rng(51)
    models, items, k = 40, 30, 2
    theta = rng.normal(0, 1.2, models)
    b, a = rng.normal(0, 1, items), np.exp(rng.normal(0, 0.5, items))
    y = rng.binomial(k, 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b))))
    names, ids = [f"m{j}" for j in range(models)], [f"new{i}" for i in range(items)]
    (tmp_path / "fit").mkdir()
    (tmp_path / "fit" / "ability.csv").write_text("model,theta_mean\n" + "".join(
        f"{m},{t:.10f}\n" for m, t in zip(names, theta)))
    (tmp_path / "fit" / "diagnostics.json").write_text(json.dumps({"model": "2pl", "settings": {"model": "2pl"}}))
    _matrix(tmp_path / "new.csv", names, ids, y)
    done = run_script("calibrate_items.py", tmp_path / "new.csv", "--abilities", tmp_path / "fit" / "ability.csv",
                      "--n-trials", k, "--output", tmp_path / "new_difficulty.csv")
    assert done.returncode == 0, done.stderr
    assert "under the 2pl" in done.stderr
    rows = _read(tmp_path / "new_difficulty.csv")
    assert list(rows[0]) == ["item", "b_mean", "b_sd", "b_hdi_low", "b_hdi_high", "z", "a_mean", "a_sd"]
    low, high = (np.array([float(r[c]) for r in rows]) for c in ("b_hdi_low", "b_hdi_high"))
    covered = np.mean((low <= b) & (b <= high))
    assert covered >= 0.83, covered                 # 94 % nominal over 30 items (binomial sd 0.043)
    z = (a - np.array([float(r["a_mean"]) for r in rows])) / np.array([float(r["a_sd"]) for r in rows])
    # a's posterior is skewed (log a is the Normal one), so its upper tail reaches further than mean + 3 sd
    assert np.all(np.abs(z) < 4.5) and np.median(np.abs(z)) < 1.0 and 0.6 < z.std() < 1.5, z
    record = json.loads((tmp_path / "new_difficulty.csv.json").read_text())
    assert record["settings"]["item_model"] == "2pl" and record["columns"][-2:] == ["a_mean", "a_sd"]


@pytest.mark.parametrize("g", [0.0, 0.2])
def test_item_posterior_matches_a_brute_force_grid(g):
    from scipy.special import expit, log_expit

    from benchmeasure.irt.anchored_slopes import item_posterior

    rng = np.random.default_rng(4)
    theta = rng.normal(0, 1.3, 30)
    trials = rng.integers(1, 4, 30)
    y = rng.binomial(trials, g + (1 - g) * expit(2.5 * (theta - 0.4)))
    posterior, a_mean, a_sd = item_posterior(y, trials, theta, g)
    bb, uu = np.linspace(-6, 6, 1201), np.linspace(-3, 3, 601)
    log_w = -0.5 * bb[:, None] ** 2 - 0.5 * (uu[None, :] / 0.5) ** 2
    for j in range(theta.size):
        eta = np.exp(uu)[None, :] * (theta[j] - bb[:, None])
        log_w = log_w + y[j] * np.log(g + (1 - g) * expit(eta)) + (trials[j] - y[j]) * (np.log1p(-g) + log_expit(-eta))
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    b_mean = w.sum(axis=1) @ bb
    slopes = np.exp(uu)
    true_a = w.sum(axis=0) @ slopes
    assert posterior.mean == pytest.approx(b_mean, abs=1e-7)
    assert posterior.sd == pytest.approx(np.sqrt(w.sum(axis=1) @ (bb - b_mean) ** 2), rel=1e-6)
    assert a_mean == pytest.approx(true_a, rel=1e-6)
    assert a_sd == pytest.approx(np.sqrt(w.sum(axis=0) @ (slopes - true_a) ** 2), rel=1e-5)


def test_a_huge_slope_is_scored_as_the_step_it_tends_to_without_warnings(world, tmp_path):
    """A slope of 1e308 overflows a(θ − b): P is then the step function's 0 or 1, and stderr stays clean."""
    lines = (world["root"] / "difficulty.csv").read_text(encoding="utf-8").splitlines()
    item, b_mean, b_sd, _, a_sd = lines[1].split(",")
    lines[1] = ",".join([item, b_mean, b_sd, "1e308", a_sd])
    (tmp_path / "huge.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = run_script("score_models.py", world["files"][0], "--difficulty", tmp_path / "huge.csv", "--n-trials", K,
                      "--output", tmp_path / "scores.csv")
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and "nan" not in (tmp_path / "scores.csv").read_text(encoding="utf-8")
