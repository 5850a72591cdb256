// output[M, N] = x[M, K] @ weight[N, K]^T in bfloat16 with float32 accumulation, through
// cuBLASLt: the library baseline that a hand-written kernel has to beat.
//
// Row-major output[M, N] is column-major [N, M], so cuBLASLt computes D(N x M) =
// op(weight) (N x K) * x (K x M) with weight transposed: the TN layout that Hopper's tensor-core
// kernels prefer. The handle and, per shape and pointer alignment, the descriptors and the
// heuristic's algorithm are made once and reused, so a timed call only enqueues the product.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <map>
#include <tuple>

#include "kernelarc/abi.h"

namespace {

char g_error[256];

int fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_error, sizeof g_error, format, args);
  va_end(args);
  return 1;
}

bool is_contiguous(const ka_tensor& t) {
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.stride[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

int check(const ka_tensor& t, const char* name) {
  if (t.dtype != KA_BFLOAT16) return fail("%s: expected bfloat16, got dtype %d", name, t.dtype);
  if (t.ndim != 2) return fail("%s: expected 2 dims, got %d", name, t.ndim);
  if (!is_contiguous(t)) return fail("%s: expected a contiguous row-major tensor", name);
  return 0;
}

/// The largest power of two (up to 256) that divides the address: cuBLASLt may only pick
/// kernels whose vector accesses this alignment allows.
uint32_t alignment(const void* pointer) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  uint32_t bytes = 256;
  while (bytes > 1 && address % bytes != 0) bytes /= 2;
  return bytes;
}

struct Plan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t weight = nullptr;  // cuBLASLt's A: K x N column-major, transposed
  cublasLtMatrixLayout_t input = nullptr;   // cuBLASLt's B: K x M column-major
  cublasLtMatrixLayout_t output = nullptr;  // cuBLASLt's C and D: N x M column-major
  cublasLtMatmulAlgo_t algo{};
};

using PlanKey = std::tuple<int64_t, int64_t, int64_t, uint32_t, uint32_t, uint32_t, size_t>;

cublasLtHandle_t g_handle = nullptr;
std::map<PlanKey, Plan> g_plans;

#define KA_LT_CHECK(call)                                                    \
  do {                                                                       \
    const cublasStatus_t status_ = (call);                                   \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                    \
      return fail("%s failed: %s", #call, cublasLtGetStatusString(status_)); \
  } while (0)

int make_plan(int64_t m, int64_t n, int64_t k, const uint32_t (&align)[3], size_t workspace_bytes,
              Plan& plan) {
  KA_LT_CHECK(cublasLtMatmulDescCreate(&plan.operation, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  KA_LT_CHECK(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSA,
                                             &transpose, sizeof(transpose)));
  KA_LT_CHECK(cublasLtMatrixLayoutCreate(&plan.weight, CUDA_R_16BF, k, n, k));
  KA_LT_CHECK(cublasLtMatrixLayoutCreate(&plan.input, CUDA_R_16BF, k, m, k));
  KA_LT_CHECK(cublasLtMatrixLayoutCreate(&plan.output, CUDA_R_16BF, n, m, n));
  cublasLtMatmulPreference_t preference = nullptr;
  KA_LT_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const cublasLtMatmulPreferenceAttributes_t attributes[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const uint32_t values[] = {align[0], align[1], align[2], align[2]};
  cublasStatus_t status =
      cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace_bytes, sizeof(workspace_bytes));
  for (int i = 0; i < 4 && status == CUBLAS_STATUS_SUCCESS; ++i) {
    status = cublasLtMatmulPreferenceSetAttribute(preference, attributes[i], &values[i],
                                                  sizeof(values[i]));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS) {
    status =
        cublasLtMatmulAlgoGetHeuristic(g_handle, plan.operation, plan.weight, plan.input,
                                       plan.output, plan.output, preference, 1, &result, &found);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS)
    return fail("cuBLASLt preference/heuristic failed: %s", cublasLtGetStatusString(status));
  if (found == 0) return fail("cuBLASLt has no algorithm for M=%lld", static_cast<long long>(m));
  plan.algo = result.algo;
  return 0;
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  if (n_inputs != 2 || n_outputs != 1)
    return fail("expected 2 inputs and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor& x = inputs[0];
  const ka_tensor& weight = inputs[1];
  const ka_tensor& out = outputs[0];
  if (check(x, "x") || check(weight, "weight") || check(out, "output")) return 1;
  const int64_t m = x.shape[0];
  const int64_t k = x.shape[1];
  const int64_t n = weight.shape[0];
  if (weight.shape[1] != k)
    return fail("weight: expected [N, %lld], got [%lld, %lld]", static_cast<long long>(k),
                static_cast<long long>(weight.shape[0]), static_cast<long long>(weight.shape[1]));
  if (out.shape[0] != m || out.shape[1] != n)
    return fail("output: expected shape [%lld, %lld]", static_cast<long long>(m),
                static_cast<long long>(n));
  if (m == 0 || n == 0) return 0;

  if (g_handle == nullptr) KA_LT_CHECK(cublasLtCreate(&g_handle));
  // cuBLASLt wants a 256-byte aligned workspace; without one it gets none.
  if (workspace == nullptr || alignment(workspace) < 256) workspace_bytes = 0;
  const uint32_t align[3] = {alignment(weight.data), alignment(x.data), alignment(out.data)};
  const PlanKey key{m, n, k, align[0], align[1], align[2], workspace_bytes};
  auto found = g_plans.find(key);
  if (found == g_plans.end()) {
    Plan plan;
    if (make_plan(m, n, k, align, workspace_bytes, plan) != 0) return 1;
    found = g_plans.emplace(key, plan).first;
  }
  const Plan& plan = found->second;
  const float alpha = 1.0f;
  const float beta = 0.0f;
  KA_LT_CHECK(cublasLtMatmul(g_handle, plan.operation, &alpha, weight.data, plan.weight, x.data,
                             plan.input, &beta, out.data, plan.output, out.data, plan.output,
                             &plan.algo, workspace_bytes ? workspace : nullptr, workspace_bytes,
                             static_cast<cudaStream_t>(stream)));
  return 0;
}
