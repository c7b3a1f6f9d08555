"""The synthetic benchmark of simulation mode: items with hidden 1PL difficulties and deliberate gaps.

:func:`make_sim_benchmark` writes, into one folder, everything a BenchFill run reads:
``test.jsonl`` (items whose text carries the hidden tag of :mod:`benchmeasure.serving.sim.world`),
``response_matrix.csv`` (the panel's simulated correct counts, paper Appendix C.3 model),
``world.json`` (the true abilities and the simulated models' settings), ``panel.toml`` (the
panel and rewriter, all reached at ``$BENCHFILL_SIM_URL``) and ``config.toml`` (the run
settings). The calibration table ``calibration.csv`` (``item_id,b_mean,b_sd``) comes from the
same IRT fit that gives the panel's abilities (:func:`calibrate_from_fit`), so a simulated run
starts from estimates, as a real one does. :func:`calibrate_from_truth` writes the true values
instead — a shortcut for fast tests only, labelled as such in the file name of its abilities.
Everything here is synthetic.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from benchmeasure.base.csv_table import read_table
from benchmeasure.core.matrix import ResponseMatrix, write_matrix
from benchmeasure.irt.simulate import gapped_difficulties, simulate_counts
from benchmeasure.serving.sim.world import World, item_text

TRUTH_ABILITIES = "true_ability_TEST_ONLY.csv"
SIM_GAPS = ((-1.6, -0.7), (0.1, 0.9), (1.4, 2.1))


def make_sim_benchmark(folder, seed: int = 0, n_items: int = 40, n_models: int = 12, n_trials: int = 32,
                       client: dict | None = None, search: dict | None = None, truth: bool = False) -> Path:
    """Write the synthetic benchmark and its configs into ``folder``; returns the config path.

    ``truth`` writes calibration and abilities from the ground truth (:func:`calibrate_from_truth`,
    tests only); otherwise run :func:`calibrate_from_fit` before the run.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    b = gapped_difficulties(n_items, seed, gaps=SIM_GAPS)
    theta = np.linspace(-1.5, 2.5, n_models)
    models = [f"sim-m{j + 1:02d}" for j in range(n_models)]
    answers = rng.integers(0, 1000, n_items)
    with open(folder / "test.jsonl", "w", encoding="utf-8") as handle:
        for i in range(n_items):
            handle.write(json.dumps({"item_id": str(i), "question": item_text(float(b[i]), int(answers[i]), f"o{i}"),
                                     "answer": str(int(answers[i]))}) + "\n")
    counts = simulate_counts(theta, b, n_trials, seed + 1)
    write_matrix(ResponseMatrix(models, [str(i) for i in range(n_items)], counts, n_trials),
                 folder / "response_matrix.csv")
    World({m: float(t) for m, t in zip(models, theta)}, seed=seed).save(folder / "world.json")
    with open(folder / "true_difficulty.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["item_id", "b_true"])
        writer.writerows([str(i), f"{v:.6f}"] for i, v in enumerate(b))
    lines = ["# Simulated panel (benchmeasure.serving.sim): every model is served by the local sim server.",
             '[panel]\nname = "sim"\n', "[defaults]", "max_tokens = 256", "supports_n = true",
             'api_key_env = "BENCHFILL_SIM_KEY"\n', f"[rollouts]\ndefault = {n_trials}\n"]
    endpoint = 'base_url_env = "BENCHFILL_SIM_URL"'
    for m in models:
        lines.append(f'[[model]]\nname = "{m}"\ntemperature = 1.0\ntop_p = 0.95\n{endpoint}\n')
    lines.append(f'[rewriter]\nname = "sim-rewriter"\ntemperature = 1.0\n{endpoint}\n')
    (folder / "panel.toml").write_text("\n".join(lines), encoding="utf-8")
    client = {"max_concurrency": 16, "timeout": 20.0, "max_retries": 6, "backoff": 0.05, **(client or {})}
    search = {"seed": seed, **(search or {})}
    config = [
        "# BenchFill settings for the synthetic benchmark of simulation mode.",
        f'panel = "{folder / "panel.toml"}"', f'ability_cache = "{folder / "ability_cache"}"',
        f'abilities = "{folder / TRUTH_ABILITIES}"' if truth else "", "",
        "[benchmark]", 'name = "math_sim"', f'calibration = "{folder / "calibration.csv"}"',
        f'pool = "{folder / "test.jsonl"}"', f'matrix = "{folder / "response_matrix.csv"}"',
        f"matrix_n_trials = {n_trials}", 'grader = "math"', 'answer_format = "an integer"', "",
        "[search]", *[f"{k} = {json.dumps(v)}" for k, v in search.items()], "",
        "[client]", *[f"{k} = {json.dumps(v)}" for k, v in client.items()], ""]
    path = folder / "config.toml"
    path.write_text("\n".join(config), encoding="utf-8")
    if truth:
        calibrate_from_truth(folder)
    return path


def calibrate_from_fit(folder, fit_folder) -> None:
    """``calibration.csv`` from the fit's ``difficulty.csv`` (``item,b_mean,b_sd,…``)."""
    rows = read_table(Path(fit_folder) / "difficulty.csv", required=("b_mean",)).records()
    with open(Path(folder) / "calibration.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["item_id", "b_mean", "b_sd"])
        for row in rows:
            writer.writerow([row.get("item") or row.get("item_id"), row["b_mean"], row.get("b_sd", "0")])


def calibrate_from_truth(folder) -> None:
    """Test shortcut: calibration and abilities from the ground truth (no IRT fit)."""
    folder = Path(folder)
    world = World.load(folder / "world.json")
    rows = read_table(folder / "true_difficulty.csv", required=("item_id", "b_true")).records()
    with open(folder / "calibration.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["item_id", "b_mean", "b_sd"])
        writer.writerows([r["item_id"], r["b_true"], "0"] for r in rows)
    with open(folder / TRUTH_ABILITIES, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", "theta_mean"])
        writer.writerows([m, f"{t:.6f}"] for m, t in world.abilities.items())
