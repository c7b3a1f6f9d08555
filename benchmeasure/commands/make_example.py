"""Regenerate the bundled SIMULATED example benchmark (data/example_simulated/).

The paper's released response data is not available to this repository, so the example is
synthetic: 12 models × 60 items × 8 trials drawn from a 1PL model with known difficulties
that leave three deliberately wide gaps. Seeded, so the files are reproducible byte for byte.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from benchmeasure.base.errors import command_parser
from benchmeasure.base.files import all_or_nothing, atomic_write, plan_outputs, write_json
from benchmeasure.base.options import N_TRIALS, SEED, add_alias, integer
from benchmeasure.base.resources import project_path
from benchmeasure.irt.simulate import gapped_difficulties, simulate_trials

EXAMPLES = """\
examples:
  benchmeasure make-example --output-dir my_example                 # the bundled example (seed 2026), elsewhere
  benchmeasure make-example --output-dir small --models 8 --items 30 --n-trials 4 --seed 1
"""


def main(argv=None) -> int:
    parser = command_parser("make_example.py", __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("--output-dir", default=str(project_path("data/example_simulated")))
    parser.add_argument("--models", type=integer(2, 100_000), default=12)
    parser.add_argument("--items", type=integer(2, 1_000_000), default=60)
    trials = parser.add_argument("--n-trials", type=N_TRIALS, default=8, metavar="K",
                                 help="trials per model-item pair (default 8)")
    add_alias(parser, "--trials", trials)  # the old name, for a release
    parser.add_argument("--seed", type=SEED, default=2026)
    args = parser.parse_args(argv)
    out = Path(args.output_dir)
    plan_outputs(folders=[(out, ("responses.csv", "true_difficulty.csv", "true_ability.csv", "settings.json"))])
    b = gapped_difficulties(args.items, seed=args.seed)
    theta = np.sort(np.random.default_rng(args.seed + 1).normal(0.0, 1.0, args.models))
    outcomes = simulate_trials(theta, b, args.n_trials, seed=args.seed + 2)
    with all_or_nothing():
        _write(out, args, b, theta, outcomes)
    print(f"wrote the simulated example to {out}", file=sys.stderr)
    return 0


def _write(out: Path, args, b, theta, outcomes) -> None:
    models = [f"sim-model-{j:02d}" for j in range(args.models)]
    items = [f"q{i:03d}" for i in range(args.items)]
    with atomic_write(out / "responses.csv") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", "item_id", "trial", "correct"])
        for j, model in enumerate(models):
            for i, item in enumerate(items):
                for t in range(args.n_trials):
                    writer.writerow([model, item, t, int(outcomes[j, i, t])])
    with atomic_write(out / "true_difficulty.csv") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["item_id", "b_true"])
        writer.writerows([item, f"{value:.6f}"] for item, value in zip(items, b))
    with atomic_write(out / "true_ability.csv") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["model", "theta_true"])
        writer.writerows([model, f"{value:.6f}"] for model, value in zip(models, theta))
    settings = {"simulated": True, "generator": "scripts/make_example.py", "seed": args.seed,
                "models": args.models, "items": args.items, "trials": args.n_trials, "guessing": 0.0,
                "difficulty_range": [-2.5, 2.5], "empty_difficulty_intervals": [[-0.9, -0.3], [0.6, 1.3], [1.8, 2.2]],
                "ability_prior": "Normal(0, 1), sorted"}
    write_json(out / "settings.json", settings)

