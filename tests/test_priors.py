"""``fit --prior``: the paper's N(0, 1) (default, its record unchanged) and the hierarchical prior (joint route only,
refused elsewhere from the routes' declarations), and ``--prior-sensitivity`` (issue 51, part 2). Tiny fits."""

from __future__ import annotations

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


def test_hierarchical_fit_learns_a_wide_ability_scale_and_records_it(wide_matrix, tmp_path):
    out = tmp_path / "hier"
    result = run_script("fit_irt.py", wide_matrix, "--n-trials", 4, "--output-dir", out, "--prior", "hierarchical",
                        "--prior-sensitivity", "--calibrate-budget", 2, *TINY)
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "diagnostics.json").read_text())
    assert record["settings"]["prior"] == "hierarchical" and record["settings"]["route"] == "joint"   # auto chose it
    hyper = record["prior"]["hyperparameters"]
    assert set(hyper) == {"sigma_theta", "mu_b", "sigma_b"}
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
