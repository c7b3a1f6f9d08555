#!/usr/bin/env bash
# Create the project's virtual environments. Idempotent: a venv whose requirements
# have not changed since its last install is left alone.
#
#   bash scripts/setup_env.sh irt        .venv-irt (Python >= 3.12): fits, analyses, figures
#   bash scripts/setup_env.sh dev        .venv-irt plus the test and lint tools
#
# Python >= 3.12 is found by itself: $IRT_PYTHON if set, then python3.13 / python3.12 on
# PATH, then pyenv's installed versions.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

log() { printf '[setup] %s\n' "$*" >&2; }

find_python312() {
  local candidate
  for candidate in "${IRT_PYTHON:-}" python3.13 python3.12 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  local root="${PYENV_ROOT:-$HOME/.pyenv}"
  if command -v pyenv >/dev/null 2>&1; then root=$(pyenv root); fi
  for candidate in $(ls -d "$root"/versions/3.1[3-9]*/bin/python3 "$root"/versions/3.12*/bin/python3 2>/dev/null | sort -rV); do
    if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

# make_venv DIR PYTHON REQUIREMENTS...: create DIR with PYTHON and install the files' pins.
make_venv() {
  local dir=$1 python=$2; shift 2
  local stamp="$dir/.requirements.sha256" want
  want=$(cat "$@" | sha256sum | cut -d' ' -f1)
  if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    log "$dir is up to date"; return 0
  fi
  if [ ! -x "$dir/bin/python" ]; then
    log "creating $dir with $("$python" --version 2>&1) ($python)"
    "$python" -m venv "$dir"
  fi
  local args=()
  for file in "$@"; do args+=(-r "$file"); done
  log "installing ${*} into $dir (first time: a few minutes)"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "${args[@]}"
  echo "$want" > "$stamp"
}

setup_irt() {
  local python
  if ! python=$(find_python312); then
    echo "error: no Python >= 3.12 found (PyMC 6, ArviZ 1 and nutpie need it). Install one" \
         "(e.g. 'pyenv install 3.13' or your OS's python3.13 package) or set IRT_PYTHON=/path/to/python3.12+." >&2
    exit 2
  fi
  make_venv "$ROOT/.venv-irt" "$python" "$@"
}

case "${1:-irt}" in
  irt) setup_irt requirements_irt.txt ;;
  dev) setup_irt requirements_irt.txt requirements-dev.txt ;;
  -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "error: unknown environment '${1}'; choose irt or dev (see --help)" >&2; exit 2 ;;
esac
