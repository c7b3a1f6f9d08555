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
# BENCHFILL_CONFIG=PATH takes a benchmark config from anywhere instead (its [benchmark] name names the runs).
# env.local (cp env.example env.local) supplies endpoints, model names and API keys; a variable the caller
# already set in the environment wins over env.local (a note on stderr names it). CRLF line ends are fine.
# BENCHFILL_PYTHON chooses the interpreter (default: .venv-benchfill, else .venv-irt); it must import
# numpy and openai. BENCHFILL_RESULTS replaces propose/results as the results root (the ability cache
# goes under it too).
# Outputs: summary.json, table2.txt, new_item_records.csv, events.jsonl in the run folder.
set -euo pipefail

BENCHMARK=${BENCHMARK:-aime24}   # aime24 aime25 aime26 amc23 gaokao2023en bbh_3obj mmlu_bio ifeval

cd "$(dirname "$0")"
ROOT=$(pwd)

load_env_local() {  # source env.local (CR stripped); the caller's exported variables keep their values
  local name
  declare -A caller=()
  for name in $(compgen -e); do caller[$name]=${!name-}; done
  set -a
  # shellcheck disable=SC1090
  . <(tr -d '\r' < env.local)
  set +a
  for name in "${!caller[@]}"; do
    [ "$name" = _ ] && continue
    if [ "${!name-}" != "${caller[$name]}" ]; then
      export "$name=${caller[$name]}"
      echo "note: $name is set in the environment; env.local's value is ignored (the caller's wins)" >&2
    fi
  done
}
if [ -f env.local ]; then load_env_local; fi
PY=${BENCHFILL_PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in .venv-benchfill/bin/python .venv-irt/bin/python; do
    if [ -x "$candidate" ]; then PY=$candidate; break; fi
  done
fi
PY=${PY:-python3}
RESULTS=${BENCHFILL_RESULTS:-$ROOT/propose/results}
SETUP="run 'bash scripts/setup_env.sh dev' (.venv-irt with openai) or 'bash scripts/setup_env.sh benchfill'"

unfit() {  # unfit INTERPRETER MODULE...: why it is not Python >= 3.11 importing every MODULE (empty: it is)
  local python=$1; shift
  "$python" - "$@" 2>/dev/null <<'PYEOF' || echo "does not start"
import importlib.util, sys
lacking = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]
if sys.version_info < (3, 11):
    print(f"is Python {sys.version.split()[0]}, not >= 3.11")
elif lacking:
    print("lacks " + ", ".join(lacking))
PYEOF
}

need_python() {  # the loop's interpreter must import what the loop needs, or one error line says how to set it up
  local why
  why=$(unfit "$PY" numpy openai)
  [ -z "$why" ] || { echo "error: the BenchFill interpreter $PY $why; $SETUP, or set BENCHFILL_PYTHON" >&2; exit 2; }
}

CONFIG=${BENCHFILL_CONFIG:-propose/configs/$BENCHMARK.toml}
where() {  # where [NAME]: the run folder NAME of this config's benchmark, or its newest run (error if none)
  if [ -n "${BENCHFILL_CONFIG:-}" ]; then
    "$PY" propose/benchfill.py where --config "$CONFIG" --results "$RESULTS" ${1:+--name "$1"}
  else
    "$PY" propose/benchfill.py where --benchmark "$BENCHMARK" --results "$RESULTS" ${1:+--name "$1"}
  fi
}

start_server() {  # start_server DATA SEED: the simulation server in the background; sets BENCHFILL_SIM_URL
  # Started, awaited and stopped by benchmeasure serve (benchmeasure/serving/process.py), as setup_server.sh does.
  local log="$1/server.log" pid="$1/server.pid" limit=${BENCHFILL_SIM_START_S:-120}
  local serve=("$PY" -m benchmeasure serve)
  "${serve[@]}" start --name sim --pid-file "$pid" --log "$log" -- \
    "$PY" -m benchmeasure.serving.sim.server --world "$1/world.json" --port 0 --seed "$2" > /dev/null || exit 1
  SERVE_STOP=("${serve[@]}" stop --name sim --pid-file "$pid" --grace 5 --label run_experiment)
  trap '"${SERVE_STOP[@]}" 2>/dev/null || true' EXIT
  # Wait for its "listening on URL" line and for URL/models to answer (a loaded machine may take a while).
  # BENCHFILL_SIM_START_S sets the limit (default 120 s).
  BENCHFILL_SIM_URL=$("${serve[@]}" wait --name "the simulation server" --pid-file "$pid" --log "$log" \
    --url-from-log 'listening on ' --timeout "$limit" --log-lines 0 --label run_experiment) || exit 1
  export BENCHFILL_SIM_URL
}

init() {  # init CONFIG [NAME]: create the run folder (init also records it as the benchmark's LATEST run)
  "$PY" propose/benchfill.py init --config "$1" --results "$RESULTS" ${2:+--name "$2"}
}

case "${1:-}" in
  init|run|status|sim|mass-fill) need_python ;;
esac

case "${1:-}" in
  init) init "$CONFIG" "${2:-}" ;;
  run|status)
    # not "${2:-$(where)}": where's exit would end only the $( ) subshell, and the command would run anyway
    FOLDER=${2:-}
    if [ -z "$FOLDER" ]; then FOLDER=$(where) || exit 2; fi
    "$PY" propose/benchfill.py "$1" "$FOLDER"
    ;;
  sim)
    SEED=${2:-0}
    [[ "$SEED" =~ ^[0-9]+$ ]] || { echo "error: sim takes a seed, a non-negative integer, got '$SEED'" >&2; exit 2; }
    DATA="$RESULTS/math_sim/data-seed$SEED"
    if [ ! -f "$DATA/calibration.csv" ]; then
      # the abilities are fit once by scripts/fit_irt.py in the IRT environment (benchfill/abilities.py)
      IRT_PY=${BENCHMEASURE_IRT_PYTHON:-}
      if [ -z "$IRT_PY" ]; then
        if [ -x .venv-irt/bin/python ]; then IRT_PY=.venv-irt/bin/python; else IRT_PY=$PY; fi
      fi
      why=$(unfit "$IRT_PY" numpy scipy pymc nutpie)
      [ -z "$why" ] || { echo "error: the IRT interpreter $IRT_PY $why (needed for the ability fit);" \
        "run 'bash scripts/setup_env.sh dev', or set BENCHMEASURE_IRT_PYTHON" >&2; exit 2; }
      "$PY" propose/benchfill.py sim-data --folder "$DATA" --seed "$SEED" >/dev/null
    fi
    start_server "$DATA" "$SEED"
    FOLDER=$(init "$DATA/config.toml" "sim-seed$SEED-$(date +%Y%m%d-%H%M%S)")
    "$PY" propose/benchfill.py run "$FOLDER"
    "$PY" propose/benchfill.py status "$FOLDER"
    ;;
  mass-fill)
    NAME=${2:-}
    [ -n "$NAME" ] || { echo "error: mass-fill needs a run name, e.g. 'mass-fill m1 --max-items 20'" >&2; exit 2; }
    shift 2
    FOLDER=$(where "$NAME") || exit 2
    if [ ! -f "$FOLDER/mass_fill.json" ]; then
      "$PY" propose/mass_fill/mass_fill.py init --config "$CONFIG" --results "$RESULTS" --name "$NAME" "$@" >/dev/null
    fi
    "$PY" propose/mass_fill/mass_fill.py run "$FOLDER" "$@"
    ;;
  -h|--help|help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "error: unknown command '${1:-}'; use init, run, status, sim or mass-fill (see --help)" >&2; exit 2 ;;
esac
