#!/usr/bin/env bash
# On a GPU machine, for short device sessions: build once (scripts/gpu-build.sh: Release,
# kernelarc, test_eval and test_e2e, calibration), then run steps in order, each under its own
# time limit, so that one slow step cannot take the rest of the call with it. Logs and a summary
# go to $OUT (default ./gpu-results). Steps:
#   LAYER:FILTER:SECONDS                 test_LAYER --gtest_filter=FILTER, for a test layer
#                                        (eval, e2e, backend, diagnosis, ...; TARGETS builds
#                                        kernelarc test_eval test_e2e unless told otherwise)
#   try:PROBLEM:TEMPLATE:SECONDS[:KNOBS] kernelarc templates try problems/cuda/PROBLEM TEMPLATE
#                                        --workloads largest [--knobs KNOBS] $TRY_ARGS (e.g.
#                                        TRY_ARGS=--profile: Nsight Compute on the largest;
#                                        TRY_ALL=1: every workload, not the largest alone)
#   sweep:PROBLEM:TEMPLATE:SECONDS:N[:KNOBS]
#                                        kernelarc templates sweep problems/cuda/PROBLEM --template
#                                        TEMPLATE --random-points N --workloads largest [--knobs
#                                        KNOBS]: the default, extreme and N random points (holding
#                                        KNOBS), best first
#   bench:P1,P2,...:BUDGET:SECONDS       kernelarc bench problems/cuda --problems ... --budget
#                                        BUDGET --workloads largest, resumed from $BENCH_FROM
#                                        (a bench.json of an earlier call) when it is set;
#                                        BENCH_ARGS adds flags (e.g. --keep-accuracy), and
#                                        BENCH_OUT names the results folder (default bench)
# GPU tests run at the templates' default points (KERNELARC_TEMPLATE_POINTS=default) unless the
# environment says otherwise. BENCH_WALL (default 330) stops starting new bench problems;
# BASELINE_WARMUP_LIMIT (default 120) is the bench's --baseline-warmup-limit.
# Example:
#   scripts/gpu-steps.sh 'eval:GpuLibrary/GpuTemplateGuard.*scaled_gemm_wgmma*:120' \
#     'bench:fp8_gemm_rowwise_bf16_n7168_k2048:32:300'
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
[ -f .gpudeps/unpack.sh ] && source .gpudeps/unpack.sh > /dev/null 2>&1
export KERNELARC_TEMPLATE_POINTS=${KERNELARC_TEMPLATE_POINTS:-default}
TARGETS=${TARGETS:-"kernelarc test_eval test_e2e"} source scripts/gpu-build.sh
echo "built and calibrated in $((SECONDS - start)) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
summary=$out/summary.txt
for step in "$@"; do
  IFS=: read -r kind first second third fourth fifth <<< "$step"
  began=$SECONDS
  case $kind in
    eval | e2e | backend | diagnosis | cli | app | synth | oracle)
      log=$out/$kind-$(echo "$first" | tr -c 'A-Za-z0-9_\n' '_').txt
      timeout "$second" "$build/tests/test_$kind" --gtest_filter="$first" > "$log" 2>&1
      status=$?
      excerpt=$(grep -E '^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|skipped' "$log" | tail -30) ;;
    try)
      log=$out/try-$first-$second-$began.txt
      knobs=()
      [ -n "$fourth" ] && knobs=(--knobs "$fourth")
      workloads=(--workloads largest)
      [ -n "${TRY_ALL:-}" ] && workloads=()
      # shellcheck disable=SC2086 # TRY_ARGS is a list of flags
      timeout "$third" "$build/kernelarc" templates try "problems/cuda/$first" "$second" \
        --device cuda:0 --workspace "$workspace" "${workloads[@]}" "${knobs[@]}" ${TRY_ARGS:-} \
        > "$log" 2>&1
      status=$?
      excerpt=$(tail -25 "$log") ;;
    sweep)
      log=$out/sweep-$first-$second-$began.txt
      pins=()
      [ -n "$fifth" ] && pins=(--knobs "$fifth")
      timeout "$third" "$build/kernelarc" templates sweep "problems/cuda/$first" --template "$second" \
        --random-points "${fourth:-8}" --device cuda:0 --workspace "$workspace" \
        --workloads largest "${pins[@]}" > "$log" 2>&1
      status=$?
      excerpt=$(tail -30 "$log") ;;
    bench)
      results=$out/${BENCH_OUT:-bench}
      mkdir -p "$results"
      if [ -n "${BENCH_FROM:-}" ] && [ -f "$BENCH_FROM" ] && [ ! -f "$results/bench.json" ]; then
        cp "$BENCH_FROM" "$results/bench.json"
      fi
      resume=()
      [ -f "$results/bench.json" ] && resume=(--resume)
      log=$results/bench-$began.log
      # shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
      timeout "$third" "$build/kernelarc" bench problems/cuda --problems "$first" \
        --budget "$second" --workloads largest --device cuda:0 --workspace "$workspace" \
        --out "$results" --plain --wall-time "${BENCH_WALL:-330}" \
        --baseline-warmup-limit "${BASELINE_WARMUP_LIMIT:-120}" "${resume[@]}" ${BENCH_ARGS:-} \
        > "$log" 2>&1
      status=$?
      excerpt=$(tail -30 "$log") ;;
    *)
      echo "unknown step kind '$kind' in '$step' (a test layer, try, sweep or bench)"
      exit 2 ;;
  esac
  { echo "== $step: exit $status, $((SECONDS - began)) s"; echo "$excerpt"; } | tee -a "$summary"
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
echo "total $((SECONDS - start)) s"
