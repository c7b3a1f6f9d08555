#!/usr/bin/env bash
# The rewriter (MiniMax-M2.7 in the paper, Section 5): serve it locally with vLLM, or check
# that its OpenAI-compatible API answers. Settings come from the [rewriter] table of the
# panel config (served name, checkpoint, GPUs, port; base_url_env / api_key_env).
#
#   bash scripts/setup_diff_minimax.sh                 --local unless $REWRITER_BASE_URL is set
#   bash scripts/setup_diff_minimax.sh --local         vllm serve on this machine (all 8 GPUs in paper.toml)
#   bash scripts/setup_diff_minimax.sh --api           check $REWRITER_BASE_URL/models lists the model
#   bash scripts/setup_diff_minimax.sh --stop          stop the local server
#
# Options: --config FILE (default $PANEL_CONFIG or verifier/panels/paper.toml), --dry-run
# (print the exact commands; the API key is never printed), --timeout SECONDS (local start-up).
# The variable names REWRITER_BASE_URL / REWRITER_API_KEY are the config's defaults.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONFIG=${PANEL_CONFIG:-$ROOT/verifier/panels/paper.toml}
PYTHON=${PYTHON:-python3}
MODE=""
PASS=()
DRY=0

die() { echo "error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --local) MODE=local; shift ;;
    --api) MODE=api; shift ;;
    --stop) MODE=stop; shift ;;
    --config) [ $# -ge 2 ] || die "--config needs a file"; CONFIG=$2; shift 2 ;;
    --dry-run) DRY=1; PASS+=(--dry-run); shift ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs seconds"; PASS+=(--timeout "$2"); shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -f "$CONFIG" ] || die "panel config not found: $CONFIG"
out=$("$PYTHON" "$ROOT/scripts/panel_settings.py" "$CONFIG" --rewriter) || exit 2
eval "$out"
url_var=${BASE_URL_ENV:-REWRITER_BASE_URL}
key_var=${API_KEY_ENV:-REWRITER_API_KEY}
if [ -z "$MODE" ]; then
  if [ -n "${!url_var:-}" ]; then MODE=api; else MODE=local; fi
fi

case "$MODE" in
  local) exec bash "$ROOT/scripts/setup_server.sh" --config "$CONFIG" --rewriter "${PASS[@]}" ;;
  stop) exec bash "$ROOT/scripts/setup_server.sh" --config "$CONFIG" --rewriter --stop "${PASS[@]}" ;;
esac

# --api: the rewriter is reached through an OpenAI-compatible endpoint
base=${!url_var:-}
[ -n "$base" ] || die "--api needs \$$url_var (the rewriter's OpenAI-compatible base URL, ending in /v1)"
base=${base%/}
if [ "$DRY" = 1 ]; then
  echo "curl -sf --max-time 30 -H \"Authorization: Bearer \$$key_var\" $base/models"
  echo "# expect model '$NAME' in the answer"
  exit 0
fi
reply=$(curl -sf --max-time 30 -H "Authorization: Bearer ${!key_var:-EMPTY}" "$base/models") ||
  { echo "error: $base/models did not answer (check \$$url_var and \$$key_var)" >&2; exit 1; }
if printf '%s' "$reply" | grep -qF "\"$NAME\""; then
  echo "rewriter $NAME is reachable at $base"
else
  echo "error: $base answers but does not list model '$NAME'; set the served name in [rewriter] name" >&2; exit 1
fi
