#!/usr/bin/env bash
# On a GPU machine: calibrate, then `kernelarc bench` a suite of problem directories, resuming
# from RESULTS/bench.json when it exists, so a suite can be benched over several short calls.
# Uses the binaries in $BIN (a folder holding kernelarc, e.g. carried from a build made
# elsewhere at the same path) or builds them in build-gpu.
# Usage: scripts/gpu-bench-suite.sh SUITE_DIR RESULTS_DIR [bench options...]
# bench.json, bench.md and the log are copied to $OUT when it is set. BENCH_TIMEOUT (seconds)
# stops the bench itself; rows already finished are kept in bench.json.
set -uo pipefail
cd "$(dirname "$0")/.."
suite=$1
results=$2
shift 2
if [ -n "${BIN:-}" ]; then
  kernelarc=$BIN/kernelarc
else
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null &&
    cmake --build build-gpu -j"$(nproc)" --target kernelarc > /tmp/build.txt 2>&1 ||
    { tail -40 /tmp/build.txt; exit 1; }
  kernelarc=build-gpu/kernelarc
fi
workspace=${WORKSPACE:-/tmp/kernelarc-workspace}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
[ -f "$workspace/calibration/cuda-0.json" ] ||
  "$kernelarc" calibrate --device cuda:0 --workspace "$workspace" | tail -3
mkdir -p "$results"
resume=()
[ -f "$results/bench.json" ] && resume=(--resume)
timeout "${BENCH_TIMEOUT:-86400}" "$kernelarc" bench "$suite" --device cuda:0 --workspace "$workspace" --out "$results" --plain \
  "${resume[@]}" "$@" > "$results/bench.log" 2>&1
status=$?
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
if [ -n "${OUT:-}" ]; then cp "$results"/bench.json "$results"/bench.md "$results"/bench.log "$OUT"/ 2>/dev/null; fi
tail -60 "$results/bench.log"
exit $status
