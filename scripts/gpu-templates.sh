#!/usr/bin/env bash
# On a GPU machine: the template library's GPU checks and benchmark, in stages that each fit a
# short session (results go to $OUT, default ./gpu-results):
#   scripts/gpu-templates.sh tests            build, calibrate, GpuTemplateGuard (every CUDA
#                                             template at its test points, every workload)
#   scripts/gpu-templates.sh tune             cublaslt_tune on gemm_bf16: table.json and the
#                                             header the cuBLASLt template compiles in
#   scripts/gpu-templates.sh sweep <problem>  kernelarc templates sweep on one CUDA problem
#                                             (with the tuned table when present)
# Environment: BUILD (default build-gpu), POINTS (random points per template, default 8),
# ONLY (tests: a part of the test names, e.g. "attention_prefill_wgmma" or "moe_backward__"),
# SWEEP_ARGS (more flags for the sweep, e.g. "--template gemm_wgmma"),
# KERNELARC_TEMPLATE_POINTS=default (tests at the default points only: the nvcc-built GEMM
# templates take ~30-60 s to compile per point, so the full test set may not fit one call),
# TARGETS="kernelarc test_eval" (build only what the tests stage runs; scripts/gpu-build.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu-build.sh
stage=${1:-tests}
shift || true
case "$stage" in
  tests)
    "$build/tests/test_eval" --gtest_filter="GpuLibrary/GpuTemplateGuard.*${ONLY:-}*" 2>&1 |
      tee "$out/template-tests.txt" | grep -E '^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|skipped'
    ;;
  tune)
    "$build/tools/cublaslt_tune/cublaslt_tune" problems/cuda/gemm_bf16 --out "$out/cublaslt_table.json" \
      --header "$out/ka_cublaslt_table.h" 2>&1 | tee "$out/tune.txt"
    cp "$out/cublaslt_table.json" "$out/ka_cublaslt_table.h" "$workspace/" 2>/dev/null
    ;;
  sweep)
    files=()
    [ -f "$workspace/ka_cublaslt_table.h" ] && files=(--file "ka_cublaslt_table.h=$workspace/ka_cublaslt_table.h")
    for problem in "$@"; do
      name=$(basename "$problem")
      "$build/kernelarc" templates sweep "$problem" --device cuda:0 --workspace "$workspace" \
        --random-points "${POINTS:-8}" "${files[@]}" ${SWEEP_ARGS:-} 2>&1 | tee "$out/sweep-$name.txt"
    done
    ;;
  *) echo "unknown stage $stage (tests, tune or sweep)"; exit 2 ;;
esac
