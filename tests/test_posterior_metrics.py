"""Tests of per-draw metric intervals (benchmeasure.analyses.posterior_metrics) and scripts/posterior_metrics.py."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from benchmeasure.analyses.posterior_metrics import metric_draws, posterior_intervals, read_posterior_b, summarize_draws
from benchmeasure.base.errors import InputError
from benchmeasure.core import metrics

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "posterior_metrics.py"


def test_numpy_version_agrees_with_stdlib_metrics_draw_by_draw():
    draws = np.random.default_rng(0).normal(size=(50, 37)) ** 3
    got = metric_draws(draws, top_k=5)
    for d, b in enumerate(draws):
        z = metrics.normalize_min_max(list(b))
        assert got["ddm"][d] == pytest.approx(metrics.ddm(z), abs=1e-12)
        assert got["max_gap"][d] == pytest.approx(metrics.max_gap(z), abs=1e-12)
        assert got["top5_gap_sum"][d] == pytest.approx(metrics.top_k_gap_sum(z, 5), abs=1e-12)


def test_top_k_larger_than_gap_count_sums_all_gaps():
    got = metric_draws([[0.0, 1.0, 3.0]], top_k=9)
    assert got["top9_gap_sum"][0] == pytest.approx(1.0)


def test_summary_by_hand():
    s = summarize_draws(np.arange(101, dtype=float), probability=0.9)
    assert (s.mean, s.median, s.low, s.high) == pytest.approx((50, 50, 5, 95))


def test_identical_draws_give_a_point_interval():
    draws = np.tile([0.0, 1.0, 3.0, 4.0], (20, 1))
    iv = posterior_intervals(draws)["max_gap"]
    assert iv.low == iv.high == pytest.approx(0.5)


def test_rejects_degenerate_draws():
    with pytest.raises(InputError, match="draw 1: all difficulties equal"):
        metric_draws([[0.0, 1.0], [2.0, 2.0]])
    with pytest.raises(InputError, match="probability"):
        posterior_intervals([[0.0, 1.0]], probability=1.5)


def _npz(path, draws):
    np.savez(path, b=draws, items=np.array([f"q{i}" for i in range(draws.shape[-1])]))


def _netcdf(path, draws):
    chains, n_draws, items = draws.shape
    posterior = xr.Dataset({"b": (("chain", "draw", "item"), draws)},
                           coords={"chain": range(chains), "draw": range(n_draws),
                                   "item": [f"q{i}" for i in range(items)]})
    xr.DataTree.from_dict({"posterior": posterior}).to_netcdf(path)


def test_reads_netcdf(tmp_path):
    draws = np.random.default_rng(2).normal(size=(2, 5, 4))
    _netcdf(tmp_path / "p.nc", draws)
    items, b = read_posterior_b(tmp_path / "p.nc")
    assert items == ["q0", "q1", "q2", "q3"] and b.shape == (10, 4)
    np.testing.assert_allclose(b, draws.reshape(10, 4))


def test_reads_zarr_store_as_fit_irt_saves_it(tmp_path):
    draws = np.random.default_rng(2).normal(size=(2, 5, 4))
    posterior = xr.Dataset({"b": (("chain", "draw", "item"), draws)},
                           coords={"chain": range(2), "draw": range(5), "item": [f"q{i}" for i in range(4)]})
    with warnings.catch_warnings():   # zarr 3 notes that consolidated metadata is not in its spec
        warnings.simplefilter("ignore")
        xr.DataTree.from_dict({"posterior": posterior}).to_zarr(tmp_path / "posterior.zarr", mode="w")
    items, b = read_posterior_b(tmp_path / "posterior.zarr")
    assert items == ["q0", "q1", "q2", "q3"]
    np.testing.assert_allclose(b, draws.reshape(10, 4))
    out = _run(tmp_path / "posterior.zarr", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["draws"] == 10 and len(json.loads(out.stdout)["input_sha256"]) == 64


def test_reads_npz_and_csv(tmp_path):
    draws = np.random.default_rng(2).normal(size=(2, 5, 4))
    _npz(tmp_path / "p.npz", draws)
    items, b = read_posterior_b(tmp_path / "p.npz")
    assert items == ["q0", "q1", "q2", "q3"] and b.shape == (10, 4)
    np.testing.assert_allclose(b, draws.reshape(10, 4))
    (tmp_path / "d.csv").write_text("a,b\n0,1\n2,5\n")
    items, b = read_posterior_b(tmp_path / "d.csv")
    assert items == ["a", "b"] and b.tolist() == [[0, 1], [2, 5]]


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_cli(tmp_path):
    draws = np.random.default_rng(3).normal(size=(2, 50, 12))
    _npz(tmp_path / "p.npz", draws)
    out = _run(tmp_path / "p.npz", "--json", "--output", tmp_path / "o" / "i.json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["draws"] == 100 and record["items"] == 12
    ddm = record["metrics"]["ddm"]
    own = ddm["per_draw_min_max"]
    assert own["low"] <= own["median"] <= own["high"] and ddm["low"] <= ddm["high"]
    expected = metrics.diagnose(list(draws.reshape(100, 12).mean(axis=0))).ddm
    assert ddm["plugin"] == ddm["at_posterior_mean"] == pytest.approx(expected)
    assert json.loads((tmp_path / "o" / "i.json").read_text()) == record
    text = _run(tmp_path / "p.npz")
    assert text.returncode == 0 and "| max_gap |" in text.stdout


@pytest.mark.parametrize("content, suffix, extra, fragment", [
    ("a,b\n0,1\n2\n", ".csv", [], "line 3: 1 field, the header has 2"),
    ("a,b\n0,x\n", ".csv", [], "line 2, column 'b': 'x' is not a number"),
    ("a,b\n0,1\n", ".csv", ["--top-k", "0"], "--top-k"),
    (None, ".npz", ["--variable", "theta"], "no array 'theta'"),
    ("not netcdf", ".nc", [], "cannot read as NetCDF"),
])
def test_cli_rejects(tmp_path, content, suffix, extra, fragment):
    path = tmp_path / f"p{suffix}"
    if content is None:
        _npz(path, np.zeros((1, 2, 3)))
    else:
        path.write_text(content)
    out = _run(path, "--output", tmp_path / "o.json", *extra)
    assert out.returncode == 2 and not (tmp_path / "o.json").exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], out.stderr
