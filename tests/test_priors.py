"""``fit --prior``: the paper's N(0, 1) (default, its record unchanged) and the hierarchical prior (joint route only,
refused elsewhere from the routes' declarations), and ``--prior-sensitivity`` (issue 51, part 2); ``calibrate-items``
and ``score-models --prior hierarchical`` on that fit's hyperparameters, against brute-force quadrature, and their
refusals. Tiny fits."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from benchmeasure.irt.plan import FitSettings, SettingsError, refusal
from benchmeasure.irt.priors import PRIORS
from benchmeasure.irt.routes import ROUTES
from conftest import assert_rejected, run_script

TINY = ("--chains", 2, "--tune", 150, "--draws", 150, "--seed", 3)


@pytest.fixture(scope="module")
def wide_matrix(tmp_path_factory):
    """8 models x 40 items, K = 4, true abilities spread with sd 3 (the N(0, 1) prior pulls them in)."""
    rng = np.random.default_rng(7)
    theta = np.linspace(-4.5, 4.5, 8)                       # sd about 3.1
    b = rng.normal(0.0, 1.5, 40)
    counts = rng.binomial(4, 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :]))))
    path = tmp_path_factory.mktemp("priors") / "matrix.csv"
    lines = ["model," + ",".join(f"q{i}" for i in range(40))]
    lines += [f"m{j}," + ",".join(map(str, row)) for j, row in enumerate(counts)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_priors_are_a_registry_and_refusals_follow_the_routes_declarations():
    assert list(PRIORS)[:2] == ["paper", "hierarchical"]
    assert ROUTES["joint"].priors == ("paper", "hierarchical")
    hier = FitSettings(prior="hierarchical")
    for name in ("collapsed", "gibbs"):
        assert ROUTES[name].priors == ("paper",)
        why = refusal(ROUTES[name], hier, holes=False, anchors=False)
        assert why is not None and "joint" in why.render({"prior": "--prior", "route": "--route"})
    assert refusal(ROUTES["joint"], hier, holes=True, anchors=False) is None
    with pytest.raises(SettingsError, match="prior"):
        FitSettings(prior="flat")


@pytest.fixture(scope="module")
def hierarchical_fit(wide_matrix, tmp_path_factory):
    """The one hierarchical fit of this module (with --prior-sensitivity): its folder and the command's result. The
    anchored commands' tests below read its diagnostics.json, so they need no fit of their own."""
    out = tmp_path_factory.mktemp("hier_fit") / "hier"
    result = run_script("fit_irt.py", wide_matrix, "--n-trials", 4, "--output-dir", out, "--prior", "hierarchical",
                        "--prior-sensitivity", "--calibrate-budget", 2, *TINY)
    return out, result


def test_hierarchical_fit_learns_a_wide_ability_scale_and_records_it(hierarchical_fit):
    out, result = hierarchical_fit
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "diagnostics.json").read_text())
    assert record["settings"]["prior"] == "hierarchical" and record["settings"]["route"] == "joint"   # auto chose it
    hyper = record["prior"]["hyperparameters"]
    assert set(hyper) == {"sigma_theta", "mu_b", "sigma_b"}
    assert record["prior"]["density"] == "compiled"   # nutpie on the compiled density, not the PyMC graph
    assert hyper["sigma_theta"]["mean"] > 2.0, hyper          # the paper's prior would hold it at 1
    assert hyper["sigma_theta"]["r_hat"] < 1.05
    theta = np.loadtxt(out / "ability.csv", delimiter=",", skiprows=1, usecols=1)
    assert theta.std() > 2.0
    # the sensitivity line: the paper's prior refitted with the same settings, on the route auto chooses for it
    line = [x for x in result.stderr.splitlines() if x.startswith("prior sensitivity (hierarchical vs paper)")]
    assert len(line) == 1 and "DDM" in line[0] and "Max Gap" in line[0] and "widest gap" in line[0], result.stderr
    sens = record["prior_sensitivity"]
    assert sens["other"] == "paper" and set(sens["differences"]) == {"ddm", "max_gap", "widest_gap"}
    assert all(isinstance(v["flagged"], bool) for v in sens["differences"].values())


def test_other_routes_refuse_the_hierarchical_prior_in_one_line(wide_matrix, tmp_path):
    for extra in (("--route", "collapsed"), ("--route", "gibbs"), ("--method", "map")):
        out = tmp_path / extra[1]
        line = assert_rejected(run_script("fit_irt.py", wide_matrix, "--n-trials", 4, "--output-dir", out,
                                          "--prior", "hierarchical", *extra), "--prior hierarchical", "joint")
        assert "\n" not in line and not out.exists()


