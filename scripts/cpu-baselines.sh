#!/usr/bin/env bash
# Eager PyTorch against kernelarc's naive C solution on every bundled CPU problem, at each
# problem's largest workload, through the guard (`kernelarc eval`): the table shows how far the
# baseline that speedups are measured against is from a plain C loop. Usage:
#   scripts/cpu-baselines.sh [build dir (default build)] [workspace (default .kernelarc-cpu-baselines)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
workspace=${2:-.kernelarc-cpu-baselines}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

printf '%-18s %-28s %10s %10s %8s\n' problem workload eager_ms naive_ms eager/naive
for problem in problems/cpu/*/; do
  name=$(basename "$problem")
  "$build/kernelarc" eval "$problem" "$problem/solutions/naive" --workloads largest \
    --workspace "$workspace" --json "$out/$name.json" >"$out/$name.log" 2>&1 ||
    { echo "$name: eval failed:"; tail -5 "$out/$name.log"; continue; }
  python3 - "$out/$name.json" "$name" <<'PY'
import json, sys
traces = json.load(open(sys.argv[1]))
for trace in traces if isinstance(traces, list) else [traces]:
    ours = trace["kernelarc"]
    axes = " ".join(f"{k}={v}" for k, v in trace["workload"]["axes"].items())
    eager = ours["baselines"]["eager_ms"]
    naive = (ours["latency_ms"] or {}).get("median")
    ratio = f"{eager / naive:.2f}x" if eager and naive else "-"
    fmt = lambda v: f"{v:.4f}" if v else "-"
    print(f"{sys.argv[2]:<18} {axes:<28} {fmt(eager):>10} {fmt(naive):>10} {ratio:>8}")
PY
done
