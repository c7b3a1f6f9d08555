"""The compiled log densities (irt/compiled.py) are the PyMC reference models, and their kernel cache holds.

* density and gradient differences at random points equal the PyMC model's (the reference implementation of the
  paper's model), for the collapsed route (complete, holes, guessing) and the joint route (rotated, direct,
  anchored, guessing), and under the hierarchical prior (complete, holes with guessing, anchors, direct; its gradient
  against finite differences too);
* a fit in a fresh process with a warm cache gives the same draws as one that compiled the kernels;
* two fits started at once against an empty cache both succeed and agree;
* a damaged cache entry is recompiled with a warning, never fatal; a new package version gets its own folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymc")

ROOT = Path(__file__).resolve().parents[1]


def _counts(m, n, k, seed, holes=False):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=m), rng.normal(size=n)
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    trials = np.full((m, n), k)
    if holes:
        trials = np.where(rng.random((m, n)) < 0.3, 0, rng.integers(1, k + 1, size=(m, n)))
    return rng.binomial(trials, p), trials


def _pymc_density(model, jacobian=False):
    """point -> (log density, gradient) of the PyMC model: one function for both, on PyTensor's Python linker
    (FAST_COMPILE). The graph is evaluated at a handful of points, where the default C linker spent minutes
    compiling C modules on a fresh machine (117 CPU-s for this file's 12 cases with an empty PyTensor
    compile folder, against 11 with FAST_COMPILE, on the shared 2-core machine, 2026-12-07)."""
    both = model.compile_fn([model.logp(jacobian=jacobian), model.dlogp(jacobian=jacobian)], inputs=model.value_vars,
                            on_unused_input="ignore", mode="FAST_COMPILE")

    def density(point):
        value, grad = both(point)
        return float(value), np.asarray(grad)

    return density


def _pymc_logp(model, name):
    """(log density, gradient) of the PyMC model in its one free variable ``name``."""
    density = _pymc_density(model)
    return lambda z: density({name: z})


def _agree(density, reference, dim, seed):
    """Differences of log density between random points, and gradients, agree with the reference's."""
    rng = np.random.default_rng(seed)
    points = rng.normal(scale=0.8, size=(4, dim))
    ours = [density.logp(z) for z in points]
    theirs = [reference(z) for z in points]
    for (v, g), (rv, rg) in zip(ours, theirs):
        np.testing.assert_allclose(v - ours[0][0], rv - theirs[0][0], rtol=1e-9, atol=1e-7)
        np.testing.assert_allclose(g, rg, rtol=1e-8, atol=1e-7)


@pytest.mark.parametrize("kind", ["collapsed", "joint"])
def test_the_trace_is_read_into_the_tree_nutpies_own_conversion_gives(kind):
    """``trace_draws`` (the fit's reading of nutpie's raw trace) gives the draws, dims, coordinates and sampler
    statistics that nutpie's own ArviZ conversion gives for the same seed (but the text ``divergence_message``),
    and its DataTree is the same tree."""
    from benchmeasure.irt.nutpie_run import import_nutpie, nutpie_model, trace_draws
    from benchmeasure.irt.routes.collapsed.density import collapsed_density
    from benchmeasure.irt.routes.collapsed.marginal import collapsed_data
    from benchmeasure.irt.routes.joint.density import joint_density

    counts, _ = _counts(6, 40, 3, seed=4)
    models, items = [f"m{j}" for j in range(6)], [f"q{i}" for i in range(40)]
    density = (collapsed_density(collapsed_data(counts, 3), models) if kind == "collapsed" else
               joint_density(counts, 3, 0.0, models=models, items=items))
    nutpie = import_nutpie()
    compiled = nutpie_model(density)
    options = dict(chains=2, tune=60, draws=40, seed=7, cores=1, progress_bar=False, save_warmup=False)
    theirs = nutpie.sample(compiled, **options)
    draws = trace_draws(nutpie.sample(compiled, return_raw_trace=True, **options), compiled, 40)
    ours = draws.tree()
    for group in ("posterior", "sample_stats"):
        a, b = theirs[group].to_dataset(), ours[group].to_dataset()
        assert set(b.data_vars) == set(a.data_vars) - {"divergence_message"}, group
        for name in b.data_vars:
            assert a[name].dims == b[name].dims and a[name].dtype == b[name].dtype, name
            np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    for dim in ("model", "item"):
        if dim in ours["posterior"].dims:
            assert list(ours["posterior"][dim].values) == list(theirs["posterior"][dim].values)
    with pytest.raises(RuntimeError, match="draws"):
        trace_draws(nutpie.sample(compiled, return_raw_trace=True, **options), compiled, 41)


