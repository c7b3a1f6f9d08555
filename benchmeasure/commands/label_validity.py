"""Check fitted difficulties against difficulty labels people assigned (and abilities against accuracy)."""

from __future__ import annotations

import json

from benchmeasure.analyses.ability_accuracy import ability_accuracy, as_dicts, read_abilities
from benchmeasure.analyses.label_validity import LEVEL, N_BOOT, label_validity, read_labels
from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.files import plan_outputs, provenance, sha256_file, write_json
from benchmeasure.base.options import N_TRIALS, SEED, add_alias, add_hdi_prob, integer
from benchmeasure.core.difficulty_file import read_difficulty_column
from benchmeasure.core.matrix import read_matrix

EXAMPLES = """\
example (the bundled ChemBench data, after the demo's fit):
  benchmeasure label-validity demo_output/chembench/difficulty.csv \\
      --labels data/chembench/difficulty_dict.json --easier easy --harder hard \\
      --abilities demo_output/chembench/ability.csv \\
      --matrix demo_output/chembench/response_matrix.csv --n-trials 1 \\
      --output demo_output/chembench/validity.json

labels file: a JSON object {label: [item IDs]} (numbers are matched as their decimal text), or a
CSV with columns item (or item_id) and label. Each item has at most one label; every labelled
item must be in DIFFICULTY_CSV. Items of DIFFICULTY_CSV without a label are counted, not used.

AUC = P(b of a random --harder item > b of a random --easier item), ties counted one half:
0.5 means the fitted difficulties ignore the labels, 1 that they order every pair as the labels
do. The interval is a percentile bootstrap over items, resampled within each label (--seed).
With --abilities and --matrix, each model's fitted ability (θ mean ± sd) is printed beside its
raw accuracy, highest ability first, with their Spearman correlation.
"""


def parse_args(argv):
    parser = command_parser("label_validity.py",
                            "How well fitted difficulties order items that people labelled easier and harder "
                            "(AUC with a bootstrap interval), and each model's ability beside its raw accuracy.",
                            EXAMPLES)
    parser.add_argument("difficulty", metavar="DIFFICULTY_CSV", help="benchmeasure fit's difficulty.csv (column item)")
    parser.add_argument("--labels", required=True, metavar="FILE", help="JSON {label: [IDs]} or CSV item,label")
    parser.add_argument("--easier", default="easy", metavar="LABEL",
                        help="the label expected to mark easier items (default: easy)")
    parser.add_argument("--harder", default="hard", metavar="LABEL",
                        help="the label expected to mark harder items (default: hard)")
    parser.add_argument("--column", default="b_mean", help="difficulty column (default: b_mean)")
    parser.add_argument("--n-boot", type=integer(100, 1_000_000), default=N_BOOT, metavar="B",
                        help=f"bootstrap resamples (default {N_BOOT})")
    mass = add_hdi_prob(parser, f"interval mass of the bootstrap intervals (default {LEVEL})", LEVEL)
    add_alias(parser, "--level", mass)  # the old name, for a release
    parser.add_argument("--seed", type=SEED, default=0, help="bootstrap seed (default 0)")
    table = parser.add_argument_group("ability beside accuracy (optional)")
    table.add_argument("--abilities", metavar="ABILITY_CSV", help="benchmeasure fit's ability.csv")
    table.add_argument("--matrix", metavar="MATRIX_CSV", help="the count matrix the fit was run on")
    table.add_argument("--n-trials", type=N_TRIALS, metavar="K", help="trials per cell of MATRIX_CSV")
    parser.add_argument("--json", action="store_true", help="print the JSON record instead of the report")
    parser.add_argument("--output", metavar="JSON", help="also write the JSON record here")
    args = parser.parse_args(argv)
    given = [args.abilities is not None, args.matrix is not None, args.n_trials is not None]
    if any(given) and not all(given):
        fail("--abilities, --matrix and --n-trials go together (the ability table needs all three)")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    inputs = [args.difficulty, args.labels, args.abilities, args.matrix]
    plan_outputs(files=[args.output], inputs=inputs)
    difficulty = read_difficulty_column(args.difficulty, args.column)
    labels = read_labels(args.labels)
    result = label_validity(difficulty, labels, args.easier, args.harder, args.n_boot, args.seed, args.hdi_prob,
                            labels_path=args.labels)
    record = {"labels": result.as_dict()}
    rows = rho = None
    if args.abilities is not None:
        rows, rho = ability_accuracy(read_abilities(args.abilities), read_matrix(args.matrix, args.n_trials),
                                     args.abilities, args.matrix)
        record["models"] = as_dicts(rows)
        record["spearman_theta_accuracy"] = rho
    record.update({
        "settings": {"easier": args.easier, "harder": args.harder, "column": args.column, "n_boot": args.n_boot,
                     "level": args.hdi_prob, "seed": args.seed, "n_trials": args.n_trials},
        "inputs": [{"path": path, "sha256": sha256_file(path)} for path in inputs if path is not None],
        **provenance(["numpy"]),
    })
    if args.output:
        write_json(args.output, record)
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
        return 0
    print(report(result, args.labels, rows, rho))
    return 0


def report(result, labels_path: str, rows, rho) -> str:
    counts = ", ".join(f"{label} {n}" for label, n in result.label_counts.items())
    e, h = result.easier, result.harder
    pct = f"{100 * result.level:g}%"
    lines = [f"Labels ({labels_path}): {counts}; {result.unlabelled_items} fitted items without a label",
             f"{'label':<14} {'items':>6} {'mean b':>8} {'median b':>9}",
             *(f"{g.label:<14} {g.items:>6} {g.mean_b:8.3f} {g.median_b:9.3f}" for g in (e, h)),
             f"AUC P(b[{h.label}] > b[{e.label}]): {result.auc:.3f}   {pct} bootstrap interval "
             f"[{result.auc_low:.3f}, {result.auc_high:.3f}] ({result.n_boot} resamples within each label, "
             f"seed {result.seed})"]
    if rows is not None:
        width = max(len("model"), *(len(row.model) for row in rows))
        lines += ["", f"{'model':<{width}}  {'ability θ (mean ± sd)':>21}  {'accuracy':>8}  {'correct':>11}"]
        lines += [f"{row.model:<{width}}  {row.theta_mean:+13.3f} ± {row.theta_sd:.3f}  {row.accuracy:8.3f}  "
                  f"{f'{row.correct}/{row.responses}':>11}" for row in rows]
        lines.append("Spearman(θ, accuracy): " + (f"{rho:.3f}" if rho is not None else
                                                   "undefined (all abilities or all accuracies equal)"))
    return "\n".join(lines)
