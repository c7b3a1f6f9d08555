#!/usr/bin/env bash
# Roll out candidate items on the verifier panel and write model,item_id,trial,correct rows, the
# raw responses and the run's record (OUTPUT.json); --backend direct (default, openai SDK) or
# lmms-eval. Args go to verifier/run_rollout.py:
#
#   bash verifier/run_rollout.sh --candidates items.jsonl --panel verifier/panels/paper.toml \
#       --benchmark aime24 --output rows.csv [--backend lmms-eval]
#
# Endpoints and keys come from env.local (sourced when present). BENCHFILL_PYTHON picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f env.local ]; then set -a; . ./env.local; set +a; fi
PY=${BENCHFILL_PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in .venv-benchfill/bin/python .venv-irt/bin/python; do
    if [ -x "$candidate" ]; then PY=$candidate; break; fi
  done
fi
case "${1:-}" in -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exec "${PY:-python3}" verifier/run_rollout.py --help ;; esac
exec "${PY:-python3}" verifier/run_rollout.py "$@"