def test_default_fit_record_has_no_prior(wide_matrix, tmp_path):
    out = tmp_path / "paper"
    result = run_script("fit_irt.py", wide_matrix, "--n-trials", 4, "--output-dir", out, "--route", "collapsed",
                        "--no-calibrate", "--quiet", *TINY)
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "diagnostics.json").read_text())
    assert "prior" not in record and "prior" not in record["settings"] and "prior_sensitivity" not in record


@pytest.mark.parametrize("parametrization", ["rotated", "direct"])
def test_hierarchical_graph_is_the_written_model(parametrization):
    """The model's log density (no transform Jacobians) at a point equals the hierarchical model written out: its
    coordinates are an exact change of variables (orthogonal reflections and a shift, Jacobian 1)."""
    from scipy import stats

    from benchmeasure.irt.model import build_model

    rng = np.random.default_rng(1)
    counts = rng.binomial(3, 0.5, size=(4, 6))
    model = build_model(counts, 3, parametrization=parametrization, kernel="pytensor", prior="hierarchical")
    point = {"sigma_theta_log__": np.log(2.5), "sigma_b_log__": np.log(1.7), "b_minus_theta": 0.4,
             "theta_centred": rng.normal(0, 2.5, 4), "b_centred": rng.normal(0, 1.7, 6)}
    logp = model.compile_logp(jacobian=False)(point)
    import pytensor

    outs = model.replace_rvs_by_values([model["theta"], model["b"], model["mu_b"]])
    fn = pytensor.function(model.value_vars, outs, on_unused_input="ignore", mode="FAST_COMPILE")
    theta, b, mu_b = fn(*[point[v.name] for v in model.value_vars])
    assert np.isclose(b.mean() - theta.mean(), 0.4)
    eta = theta[:, None] - b[None, :]
    loglik = (counts * eta - 3 * np.logaddexp(0.0, eta)).sum()
    written = (stats.norm.logpdf(theta, 0, 2.5).sum() + stats.norm.logpdf(b, mu_b, 1.7).sum()
               + stats.halfnorm.logpdf([2.5, 1.7], scale=3).sum() + stats.norm.logpdf(mu_b, 0, 3) + loglik)
    assert np.isclose(logp, written, rtol=1e-9), (logp, written)


