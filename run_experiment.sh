#!/usr/bin/env bash
# BenchFill (paper, Section 4): fill the widest difficulty gaps of a benchmark with new items.
#
#   bash run_experiment.sh init [NAME]     create propose/results/$BENCHMARK/<NAME>/ with the resolved config
#   bash run_experiment.sh run [RUN]       start or resume a run (default: the latest one)
#   bash run_experiment.sh status [RUN]    print per-gap progress, calls spent, what is running (read-only)
#   bash run_experiment.sh sim [SEED]      the whole loop against a local simulated server: init + run + status
#   bash run_experiment.sh mass-fill NAME [--max-items N|--max-calls N|--max-rounds N] [--target-max-gap G]
#                                          fill gap after gap (propose/mass_fill/): init NAME if new, then run/resume
#
# Settings: BENCHMARK below (or in the environment) picks propose/configs/$BENCHMARK.toml;
# env.local (cp env.example env.local) supplies endpoints, model names and API keys.
# BENCHFILL_PYTHON chooses the interpreter (default: .venv-benchfill, else .venv-irt).
# Outputs: summary.json, table2.txt, new_item_records.csv, events.jsonl in the run folder.
set -euo pipefail

BENCHMARK=${BENCHMARK:-aime24}   # aime24 aime25 aime26 amc23 gaokao2023en bbh_3obj mmlu_bio ifeval

cd "$(dirname "$0")"
ROOT=$(pwd)
if [ -f env.local ]; then set -a; . ./env.local; set +a; fi
PY=${BENCHFILL_PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in .venv-benchfill/bin/python .venv-irt/bin/python; do
    if [ -x "$candidate" ]; then PY=$candidate; break; fi
  done
fi
PY=${PY:-python3}
RESULTS=${BENCHFILL_RESULTS:-$ROOT/propose/results}

latest() {  # the newest run folder of $1
  local dir="$RESULTS/$1"
  [ -f "$dir/LATEST" ] || { echo "error: no run for $1 yet; start one with 'bash run_experiment.sh init'" >&2; exit 2; }
  cat "$dir/LATEST"
}

init() {  # init BENCH CONFIG [NAME]
  local folder
  folder=$("$PY" propose/benchfill.py init --config "$2" --results "$RESULTS" ${3:+--name "$3"})
  echo "$folder" > "$RESULTS/$1/LATEST"
  echo "$folder"
}

case "${1:-}" in
  init) init "$BENCHMARK" "propose/configs/$BENCHMARK.toml" "${2:-}" ;;
  run) "$PY" propose/benchfill.py run "${2:-$(latest "$BENCHMARK")}" ;;
  status) "$PY" propose/benchfill.py status "${2:-$(latest "$BENCHMARK")}" ;;
  sim)
    SEED=${2:-0}
    DATA="$RESULTS/math_sim/data-seed$SEED"
    if [ ! -f "$DATA/calibration.csv" ]; then
      "$PY" propose/benchfill.py sim-data --folder "$DATA" --seed "$SEED" >/dev/null
    fi
    LOG="$DATA/server.log"
    "$PY" -m benchmeasure.sim.server --world "$DATA/world.json" --port 0 --seed "$SEED" > "$LOG" 2>&1 &
    SERVER=$!
    trap 'kill "$SERVER" 2>/dev/null || true' EXIT
    for _ in $(seq 100); do grep -q listening "$LOG" 2>/dev/null && break; sleep 0.1; done
    grep -q listening "$LOG" || { echo "error: the simulation server did not start (see $LOG)" >&2; exit 1; }
    BENCHFILL_SIM_URL=$(sed -n 's/^listening on //p' "$LOG")
    export BENCHFILL_SIM_URL
    FOLDER=$(init math_sim "$DATA/config.toml" "sim-seed$SEED-$(date +%Y%m%d-%H%M%S)")
    "$PY" propose/benchfill.py run "$FOLDER"
    "$PY" propose/benchfill.py status "$FOLDER"
    ;;
  mass-fill)
    NAME=${2:-}
    [ -n "$NAME" ] || { echo "error: mass-fill needs a run name, e.g. 'mass-fill m1 --max-items 20'" >&2; exit 2; }
    shift 2
    FOLDER="$RESULTS/$BENCHMARK/$NAME"
    if [ ! -f "$FOLDER/mass_fill.json" ]; then
      "$PY" propose/mass_fill/mass_fill.py init --config "propose/configs/$BENCHMARK.toml" --results "$RESULTS" \
        --name "$NAME" "$@" >/dev/null
    fi
    "$PY" propose/mass_fill/mass_fill.py run "$FOLDER" "$@"
    ;;
  -h|--help|help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "error: unknown command '${1:-}'; use init, run, status, sim or mass-fill (see --help)" >&2; exit 2 ;;
esac
