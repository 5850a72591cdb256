#!/usr/bin/env bash
# Builds the suite of issue 23's H200 bench: three SOL-ExecBench examples and fifteen
# KernelBench problems, imported as users would (`kernelarc import kernelbench`). KernelBench's
# level-1 sizes are shrunk so that the oracle's draws of a workload fit the GPU machine's 64 GiB
# disk (ReLU's 12 GiB a draw becomes 192 MiB); nothing else in the files changes.
# Usage: scripts/issue23-suite.sh KERNELBENCH_REPO SOL_EXECBENCH_REPO OUT_DIR [KERNELARC]
set -euo pipefail
kb=$1 sol=$2 out=$3 kernelarc=${4:-build/kernelarc}
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
problems=(level1/19_ReLU level1/23_Softmax level1/24_LogSoftmax level1/26_GELU_ level1/36_RMSNorm_
  level1/40_LayerNorm level1/47_Sum_reduction_over_a_dimension level1/89_cumsum level1/94_MSELoss
  level1/95_CrossEntropyLoss level1/4_Matrix_vector_multiplication_
  level2/12_Gemm_Multiply_LeakyReLU level2/40_Matmul_Scaling_ResidualAdd level2/76_Gemm_Add_ReLU
  level2/99_Matmul_GELU_Softmax)
for problem in "${problems[@]}"; do
  git -C "$kb" show "HEAD:KernelBench/$problem.py" > "$src/${problem%%/*}_$(basename "$problem").py"
done
sed -i 's/^batch_size = 4096/batch_size = 64/' "$src"/level1_{19,23,24,26}_*.py
sed -i 's/^batch_size = 112/batch_size = 2/' "$src"/level1_36_*.py
sed -i 's/^batch_size = 128/batch_size = 4/' "$src"/level1_47_*.py
sed -i 's/^K = 131072 \* 8.*/K = 32768/' "$src"/level1_4_*.py
sed -i 's/^batch_size = 32768/batch_size = 1024/' "$src"/level1_89_*.py "$src"/level1_94_*.py
"$kernelarc" import kernelbench "$src" "$out"
for example in cute_dsl/jamba_attn_proj pytorch/linear_backward pytorch/gemma3_swiglu; do
  dir="$out/sol_$(basename "$example")"
  mkdir -p "$dir"
  for file in definition.json reference.py workload.jsonl; do
    git -C "$sol" show "HEAD:examples/$example/$file" > "$dir/$file"
  done
done
