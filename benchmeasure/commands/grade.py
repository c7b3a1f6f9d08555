"""Grade one response by hand with the pipeline's own graders; prints 1 or 0 on its last line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.base.options import SECONDS, add_entry_options, entry_options
from benchmeasure.grading import KINDS, grade

EPILOG = r"""examples:
  benchmeasure grade --kind math --reference '\frac{1}{2}' --response 'so \boxed{0.5}'
  benchmeasure grade --kind choice --reference '(B)' --response 'The answer is (B).'
  benchmeasure grade --kind ifeval --response '"hi"' \
      --instructions '[{"id": "startend:quotation"}]'
  benchmeasure grade --kind math --reference 12 --response-file reply.txt --explain
  benchmeasure grade --kind math --reference 0.333 --response '\boxed{1/3}' --option abs_tol=0.001
"""


def parse_args(argv):
    parser = command_parser(None,
                            "Judge one model response against a reference answer with the same graders "
                            "the verifier uses (benchmeasure.grading). The last line printed is 1 (correct) or 0.",
                            EPILOG)
    parser.add_argument("--kind", required=True, choices=KINDS, help="grader to use")
    parser.add_argument("--reference", default=None, help="reference answer (math, choice)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--response", help="the model's response text")
    source.add_argument("--response-file", type=Path, help="read the response from this file ('-': stdin)")
    parser.add_argument("--instructions", help="ifeval: instruction JSON (list of {id, kwargs})")
    parser.add_argument("--choices", help="choice: JSON list of the option texts, in order A, B, ...")
    parser.add_argument("--loose", action="store_true", help="ifeval: loose criterion")
    parser.add_argument("--timeout", type=SECONDS, default=5.0, help="math: seconds per symbolic comparison")
    parser.add_argument("--explain", action="store_true", help="math: print the extracted answer first")
    add_entry_options(parser, "grader")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.response is not None:
        response = args.response
    elif str(args.response_file) == "-":
        response = sys.stdin.read()
    else:
        try:
            response = args.response_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"--response-file {args.response_file}: cannot read ({exc})")
    grader = KINDS[args.kind]  # the registry entry says which flags feed which options
    chosen = entry_options(args.option, grader.options, f"the {args.kind} grader")
    options: dict = {}
    if grader.reference_option is not None:
        given = getattr(args, grader.reference_option, None) is not None or grader.reference_option in chosen
        if not given and args.reference is None:
            fail(f"--kind {args.kind} needs --{grader.reference_option} JSON (or the JSON as --reference)")
    elif args.reference is None:
        fail(f"--kind {args.kind} needs --reference")
    flags = {"instructions": args.instructions, "loose": args.loose, "timeout_s": args.timeout}
    options.update({name: value for name, value in flags.items() if name in grader.options})
    if args.explain and grader.extract is not None:
        print(f"extracted: {grader.extract(response)!r}")
    if "choices" in grader.options and args.choices is not None:
        try:
            choices = json.loads(args.choices)
        except ValueError as exc:
            fail(f"--choices is not valid JSON ({exc})")
        if not isinstance(choices, list) or not choices:
            fail("--choices must be a non-empty JSON list of option texts")
        options["choices"] = choices
    options.update(chosen)   # --option KEY=VALUE: any option the grader declares (over the flags above)
    verdict = grade(args.kind, response, args.reference or "", **options)
    print(1 if verdict else 0)
    return 0

