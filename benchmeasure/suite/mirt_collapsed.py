"""The multidimensional 1PL of :mod:`.mirt` with every difficulty integrated out (the collapsed route).

Given benchmark k's column of abilities θ_{·,k}, the items of benchmark k are independent a posteriori with
b_i ~ Normal(0, 1), and each b_i meets the abilities only through θ_{·,k}. So

    p(θ, μ, s, R | Y) ∝ p(θ | μ, s, R) p(μ) p(s) p(R) · Π_k Π_{i in k} ∫ N(b; 0, 1) Π_j Bin(Y_ji | T_ji, σ(θ_jk − b)) db

exactly, and each benchmark's factor is the collapsed 1PL marginal of its own sub-matrix (counts, trials)
evaluated at θ_{·,k} (:class:`benchmeasure.irt.routes.collapsed.holes.CollapsedHolesData`: the masked likelihood,
items grouped by trials column and column sum, quadrature with a grid sized for the sub-matrix; the
quadrature error is about 1e−17 relative and checked per fit). NUTS runs on (θ, s, R) only (μ integrated out
as well by default, :func:`benchmeasure.suite.prior.theta_marginal_logp`) — M·B + B + B(B − 1)/2 coordinates (511
on MMLU-Pro's 29 models × 14 categories) whatever the number of items — with the
log density and its gradient from the Numba kernels: by default one cached compiled function for the whole
density (:mod:`.density`), else this PyMC model with one PyTensor Op for all benchmarks' likelihoods
(:mod:`.mirt_kernel`). Then every b_i is drawn exactly from its
one-dimensional conditional given each θ draw (:func:`benchmeasure.irt.routes.collapsed.difficulties.draw_difficulties`,
per benchmark). The joint draws (θ, μ, s, R, b) are draws of the same posterior as the joint model's
(:func:`.mirt.build_model`); only b's prior must be the paper's Normal(0, 1), which the quadrature weights carry.
"""

from __future__ import annotations

import numpy as np

from benchmeasure.base.errors import fail


def benchmark_data(counts, trials, item_benchmark, n_benchmarks: int) -> list:
    """One :class:`~benchmeasure.irt.routes.collapsed.holes.CollapsedHolesData` per benchmark (its sub-matrix), and the
    column indices of its items: ``[(columns, data), ...]``."""
    from benchmeasure.irt.routes.collapsed.holes import CollapsedHolesData

    counts = np.asarray(counts, dtype=np.int64)
    trials = np.asarray(trials, dtype=np.int64)
    which = np.asarray(item_benchmark, dtype=np.int64)
    out = []
    for k in range(n_benchmarks):
        columns = np.flatnonzero(which == k)
        if columns.size == 0:
            fail(f"benchmark {k} has no items")
        sub_trials = trials[:, columns]
        out.append((columns, CollapsedHolesData(counts[:, columns], sub_trials, max(1, int(sub_trials.max())))))
    return out


def build_collapsed_model(counts, trials, item_benchmark, n_benchmarks: int, *, eta: float = 2.0,
                          scales: str = "half-normal", scale_sd: float = 1.0, parametrization: str = "centred",
                          mean_sd: float | None = None, data: list | None = None, means: str = "sampled",
                          basis=None):
    """The PyMC model of (θ, μ, s, R) with every b integrated out; returns ``(model, data)``, ``data`` as
    :func:`benchmark_data` gives it (built here when None)."""
    import pymc as pm

    from benchmeasure.suite.mirt_kernel import suite_marginal
    from benchmeasure.suite.prior import MEAN_SD, ability_prior, coordinates_basis

    if data is None:
        data = benchmark_data(counts, trials, item_benchmark, n_benchmarks)
    n_models = np.asarray(counts).shape[0]
    with pm.Model() as model:
        theta = ability_prior(n_models, n_benchmarks, eta=eta, scales=scales, scale_sd=scale_sd,
                              parametrization=parametrization, mean_sd=MEAN_SD if mean_sd is None else mean_sd,
                              means=means, basis=coordinates_basis(counts, trials, item_benchmark, n_benchmarks,
                                                                   parametrization, basis))
        pm.Potential("b_integrated", suite_marginal([sub for _, sub in data], theta))
    return model, data


def draw_all_difficulties(data: list, theta_draws: np.ndarray, n_items: int, seed: int, on_block=None):
    """Exact draws of every b given each θ draw: θ (chains, draws, M, B) → float32 (chains, draws, N)."""
    from benchmeasure.irt.routes.collapsed.difficulties import draw_difficulties

    chains, draws = theta_draws.shape[:2]
    out = np.empty((chains, draws, n_items), dtype=np.float32)
    seeds = np.random.SeedSequence(seed).generate_state(len(data))
    total = chains * draws * len(data)
    for k, (columns, sub) in enumerate(data):
        done = chains * draws * k

        def step(stop, _total, done=done):
            if on_block is not None:
                on_block(done + stop, total)

        column = np.ascontiguousarray(theta_draws[:, :, :, k])
        out[:, :, columns] = draw_difficulties(sub, column, int(seeds[k]), on_block=step)
    return out


def quadrature_checks(data: list, theta_draws: np.ndarray, seed: int) -> dict:
    """The collapsed route's per-fit quadrature check (the grid against half its step), worst over benchmarks."""
    from benchmeasure.irt.routes.collapsed.difficulties import quadrature_check

    worst: dict = {}
    for k, (_, sub) in enumerate(data):
        check = quadrature_check(sub, np.ascontiguousarray(theta_draws[:, :, :, k]), seed=seed + k)
        for key in ("max_abs_log_marginal_error", "max_abs_gradient_error", "max_edge_weight"):
            worst[key] = max(worst.get(key, 0.0), float(check[key]))
        worst["integrals"] = worst.get("integrals", 0) + int(check["integrals"])
        worst["grid_nodes_max"] = max(worst.get("grid_nodes_max", 0), int(check["grid_nodes"]))
    return worst
