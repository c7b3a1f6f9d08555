"""The gibbs route's chains: burn-in adaptation of the Newton steps, the chains in threads, the posterior summary,
and when ``--route auto`` prefers the route."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from benchmeasure.irt.routes.gibbs.kernel import sweeps
from benchmeasure.irt.routes.gibbs.sparse import (
    ADAPT_MIN_TUNE,
    ADAPT_SWEEPS,
    BLOCK,
    FLOOR_STEPS,
    NEWTON_STEPS,
    NU,
    STEP_CHOICES,
    SparseData,
)


def adaptation_window(tune: int):
    """(first, end) burn-in sweeps in which the Newton-step choices are tried, or None (too short a burn-in): from
    the first block after a tenth of burn-in, :data:`ADAPT_SWEEPS` sweeps (fewer in a burn-in under 750), ending at
    least a fifth of burn-in before the kept sweeps so the chosen kernel runs in."""
    if tune < ADAPT_MIN_TUNE:
        return None
    first = -(-(tune // 10) // BLOCK) * BLOCK
    length = min(ADAPT_SWEEPS, (tune * 4 // 5 - first) // (BLOCK * len(STEP_CHOICES)) * BLOCK * len(STEP_CHOICES))
    return (first, first + length) if length > 0 else None


def choose_steps(accepted, sweeps_per_choice) -> np.ndarray:
    """Per coordinate, the Newton steps (an index of :data:`STEP_CHOICES`) with the most effective draws per pass
    over its cells, from its acceptances under each choice (``accepted``: (choices, coordinates)). An independence
    MH step with acceptance a has lag-1 autocorrelation about 1 − a, so about a/(2 − a) effective draws per draw;
    a step costs 2 + k passes over the coordinate's cells with k Newton steps. Ties go to fewer steps."""
    a = (np.asarray(accepted, dtype=float) + 1.0) / (np.asarray(sweeps_per_choice, dtype=float)[:, None] + 2.0)
    cost = 2.0 + np.asarray(STEP_CHOICES, dtype=float)[:, None]
    return np.asarray(STEP_CHOICES, dtype=np.int64)[np.argmax(a / (2.0 - a) / cost, axis=0)]


def _step_draws(rng, size: int, n: int, guessed: bool) -> np.ndarray:
    """The random numbers of ``size`` sweeps' MH steps over n coordinates: (t, u, mixture choice) for the first
    step of each, and without a floor that is all (the choice is then u again, never read); with one, as many
    again for each of the :data:`FLOOR_STEPS` − 1 further steps."""
    if not guessed:
        t, u = rng.standard_t(NU, (size, n)), 1.0 - rng.random((size, n))
        return np.stack([t, u, u])
    rows = []
    for _ in range(FLOOR_STEPS):
        rows += [rng.standard_t(NU, (size, n)), 1.0 - rng.random((size, n)), rng.random((size, n))]
    return np.stack(rows)


