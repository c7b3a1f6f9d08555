"""Fit the verifier panel's abilities once from a response matrix and cache them (for online calibration).

Runs ``python -m benchmeasure fit`` in the IRT environment (``.venv-irt`` or $BENCHMEASURE_IRT_PYTHON) as a
subprocess and prints the cached ``ability.csv`` path. A second call on the same matrix reuses the cache.
"""

from __future__ import annotations

import sys

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.options import GUESSING, N_TRIALS, SEED, add_allow_missing
from benchmeasure.base.progress import show_progress
from benchmeasure.benchfill.abilities import fit_abilities

EXAMPLES = """examples:
  benchmeasure fit-ability data/matrix/aime24_response_matrix.csv --n-trials 32
  benchmeasure fit-ability matrix.csv --n-trials 4 --guessing 0.25 --cache /tmp/abilities
"""


def main(argv=None) -> int:
    parser = command_parser(None, __doc__.splitlines()[0], EXAMPLES)
    parser.add_argument("matrix", help="response matrix CSV (model,<item>,…; correct counts)")
    parser.add_argument("--n-trials", type=N_TRIALS, required=True, help="trials per model-item pair")
    parser.add_argument("--guessing", type=GUESSING, default=0.0, help="lower asymptote g (default 0)")
    parser.add_argument("--cache", help="cache folder (default: <results root>/cache/abilities, the one BenchFill "
                                         "runs use; results root: $BENCHFILL_RESULTS, else propose/results)")
    parser.add_argument("--seed", type=SEED, default=0)
    add_allow_missing(parser, "accept absent cells (blank) and K per cell (MATRIX.trials.csv): the fit's masked "
                      "likelihood (docs/suites.md)")
    args = parser.parse_args(argv)
    if args.n_trials < 1:
        fail(f"--n-trials must be a positive integer, got {args.n_trials}")
    if not 0.0 <= args.guessing < 1.0:
        fail(f"--guessing must be in [0, 1), got {args.guessing}")
    show_progress("benchmeasure.benchfill", sys.stderr)
    if args.cache is None:
        from benchmeasure.benchfill.config import results_root

        args.cache = results_root() / "cache" / "abilities"
    _, folder = fit_abilities(args.matrix, args.n_trials, args.cache, args.guessing, args.seed,
                              allow_missing=args.allow_missing)
    print(folder / "ability.csv")
    return 0

