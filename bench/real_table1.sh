#!/usr/bin/env bash
# The README's real-data Table 1 (issue 29): every real response matrix bundled in data/, prepared, fitted at the
# paper's settings with the calibrated intervals (the default), then one `summarize` over the fit folders.
#
#   bash bench/real_table1.sh [OUT]      (default OUT=runs/real_table1; about 10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/real_table1}
PY=${PY:-.venv-irt/bin/python}
mkdir -p "$OUT"
fit() {  # name, prepared matrix, then extra fit options
  local name=$1 matrix=$2; shift 2
  /usr/bin/time -f "$name: %e s wall, %M KB peak" $PY -m benchmeasure fit "$matrix" --n-trials 1 --seed 2026 \
      --output-dir "$OUT/$name" --name "$name" "$@" 2>&1 | tee "$OUT/$name.log" | tail -6
}
if [ ! -f "$OUT/ChemBench/diagnostics.json" ]; then
  $PY -m benchmeasure prepare --from wide data/chembench/binary_matrix.csv --items-as-rows --n-trials 1 \
      --output "$OUT/chembench.csv"
  fit ChemBench "$OUT/chembench.csv"
fi
for b in gsm8k math_l5; do
  $PY -m benchmeasure prepare "data/zeroeval/$b.csv.gz" --n-trials 1 --allow-missing --output "$OUT/$b.csv"
done
fit GSM8K "$OUT/gsm8k.csv" --allow-missing
fit MATH-L5 "$OUT/math_l5.csv" --allow-missing
$PY -m benchmeasure prepare data/mmlu_pro/responses.csv.gz --n-trials 1 --allow-missing --output "$OUT/mmlu_pro.csv"
fit MMLU-Pro "$OUT/mmlu_pro.csv" --allow-missing
$PY -m benchmeasure summarize "$OUT/ChemBench" "$OUT/GSM8K" "$OUT/MATH-L5" "$OUT/MMLU-Pro" --output-dir "$OUT/table1"