def run_chains(data: SparseData, *, chains: int, tune: int, draws: int, seed: int, cores: int = 1,
               on_progress=None, n_newton: int = NEWTON_STEPS, dense: bool = True):
    """Blocked Gibbs chains from data-based starts; returns (θ draws (chains, draws, M) float64, b draws
    (chains, draws, N) float32, info dict with acceptance rates, the start and the sampling time). ``dense=False``
    reads complete rows and columns through their cells' indices too (the same draws, slower: for tests)."""
    m, n = data.n_models, data.n_items
    d_i, d_m = data.blocks()
    guessed = bool(np.any(data.i_g != 0.0))
    theta_out = np.empty((chains, draws, m))
    b_out = np.empty((chains, draws, n), dtype=np.float32)
    accepted = np.zeros((chains, 2))
    done = [0]
    lock = threading.Lock()
    total = chains * (tune + draws)
    seeds = np.random.SeedSequence(seed).spawn(chains)

    window = adaptation_window(tune)
    chosen = {"b": np.zeros((chains, len(STEP_CHOICES))), "theta": np.zeros((chains, len(STEP_CHOICES)))}

    def one(chain):
        rng = np.random.default_rng(seeds[chain])
        theta, b = data.start(rng)
        steps_b, steps_t = np.full(n, n_newton, dtype=np.int64), np.full(m, n_newton, dtype=np.int64)
        tried_b = np.zeros((len(STEP_CHOICES), n), dtype=np.int64)
        tried_t = np.zeros((len(STEP_CHOICES), m), dtype=np.int64)
        tried_sweeps = np.zeros(len(STEP_CHOICES))
        kept_b, kept_t = np.zeros(n, dtype=np.int64), np.zeros(m, dtype=np.int64)   # not read
        for phase, length in (("warm-up", tune), ("draws", draws)):
            for start in range(0, length, BLOCK):
                size = min(BLOCK, length - start)
                per_b, per_t, use_b, use_t = kept_b, kept_t, steps_b, steps_t
                if phase == "warm-up" and window is not None and window[0] <= start < window[1]:
                    k = (start - window[0]) // BLOCK % len(STEP_CHOICES)   # the choices in turn, a block each
                    use_b, use_t = np.full(n, STEP_CHOICES[k], dtype=np.int64), np.full(m, STEP_CHOICES[k],
                                                                                          dtype=np.int64)
                    per_b, per_t = tried_b[k], tried_t[k]
                    tried_sweeps[k] += size
                t_b, t_t = _step_draws(rng, size, n, guessed), _step_draws(rng, size, m, guessed)
                z = rng.standard_normal(size)
                record = phase == "draws"
                out_t = theta_out[chain, start:start + size] if record else np.empty((0, m))
                out_b = np.empty((size, n)) if record else np.empty((0, n))
                a_b, a_t = sweeps(theta, b, d_i, d_m, t_b, t_t, z, NU, use_b, use_t, per_b, per_t, out_t, out_b,
                                  record, dense)
                if window is not None and phase == "warm-up" and start < window[1] <= start + size:
                    steps_b = choose_steps(tried_b, tried_sweeps)   # fixed from here on: the draws' kernel
                    steps_t = choose_steps(tried_t, tried_sweeps)
                if record:
                    b_out[chain, start:start + size] = out_b
                    accepted[chain] += (a_b, a_t)
                with lock:
                    done[0] += size
                    if on_progress is not None:
                        on_progress("Gibbs sweeps of all chains (burn-in + kept)", done[0], total)
        for name, steps in (("b", steps_b), ("theta", steps_t)):
            chosen[name][chain] = [np.mean(steps == k) for k in STEP_CHOICES]

    start_time = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, min(cores, chains))) as pool:
        list(pool.map(one, range(chains)))
    elapsed = time.perf_counter() - start_time
    info = {
        "acceptance_b": float(accepted[:, 0].sum() / max(chains * draws * n, 1)),
        "acceptance_theta": float(accepted[:, 1].sum() / max(chains * draws * m, 1)),
        "proposal": f"independence Metropolis-Hastings, Student-t (nu = {NU:g}) at the mode after 0-"
                    f"{STEP_CHOICES[-1]} Newton steps (per coordinate) from a data-based point",
        "newton_steps": ({name: {str(k): float(v) for k, v in zip(STEP_CHOICES, share.mean(axis=0))}
                          for name, share in chosen.items()} if window is not None else
                         {name: {str(n_newton): 1.0} for name in chosen}),
        "newton_steps_chosen": (f"per chain and coordinate, in burn-in sweeps {window[0]}-{window[1]} "
                                f"(each choice {STEP_CHOICES} in turn, {BLOCK} sweeps at a time), the one with "
                                "the most effective draws per pass over the cells; fixed for the kept sweeps"
                                if window is not None else
                                f"{n_newton} for every coordinate (burn-in shorter than {ADAPT_MIN_TUNE} sweeps)"),
        "start": "theta_j = logit((Y_j + 1/2)/(T_j - Y_j + 1/2)), b_i = -logit(same for item i), plus N(0, 1) "
                 "jitter per chain and coordinate",
        "burn_in_sweeps": int(tune),
        "cells": int(data.n_cells),
        "sampling_time_s": elapsed,
    }
    return theta_out, b_out, info