def _read_csv(path):
    with open(path, encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _brute_force(counts, fixed, k, mean, sd, side):
    """Posterior mean and sd of one parameter against fixed opposing ones, Normal(mean, sd) prior, on a fine grid."""
    x = np.linspace(mean - 12 * sd - 12, mean + 12 * sd + 12, 60001)
    eta = (fixed[None, :] - x[:, None]) if side == "item" else (x[:, None] - fixed[None, :])
    logp = (counts[None, :] * eta - k * np.logaddexp(0.0, eta)).sum(axis=1) - 0.5 * ((x - mean) / sd) ** 2
    w = np.exp(logp - logp.max())
    w /= w.sum()
    m = float((w * x).sum())
    return m, float(np.sqrt((w * (x - m) ** 2).sum()))


def test_anchored_commands_use_the_hierarchical_fits_hyperparameters(hierarchical_fit, tmp_path):
    out, result = hierarchical_fit
    assert result.returncode == 0, result.stderr
    hyper = {k: v["mean"] for k, v in json.loads((out / "diagnostics.json").read_text())["prior"]["hyperparameters"]
             .items()}
    abilities = {r["model"]: float(r["theta_mean"]) for r in _read_csv(out / "ability.csv")}
    models = list(abilities)
    new_items = np.array([[0, 1, 4] if j < 4 else [0, 3, 4] for j in range(len(models))])   # nobody, some, everybody
    items_csv = tmp_path / "new_items.csv"
    items_csv.write_text("model,n0,n1,n2\n" + "".join(f"{m},{','.join(map(str, row))}\n"
                                                     for m, row in zip(models, new_items)))
    runs = {}
    for name, extra in (("default", ()), ("paper", ("--prior", "paper")), ("hier", ("--prior", "hierarchical"))):
        target = tmp_path / f"cal_{name}.csv"
        done = run_script("calibrate_items.py", items_csv, "--abilities", out / "ability.csv", "--n-trials", 4,
                          "--output", target, *extra)
        assert done.returncode == 0, done.stderr
        runs[name] = target
    assert runs["default"].read_bytes() == runs["paper"].read_bytes()        # the default is the paper's prior
    record = json.loads((tmp_path / "cal_hier.csv.json").read_text())["settings"]
    assert record["prior"] == "hierarchical" and json.loads((tmp_path / "cal_paper.csv.json").read_text())[
        "settings"]["prior"] == "paper"
    used = record["prior_hyperparameters"]
    assert (used["mean"], used["sd"]) == (hyper["mu_b"], hyper["sigma_b"])
    assert used["from"] == str(out / "diagnostics.json") and set(used["hyperparameters"]) == {"mu_b", "sigma_b"}
    theta = np.array([abilities[m] for m in models])
    for row, counts in zip(_read_csv(runs["hier"]), new_items.T):
        mean, sd = _brute_force(counts, theta, 4, hyper["mu_b"], hyper["sigma_b"], "item")
        assert float(row["b_mean"]) == pytest.approx(mean, abs=2e-5) and float(row["b_sd"]) == pytest.approx(sd, 2e-4)

    b = {r["item"]: float(r["b_mean"]) for r in _read_csv(out / "difficulty.csv")}
    answers = np.array([[4] * len(b), [i % 5 for i in range(len(b))]])          # one solves everything
    models_csv = tmp_path / "new_models.csv"
    models_csv.write_text("model," + ",".join(b) + "\n" + "".join(f"x{j},{','.join(map(str, row))}\n"
                                                                 for j, row in enumerate(np.minimum(answers, 4))))
    scores = {}
    for name, extra in (("paper", ()), ("hier", ("--prior", "hierarchical"))):
        done = run_script("score_models.py", models_csv, "--difficulty", out / "difficulty.csv", "--n-trials", 4,
                          "--output", tmp_path / f"score_{name}.csv", *extra)
        assert done.returncode == 0, done.stderr
        scores[name] = _read_csv(tmp_path / f"score_{name}.csv")
    settings = json.loads((tmp_path / "score_hier.csv.json").read_text())["settings"]
    assert settings["prior"] == "hierarchical" and settings["prior_hyperparameters"]["sd"] == hyper["sigma_theta"]
    for row, counts in zip(scores["hier"], np.minimum(answers, 4)):
        mean, sd = _brute_force(counts, np.array(list(b.values())), 4, 0.0, hyper["sigma_theta"], "model")
        assert float(row["theta_mean"]) == pytest.approx(mean, abs=2e-5) and float(row["theta_sd"]) == pytest.approx(
            sd, 2e-4)
    # the model that solved everything: the learned sigma_theta (> 2) lets it sit further out than N(0, 1) allows
    assert float(scores["hier"][0]["theta_mean"]) > float(scores["paper"][0]["theta_mean"]) + 0.5


def test_anchored_commands_refuse_a_hierarchical_prior_without_its_fit(hierarchical_fit, tmp_path):
    out, _ = hierarchical_fit
    ability, difficulty = (out / "ability.csv").read_text(), (out / "difficulty.csv").read_text()
    record = json.loads((out / "diagnostics.json").read_text())
    no_sigma_b = json.loads(json.dumps(record))
    del no_sigma_b["prior"]["hyperparameters"]["sigma_b"]
    cases = {"missing": None, "paper": {"settings": {"route": "collapsed", "seed": 1}},
             "garbage": "{not json", "no_sigma_b": no_sigma_b}
    expected = {"missing": "not found", "paper": "records a fit under the paper prior",
                "garbage": "not a readable fit record", "no_sigma_b": "no finite posterior mean of sigma_b"}
    new = tmp_path / "new.csv"
    new.write_text("model,n0\n" + "".join(f"m{j},{j % 5}\n" for j in range(8)))
    for case, content in cases.items():
        folder = tmp_path / case
        folder.mkdir()
        (folder / "ability.csv").write_text(ability)
        (folder / "difficulty.csv").write_text(difficulty)
        if content is not None:
            (folder / "diagnostics.json").write_text(content if isinstance(content, str) else json.dumps(content))
        target = tmp_path / f"{case}_out.csv"
        line = assert_rejected(run_script("calibrate_items.py", new, "--abilities", folder / "ability.csv",
                                          "--n-trials", 4, "--output", target, "--prior", "hierarchical"),
                               "--prior hierarchical", expected[case])
        assert not target.exists() and not (tmp_path / f"{case}_out.csv.json").exists(), line
        if case in ("missing", "paper"):   # sigma_theta, for new models, from the same record
            assert_rejected(run_script("score_models.py", new, "--difficulty", folder / "difficulty.csv",
                                       "--n-trials", 4, "--output", target, "--prior", "hierarchical"),
                            "--prior hierarchical", "sigma_theta" if case == "paper" else expected[case])
            assert not target.exists()
    assert_rejected(run_script("score_models.py", new, "--difficulty", out / "difficulty.csv", "--n-trials", 4,
                               "--output", tmp_path / "x.csv", "--prior", "flat"), "--prior", "flat")
