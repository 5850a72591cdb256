#!/usr/bin/env bash
# On a GPU machine: `kernelarc optimize` on CUDA problems, one after the other, each with the
# same budget; the log of each goes to $OUT/optimize-<name>.txt with its wall time.
# Usage: scripts/gpu-optimize.sh <problem-dir>...   (BUILD default build-gpu, BUDGET default 64,
# OPTIMIZE_ARGS for more flags, e.g. "--workloads largest")
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu-build.sh
files=()
[ -f "$workspace/ka_cublaslt_table.h" ] && files=(--file "ka_cublaslt_table.h=$workspace/ka_cublaslt_table.h")
for problem in "$@"; do
  name=$(basename "$problem")
  start=$(date +%s)
  "$build/kernelarc" optimize "$problem" --device cuda:0 --budget "${BUDGET:-64}" --plain \
    --workspace "$workspace" --out "$out/best-$name" "${files[@]}" ${OPTIMIZE_ARGS:-} 2>&1 |
    tee "$out/optimize-$name.txt"
  echo "wall time: $(( $(date +%s) - start )) s" | tee -a "$out/optimize-$name.txt"
done