def gibbs_posterior(counts, trials, *, models, items, chains: int, tune: int, draws: int, seed: int, cores: int,
                    guessing=0.0, progress=None):
    """The gibbs route's posterior of a fit: (:class:`~benchmeasure.irt.draws.Draws` of θ and b, per-item stats of
    b, per-model stats of θ, diagnostics), the figures computed as on the other routes
    (:mod:`benchmeasure.irt.diagnostics`)."""
    from benchmeasure.irt.diagnostics import summarize_diagnostics, summarize_draws
    from benchmeasure.irt.draws import Draws

    data = SparseData(counts, trials, guessing)

    def on_progress(phase, done, total):
        if progress is not None:
            progress.update(phase, done, total)

    on_progress("Gibbs sweeps of all chains (burn-in + kept)", 0, chains * (tune + draws))
    theta_draws, b_draws, info = run_chains(data, chains=chains, tune=tune, draws=draws, seed=seed, cores=cores,
                                            on_progress=on_progress)
    summary_start = time.perf_counter()

    def on_chunk(done, total):
        on_progress("summarizing (R-hat, ESS per item)", done, total)

    b_stats = summarize_draws(b_draws, on_chunk=on_chunk)
    theta_stats = summarize_draws(theta_draws)
    idata = Draws({"theta": (("model",), theta_draws), "b": (("item",), b_draws)},
                  {"model": list(models), "item": list(items)})
    diagnostics = summarize_diagnostics(idata, ["theta", "b"], sampling_time_s=info["sampling_time_s"],
                                        stats={"theta": theta_stats, "b": b_stats})
    diagnostics["compile_time_s"] = 0.0
    diagnostics["summary_time_s"] = time.perf_counter() - summary_start
    diagnostics["route"] = "gibbs"
    diagnostics["gibbs"] = {key: value for key, value in info.items() if key != "sampling_time_s"}
    return idata, b_stats, theta_stats, diagnostics


MIN_COLLAPSED_WORK = 20_000  # below this many integrand nodes per gradient the collapsed route is quick anyway


def prefers_gibbs(counts, trials, n_trials: int, guessing=0.0) -> tuple[bool, dict]:
    """Whether ``auto`` should run this route on a matrix with holes, and the figures it decided on.

    One gradient of the collapsed route evaluates every (trials column, column sum) group's integrand on its grid
    (integrals × nodes exponentials); one Gibbs sweep does a few simple passes over the present cells; NUTS takes
    several gradients per draw. Measured on this machine (docs/suites.md, "Choosing the route"), a Gibbs sweep cost
    about one gradient where integrals × nodes ≈ cells; below that the collapsed route stays the default (MMLU-Pro:
    58 integrals × 128 nodes against 347,376 cells), above it (random holes) Gibbs was 3–100 times faster."""
    from benchmeasure.irt.routes.collapsed.holes import CollapsedHolesData

    collapsed = CollapsedHolesData(counts, trials, n_trials, guessing)
    work = collapsed.n_integrals * collapsed.grid.size
    cells = int(np.count_nonzero(np.asarray(trials)))
    return work > max(cells, MIN_COLLAPSED_WORK), {"collapsed_integrals": collapsed.n_integrals,
                                                   "grid_nodes": collapsed.grid.size, "cells": cells}


def distinct_columns(trials, stop: int) -> int:
    """How many distinct columns ``trials`` has, counting stops once more than ``stop`` are found (cheap)."""
    seen = set()
    for column in np.asarray(trials, dtype=np.int64).T:
        seen.add(column.tobytes())
        if len(seen) > stop:
            break
    return len(seen)