@pytest.mark.parametrize("case", ["complete", "guessing", "holes", "holes+guessing"])
def test_collapsed_density_is_the_pymc_collapsed_model(case):
    from benchmeasure.irt.model import build_collapsed_model
    from benchmeasure.irt.routes.collapsed.density import collapsed_density
    from benchmeasure.irt.routes.collapsed.marginal import collapsed_data

    holes = case.startswith("holes")
    y, t = _counts(7, 40, 3, seed=3, holes=holes)
    g = np.linspace(0.0, 0.25, 40) if "guessing" in case else 0.0
    trials = t if holes else None
    model, _ = build_collapsed_model(y, 3, g, trials=trials)
    density = collapsed_density(collapsed_data(y, 3, g, trials), list(range(7)))
    _agree(density, _pymc_logp(model, "theta_z"), 7, seed=1)
    z = np.random.default_rng(2).normal(size=7)
    theta = model.compile_fn(model["theta"], inputs=[model["theta_z"]], on_unused_input="ignore",
                             mode="FAST_COMPILE")({"theta_z": z})
    np.testing.assert_allclose(density.expand(z), theta, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", ["rotated", "direct", "anchored", "guessing"])
def test_joint_density_is_the_pymc_joint_model(case):
    from benchmeasure.irt.model import build_model
    from benchmeasure.irt.routes.joint.density import joint_density

    y, _ = _counts(6, 25, 4, seed=5)
    g = np.linspace(0.05, 0.3, 25) if case == "guessing" else 0.0
    fixed = None
    if case == "anchored":
        fixed = np.full(25, np.nan)
        fixed[[0, 4, 9]] = (-0.5, 0.2, 1.1)
    parametrization = "direct" if case == "direct" else "rotated"
    model = build_model(y, 4, g, parametrization=parametrization, fixed_b=fixed)
    density = joint_density(y, 4, g, models=list(range(6)), items=list(range(25)), parametrization=parametrization,
                            fixed_b=fixed)
    if parametrization == "direct":
        names = ["theta", "b"]
        both = _pymc_density(model)

        def reference(z):
            return both({"theta": z[:6], "b": z[6:]})
    else:
        names = ["z"]
        reference = _pymc_logp(model, "z")
    assert [v.name for v in model.free_RVs] == names
    _agree(density, reference, density.n_dim, seed=4)
    z = np.random.default_rng(6).normal(size=density.n_dim)
    stored = ["theta", "b"] + (["b_free"] if fixed is not None else [])
    if parametrization == "rotated":
        fn = model.compile_fn([model[name] for name in stored], inputs=[model["z"]], on_unused_input="ignore",
                              mode="FAST_COMPILE")
        expected = np.concatenate(fn({"z": z}))
        np.testing.assert_allclose(density.expand(z), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", ["complete", "holes+guessing", "anchored+holes", "direct"])
def test_hierarchical_density_is_the_pymc_hierarchical_model(case):
    """The hierarchical prior's compiled density (irt/routes/joint/hierarchical.py) in the PyMC graph's own
    coordinates: log density differences and gradients equal the graph's (with the log-Jacobian of σ = e^s, as
    nutpie samples both) at random points, the gradient equals central finite differences, and the stored draws
    (θ, b, b_free, σ_θ, μ_b, σ_b) are the graph's deterministics. Holes come with K per cell (1 to 4)."""
    import pytensor

    from benchmeasure.irt.model import build_model
    from benchmeasure.irt.routes.joint.hierarchical import hierarchical_density

    holes = "holes" in case
    y, t = _counts(6, 25, 4, seed=5, holes=holes)
    g = np.linspace(0.05, 0.3, 25) if "guessing" in case else 0.0
    fixed = None
    if case.startswith("anchored"):
        fixed = np.full(25, np.nan)
        fixed[[0, 4, 9]] = (-0.5, 0.2, 1.1)
    parametrization = "direct" if case == "direct" else "rotated"
    model = build_model(y, t.astype(float) if holes else 4, g, parametrization=parametrization, fixed_b=fixed,
                        prior="hierarchical", kernel="pytensor" if holes else "fused")
    density = hierarchical_density(y, 4, g, models=list(range(6)), items=list(range(25)),
                                   trials=t if holes else None, parametrization=parametrization, fixed_b=fixed)
    names = [v.name for v in model.value_vars]
    assert names == ["sigma_theta_log__", "sigma_b_log__", "theta_centred", "b_centred", "b_minus_theta"]
    n_free = 25 - (0 if fixed is None else 3)
    assert density.n_dim == 6 + n_free + 3

    def point(z):   # the same coordinates, in the graph's order
        return {names[0]: z[0], names[1]: z[1], names[2]: z[2:8], names[3]: z[8:8 + n_free], names[4]: z[-1]}

    both = _pymc_density(model, jacobian=True)
    _agree(density, lambda z: both(point(z)), density.n_dim, seed=4)
    z = np.random.default_rng(6).normal(scale=0.8, size=density.n_dim)
    _, grad = density.logp(z)
    step = 1e-5
    numeric = [(density.logp(z + step * e)[0] - density.logp(z - step * e)[0]) / (2 * step)
               for e in np.eye(density.n_dim)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-5)
    stored = ["theta", "b"] + (["b_free"] if fixed is not None else []) + ["sigma_theta", "mu_b", "sigma_b"]
    assert [name for name, _ in density.variables] == stored
    fn = pytensor.function(model.value_vars, model.replace_rvs_by_values([model[name] for name in stored]),
                           on_unused_input="ignore", mode="FAST_COMPILE")
    expected = np.concatenate([np.atleast_1d(a) for a in fn(*point(z).values())])
    np.testing.assert_allclose(density.expand(z), expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# the kernel cache, through the command line in fresh processes


def _fit(tmp_path, matrix, out, cache, extra_env=None, background=False, extra=()):
    env = {**os.environ, "BENCHMEASURE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("NUMBA_CACHE_DIR", None)
    env.update(extra_env or {})
    argv = [sys.executable, str(ROOT / "scripts" / "fit_irt.py"), str(matrix), "--n-trials", "2", "--output-dir",
            str(out), "--seed", "7", "--chains", "2", "--tune", "200", "--draws", "200", "--save-posterior", *extra]
    if background:
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)


def _draws(folder):
    from benchmeasure.analyses.posterior_metrics import read_posterior_b

    return read_posterior_b(folder / "posterior.zarr", "theta")[1], read_posterior_b(folder / "posterior.zarr")[1]


@pytest.fixture(scope="module")
def small_matrix(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cache_matrix")
    y, _ = _counts(6, 30, 2, seed=9)
    lines = ["model," + ",".join(f"q{i}" for i in range(30))]
    lines += [f"m{j}," + ",".join(str(v) for v in row) for j, row in enumerate(y)]
    path = folder / "response_matrix.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def warm_fit(tmp_path_factory, small_matrix):
    """A fit whose kernels come from this checkout's own cache (compiled there once, before the tests, by
    scripts/run_tests.sh; compiled here if cold): (the cache's kernel folder, the fit folder)."""
    from benchmeasure.base import kernel_cache

    out = tmp_path_factory.mktemp("warm_fit") / "fit"
    done = _fit(out.parent, small_matrix, out, kernel_cache.cache_root())
    assert done.returncode == 0, done.stderr
    return kernel_cache.kernel_dir(), out


@pytest.mark.slow
def test_two_fits_at_once_on_an_empty_cache_both_succeed_and_agree_with_a_warm_one(tmp_path, small_matrix, warm_fit):
    """Two processes compile the same kernels into a cache without them at once (the gibbs route's: about 20 s to
    compile, so the two compilations overlap; the mechanism, Numba's write-then-rename, is the same for every
    route and kernel); both succeed with the same draws, and a later process loads what they wrote. The other
    kernels of a fit (summaries, the fit check) come from a copy of this checkout's warm cache: compiling them
    twice more would test nothing new."""
    import shutil

    folder, _ = warm_fit
    cache = tmp_path / "cache"
    shutil.copytree(folder, cache / "kernels" / folder.name)
    for gibbs_entries in (cache / "kernels" / folder.name).glob("gibbs_*"):
        shutil.rmtree(gibbs_entries)
    assert not any(cache.rglob("kernel.sweeps-*.nbi"))   # the route's kernels are not there to load
    gibbs = {"extra": ["--route", "gibbs", "--no-calibrate"]}
    procs = [_fit(tmp_path, small_matrix, tmp_path / f"fit{k}", cache, background=True, **gibbs) for k in range(2)]
    results = [(*p.communicate(timeout=900), p.returncode) for p in procs]
    for _out, err, code in results:
        assert code == 0 and "Traceback" not in err and "could not be used" not in err, err
    kernels = list((cache / "kernels").iterdir())
    assert len(kernels) == 1 and any(kernels[0].rglob("kernel.sweeps-*.nbi"))
    entries = sorted(p.name for p in kernels[0].rglob("*.nb[ic]"))
    warm = _fit(tmp_path, small_matrix, tmp_path / "warm", cache, **gibbs)
    assert warm.returncode == 0 and "could not be used" not in warm.stderr, warm.stderr
    assert sorted(p.name for p in kernels[0].rglob("*.nb[ic]")) == entries   # loaded, nothing compiled again
    first = _draws(tmp_path / "fit0")
    for other in (_draws(tmp_path / "fit1"), _draws(tmp_path / "warm")):
        for a, b in zip(first, other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_a_damaged_cache_entry_is_recompiled_not_fatal(tmp_path, small_matrix, warm_fit):
    import shutil

    folder, reference = warm_fit
    cache = tmp_path / "cache"
    shutil.copytree(folder, cache / "kernels" / folder.name)
    # garble the index and truncate the data of the kernels every fit loads after sampling (quick to recompile;
    # the sampler's own entries are left, so the test does not pay for their compilation again)
    entries = [p for stem in ("draw_summary", "quadrature") for p in (cache / "kernels").rglob(f"{stem}.*.nb[ic]")]
    assert entries
    for k, path in enumerate(entries):
        path.write_bytes(b"\x80\x04garbage" if path.suffix == ".nbi" else path.read_bytes()[: 7 + k % 5])
    again = _fit(tmp_path, small_matrix, tmp_path / "again", cache)
    assert again.returncode == 0, again.stderr
    assert "kernel cache entry could not be used" in again.stderr and "Traceback" not in again.stderr
    assert "once for this package version" not in again.stderr   # the sampler's entries were loaded, not rebuilt
    for a, b in zip(_draws(reference), _draws(tmp_path / "again")):
        np.testing.assert_array_equal(a, b)
    timing = json.loads((tmp_path / "again" / "diagnostics.json").read_text())["timing"]
    assert timing["compile_time_s"] is not None
    third = _fit(tmp_path, small_matrix, tmp_path / "third", cache)   # the rebuilt entries load cleanly
    assert third.returncode == 0 and "could not be used" not in third.stderr


def test_each_package_version_has_its_own_kernel_folder(tmp_path, monkeypatch):
    from benchmeasure.base import kernel_cache

    monkeypatch.setenv("BENCHMEASURE_CACHE_DIR", str(tmp_path))
    here = kernel_cache.kernel_dir()
    monkeypatch.setattr(kernel_cache, "__version__", "99.0.0")
    there = kernel_cache.kernel_dir()
    assert here != there and here.parent == there.parent == tmp_path / "kernels"
    assert there.name.startswith("99.0.0-py")


def test_an_edit_to_any_kernel_source_gives_a_new_kernel_folder(tmp_path):
    """Numba checks only a kernel's own file: the folder's digest covers every kernel module, so an edit to a file
    that another file's kernel calls (the suite's likelihood calls the holes route's) is never loaded stale."""
    import shutil
    from pathlib import Path

    from benchmeasure.base import kernel_cache

    package = Path(kernel_cache.__file__).resolve().parents[1]
    copy = tmp_path / "benchmeasure"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = kernel_cache.source_digest(copy)
    assert before == kernel_cache.source_digest(package) and len(before) == 12
    (copy / "commands" / "fit_irt.py").write_text("# not a kernel module\n")   # no numba: same folder
    assert kernel_cache.source_digest(copy) == before
    holes = copy / "irt" / "routes" / "collapsed" / "holes.py"
    holes.write_text(holes.read_text() + "\n# an edit\n")
    assert kernel_cache.source_digest(copy) != before


def test_the_after_sampling_warm_up_knows_each_kind_and_refuses_others(tmp_path):
    """The child that compiles a cold fit's after-NUTS kernels (irt/warm.py): the kind follows the matrix and
    the floor; a warm cache starts no child; a wrong kind is a usage error (exit 2), not a traceback."""
    import subprocess
    import sys

    from benchmeasure.irt import warm
    from benchmeasure.irt.diagnostics import summarize_draws

    assert warm.kind_of(None, 0.0) == "plain" and warm.kind_of(None, [0.0, 0.25]) == "guessing"
    assert warm.kind_of(np.ones((2, 2)), 0.0) == "holes"
    assert warm.kind_of(np.ones((2, 2)), 0.2) == "holes-guessing"
    summarize_draws(np.zeros((2, 4, 1), dtype=np.float32) + np.arange(4)[None, :, None])   # this cache: warm
    assert warm.start("plain") is None
    bad = subprocess.run([sys.executable, "-m", "benchmeasure.irt.warm", "joint"], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage:" in bad.stderr and "Traceback" not in bad.stderr
