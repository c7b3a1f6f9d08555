"""The fit folder's chunked passes (issue 19, item 5) give the same figures as one pass over every draw."""

from __future__ import annotations

import numpy as np
import xarray as xr

from benchmeasure.irt.diagnostics import ess_tail, summarize_draws
from benchmeasure.irt.fit_folder import save_posterior_zarr
from benchmeasure.irt.ties import pool_moments


def test_tail_ess_in_chunks_equals_one_pass():
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.normal(size=(3, 60, 11)), axis=1).astype(np.float32)  # autocorrelated, float32 as stored
    x[:, :, 4] = 1.0  # constant
    whole = ess_tail(x, chunk=1024)
    seen = []
    parts = ess_tail(x, chunk=3, on_chunk=lambda done, total: seen.append((done, total)))
    np.testing.assert_allclose(parts, whole, rtol=1e-12, equal_nan=True)
    assert seen[-1] == (11, 11) and len(seen) == 4


def test_pooled_ties_from_item_moments_equal_pooling_the_draws():
    rng = np.random.default_rng(1)
    draws = (rng.normal(size=(50, 9)) * rng.uniform(0.1, 3, 9) + rng.normal(0, 5, 9)).astype(np.float32)
    labels = np.array([0, 1, 0, 2, 1, 0, 3, 3, 2])
    own = summarize_draws(draws.reshape(2, 25, 9))   # the fit's per-item figures
    mean, sd = pool_moments(labels, own["mean"], own["sd"], 50)
    for group in range(4):
        pooled = draws[:, labels == group].astype(float).ravel()
        np.testing.assert_allclose(mean[labels == group], pooled.mean(), rtol=1e-10)
        np.testing.assert_allclose(sd[labels == group], pooled.std(ddof=1), rtol=1e-10)


def test_posterior_zarr_is_chunked_and_reads_back(tmp_path):
    rng = np.random.default_rng(2)
    b = rng.normal(size=(2, 5, 2500)).astype(np.float32)
    posterior = xr.Dataset({"b": (("chain", "draw", "item"), b), "theta": (("chain", "draw", "model"),
                                                                          rng.normal(size=(2, 5, 3)))},
                           coords={"item": [f"i{i}" for i in range(2500)]})
    stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((2, 5), bool))})
    save_posterior_zarr(xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats}), tmp_path / "p.zarr")
    back = xr.open_datatree(tmp_path / "p.zarr", engine="zarr")["posterior"]
    assert back["b"].encoding["chunks"] == (2, 5, 1024) and back["b"].dtype == np.float32
    np.testing.assert_array_equal(back["b"].values, b)
    assert list(back["item"].values[:2]) == ["i0", "i1"]
