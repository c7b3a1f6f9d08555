#!/usr/bin/env bash
# Set up the test environments (idempotent) and run the linter and the whole test suite.
#
#   bash scripts/run_tests.sh [PYTEST_ARGS...]      e.g.  bash scripts/run_tests.sh -m "not slow"
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup_env.sh dev          # .venv-irt: IRT stack + pytest, hypothesis, ruff, openai

echo "==> ruff"
.venv-irt/bin/ruff check .

echo "==> pytest"
exec .venv-irt/bin/python -m pytest "$@"
