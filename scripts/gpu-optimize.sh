#!/usr/bin/env bash
# On a GPU machine: `kernelarc optimize` on CUDA problems, one after the other, each with the
# same budget; the log of each goes to $OUT/optimize-<name>.txt with its wall time.
# Usage: scripts/gpu-optimize.sh <problem-dir>...   (BUILD default build-gpu, BUDGET default 64,
# OPTIMIZE_ARGS for more flags, e.g. "--workloads largest")
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-gpu}
out=${OUT:-gpu-results}
workspace=$build/workspace
mkdir -p "$out"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/cmake.txt" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" > "$out/build.txt" 2>&1 || { tail -40 "$out/build.txt"; exit 1; }
[ -d "$workspace/calibration" ] ||
  "$build/kernelarc" calibrate --device cuda:0 --workspace "$workspace" > "$out/calibrate.txt" 2>&1
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
