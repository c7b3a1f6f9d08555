#!/usr/bin/env bash
# End to end, first on REAL data, then on the bundled SIMULATED benchmark.
# C1-C6, ChemBench (data/chembench/: 22 LLMs x 2,854 questions, MIT): wide table -> count matrix ->
# Bayesian 1PL fit -> DDM / Max Gap -> ECDF figure -> posterior intervals -> the fit against the
# ChemBench authors' basic/advanced labels, and abilities beside raw accuracy.
# 1-8, simulated (data/example_simulated/): responses -> count matrix -> matrix checks -> fit -> DDM / Max Gap
# -> comparison with the true difficulties the responses were drawn from -> ECDF figure -> explorer page.
#
#   bash scripts/demo.sh [OUTPUT_DIR]        (default: demo_output/)
#
# Creates .venv-irt first if needed (Python >= 3.12, found by itself).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-demo_output}
EXAMPLE=data/example_simulated

bash scripts/setup_env.sh irt
PY=.venv-irt/bin/python

step() { printf '\n==> %s\n' "$*"; }

CB=data/chembench
REAL="$OUT/chembench"
step "C1. ChemBench: count matrix from the published wide table (questions as rows, 0.0/1.0 cells)"
$PY scripts/prepare_response_matrix.py --from wide "$CB/binary_matrix.csv" --items-as-rows --n-trials 1 \
    --output "$REAL/response_matrix.csv"

step "C2. ChemBench: Bayesian 1PL fit with NUTS (22 models x 2,854 items; 4 chains x 1,000 + 1,000, as in the paper)"
$PY scripts/fit_irt.py "$REAL/response_matrix.csv" --n-trials 1 --output-dir "$REAL" --seed 2026 --save-posterior

step "C3. ChemBench: DDM, Max Gap and Top-5 Gap Sum"
python3 scripts/diagnose_benchmark.py "$REAL/difficulty.csv"

step "C4. ChemBench: ECDF of normalized difficulties with the five largest gaps shaded"
$PY scripts/plot_difficulty.py "$REAL/difficulty.csv" --output "$REAL/difficulty_ecdf.png" --output "$REAL/difficulty_ecdf.pdf"

step "C5. ChemBench: posterior uncertainty of the metrics (94% intervals)"
$PY scripts/posterior_metrics.py "$REAL/posterior.zarr" --output "$REAL/metric_intervals.json"

step "C6. ChemBench: do the fitted difficulties order the authors' basic (easy) and advanced (hard) questions?"
$PY scripts/label_validity.py "$REAL/difficulty.csv" --labels "$CB/difficulty_dict.json" --easier easy --harder hard \
    --seed 2026 --abilities "$REAL/ability.csv" --matrix "$REAL/response_matrix.csv" --n-trials 1 \
    --output "$REAL/validity.json"

step "1. Simulated: count matrix from graded responses (12 simulated models x 60 items x 8 trials)"
$PY scripts/prepare_response_matrix.py "$EXAMPLE/responses.csv" --n-trials 8 --output "$OUT/response_matrix.csv"

step "2. Response-matrix checks before fitting (paper Table 5 thresholds)"
$PY scripts/check_response_matrix.py "$OUT/response_matrix.csv" --n-trials 8

step "3. Bayesian 1PL fit with NUTS (4 chains x 1,000 warm-up + 1,000 draws, as in the paper)"
$PY scripts/fit_irt.py "$OUT/response_matrix.csv" --n-trials 8 --output-dir "$OUT" --seed 2026 --save-posterior

step "4. Difficulty diagnostics of the fitted benchmark"
python3 scripts/diagnose_benchmark.py "$OUT/difficulty.csv"

step "5. How close the fit comes to the truth (simulated data: the true difficulties are known)"
python3 scripts/compare_difficulty.py "$OUT/difficulty.csv" "$EXAMPLE/true_difficulty.csv" --reference-column b_true

step "6. Posterior uncertainty of the metrics (computed per posterior draw; 94% intervals)"
$PY scripts/posterior_metrics.py "$OUT/posterior.zarr" --output "$OUT/metric_intervals.json"

step "7. ECDF of normalized difficulties with the five largest gaps shaded"
$PY scripts/plot_difficulty.py "$OUT/difficulty.csv" --output "$OUT/difficulty_ecdf.png" --output "$OUT/difficulty_ecdf.pdf"

step "8. The benchmark explorer: one HTML page (table, ECDF, gaps, posterior band); open it in a browser"
$PY scripts/explore_benchmarks.py "$OUT/difficulty.csv" --posterior "$OUT/posterior.zarr" --output "$OUT/explorer.html"

printf '\nChemBench outputs in %s/: the same files as below plus validity.json\n' "$REAL"
printf 'Outputs in %s/: response_matrix.csv, difficulty.csv, ability.csv, diagnostics.json, posterior.zarr,\n' "$OUT"
printf 'metric_intervals.json, difficulty_ecdf.png, difficulty_ecdf.pdf and explorer.html\n'
