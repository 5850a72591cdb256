#!/usr/bin/env bash
# On a GPU machine: build, calibrate the GPU, run the `gpu`-labelled tests, and evaluate every
# built-in CUDA problem's bundled solution through the guard. Results go to $OUT (default
# ./gpu-results): calibrate.txt, gpu-tests.txt, evals.txt (every table) and traces.tar.gz.
# Usage: scripts/gpu-validate.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
out=${OUT:-gpu-results}
mkdir -p "$out"
workspace=$build/workspace
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/cmake.txt" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" > "$out/build.txt" 2>&1 || { tail -40 "$out/build.txt"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv \
  > "$out/nvidia-smi.txt" 2>&1
"$build/kernelarc" calibrate --device cuda:0 --workspace "$workspace" 2>&1 | tee "$out/calibrate.txt"
# The guard's GPU tests share one oracle cache when run in one process; the rest run in ctest.
ctest --test-dir "$build" -L gpu -E 'Gpu(Guard|BrokenSolutions)' --output-on-failure -j4 \
  --timeout 300 > "$out/gpu-tests.txt" 2>&1
"$build/tests/test_eval" --gtest_filter='Gpu*' >> "$out/gpu-tests.txt" 2>&1
grep -E '^\[  (FAILED|PASSED|SKIPPED) |^\[       OK|tests passed|tests failed' "$out/gpu-tests.txt"
mkdir -p "$build/traces"
for problem in problems/cuda/*/; do
  name=$(basename "$problem")
  [ -d "$problem/solutions/basic" ] || continue
  echo "== $name" >> "$out/evals.txt"
  timeout "${EVAL_TIMEOUT:-150}" "$build/kernelarc" eval "$problem" "$problem/solutions/basic" \
    --device cuda:0 --workspace "$workspace" --json "$build/traces/$name.json" \
    >> "$out/evals.txt" 2>&1
  echo "(exit $?)" >> "$out/evals.txt"
done
tar -czf "$out/traces.tar.gz" -C "$build" traces
cat "$out/evals.txt"
