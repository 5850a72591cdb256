// cuBLASLt FP8 GEMM for the scaled_gemm family:
//   C[M, N] = sum_k A[m, k] B[n, k] a_scale(m, k / 128) b_scale(n, k / 128), A and B e4m3.
//
// cuBLASLt is column major, so the template asks for C^T [N, M] = B . A^T: cuBLASLt's A operand
// is our B ([N, K] row major = K x N column major, op T) and its B operand is our A ([M, K] row
// major = K x M column major, op N): the "TN" form that FP8 matmuls need. Our B's scale therefore
// goes to CUBLASLT_MATMUL_DESC_A_SCALE_* and our A's to B_SCALE_*. Scale modes:
//   per_tensor    -> CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F   (the device float as given)
//   per_row/col   -> CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F (M or N floats as given)
//   block_1x128   -> CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F   (cuBLASLt reads [ceil(K/128)][rows],
//                    rows contiguous: the problem's [rows, ceil(K/128)] is transposed into the
//                    workspace first)
//   block_128x128 -> CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F ([ceil(rows/128)][ceil(K/128)],
//                    row major, as given)
// NVIDIA documents OUTER_VEC_32F, VEC128_32F and BLK128x128_32F for sm_90 only (cuBLAS 12.9+).
// cuBLASLt is used only where the layout it reads is unambiguous: K % 16 == 0, 16-byte aligned
// A, B and C, rows % 4 == 0 for a 1x128 scale and ceil(K/128) % 4 == 0 for a 128x128 scale
// (16-byte scale strides), and enough workspace for the transposed scales. Otherwise, and where
// the heuristic returns no algorithm for the combination of modes, the tensor-core kernel of
// ka_fp8_scaled_mma.cuh runs instead, so every shape is served.
//
// Knobs: HEURISTIC_RANK (the rank-th heuristic result, or its first when it returns fewer) and
// FAST_ACCUM (CUBLASLT_MATMUL_DESC_FAST_ACCUM; knobs.json allows it only without block scales).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <mutex>

#include "ka_fp8_scaled_mma.cuh"
#include "ka_lt_matmul.cuh"
#include "ka_problem.h"

#if !defined(HEURISTIC_RANK) || !defined(FAST_ACCUM)
#error "scaled_gemm_cublaslt needs -DHEURISTIC_RANK=<0..7> and -DFAST_ACCUM=<0|1>"
#endif

#if CUBLAS_VERSION < 120900
#error "scaled_gemm_cublaslt needs cuBLAS 12.9 or newer (the OUTER_VEC / VEC128 / BLK128x128 modes)"
#endif

static_assert(!(FAST_ACCUM && KA_SCALE_BLOCKED),
              "cuBLASLt's block-scaled FP8 kernels have no fast accumulation (knobs.json)");

namespace {

constexpr int kHeuristicResults = 8;  // HEURISTIC_RANK is 0..7
constexpr size_t kScaleAlignment = 256;

thread_local char g_error[512];

int fail(const char* what, cublasStatus_t status) {
  std::snprintf(g_error, sizeof(g_error), "scaled_gemm_cublaslt: %s: %s", what,
                cublasLtGetStatusString(status));
  return 1;
}

int fail(const char* what) {
  std::snprintf(g_error, sizeof(g_error), "scaled_gemm_cublaslt: %s", what);
  return 1;
}

constexpr int32_t scale_mode(int kind) {
  return kind == KA_SCALE_TENSOR        ? CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F
         : kind == KA_SCALE_ROW         ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
         : kind == KA_SCALE_BLOCK_1X128 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                                        : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
}

/// [rows, blocks] row major -> [blocks, rows] row major (rows contiguous), as VEC128_32F reads it.
__global__ void transpose_scales(const float* __restrict__ src, float* __restrict__ dst,
                                 long long rows, long long blocks) {
  const long long total = rows * blocks;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long block = i / rows, row = i % rows;  // consecutive threads write along rows
    dst[i] = src[row * blocks + block];
  }
}

size_t round_up(size_t value, size_t to) {
  return (value + to - 1) / to * to;
}

/// Where the scales cuBLASLt reads lie this call: as given, or transposed into the workspace.
struct Scales {
  const float* lt_a = nullptr;  // our B's
  const float* lt_b = nullptr;  // our A's
  size_t workspace_used = 0;    // bytes of the workspace the transposed copies take
};

/// Whether cuBLASLt may serve this call (see the file comment); fills `scales` when it may.
bool cublaslt_eligible(const KaArgs& ka, void* workspace, size_t workspace_bytes, Scales& scales) {
  const auto aligned = [](const void* p, size_t to) {
    return reinterpret_cast<uintptr_t>(p) % to == 0;
  };
  if (ka.k == 0 || ka.k % 16 != 0) return false;
  if (!aligned(ka.a, 16) || !aligned(ka.b, 16) || !aligned(ka.c, 16)) return false;
  if (!aligned(ka.scale_a, 16) || !aligned(ka.scale_b, 16)) return false;
  size_t used = 0;
  const auto place = [&](int kind, long long rows, const float* given, const float*& out) {
    if (kind == KA_SCALE_BLOCK_1X128) {
      if (rows % 4 != 0) return false;
      const size_t bytes = static_cast<size_t>(rows) * ka.k_blocks * sizeof(float);
      if (workspace == nullptr || !aligned(workspace, kScaleAlignment) ||
          used + round_up(bytes, kScaleAlignment) > workspace_bytes)
        return false;
      out = reinterpret_cast<const float*>(static_cast<char*>(workspace) + used);
      used += round_up(bytes, kScaleAlignment);
      return true;
    }
    if (kind == KA_SCALE_BLOCK_128X128 && ka.k_blocks % 4 != 0) return false;
    out = given;
    return true;
  };
  if (!place(KA_SCALE_B_KIND, ka.n, ka.scale_b, scales.lt_a) ||
      !place(KA_SCALE_A_KIND, ka.m, ka.scale_a, scales.lt_b))
    return false;
  scales.workspace_used = used;
  return true;
}

struct PlanKey {
  long long m, n, k;
  size_t workspace_bytes;  // what cuBLASLt may use, after the scale copies
  unsigned align_a, align_b, align_c;

  bool operator==(const PlanKey& o) const {
    return m == o.m && n == o.n && k == o.k && workspace_bytes == o.workspace_bytes &&
           align_a == o.align_a && align_b == o.align_b && align_c == o.align_c;
  }
};

/// The descriptors and algorithm for one key; `unsupported` when the heuristic had none (the
/// kernel then serves the key without asking again).
struct Plan {
  bool used = false;
  bool unsupported = false;
  PlanKey key{};
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t lt_a = nullptr;  // our B
  cublasLtMatrixLayout_t lt_b = nullptr;  // our A
  cublasLtMatrixLayout_t lt_d = nullptr;  // C^T
  cublasLtMatmulAlgo_t algo{};

  void release() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (lt_a) cublasLtMatrixLayoutDestroy(lt_a);
    if (lt_b) cublasLtMatrixLayoutDestroy(lt_b);
    if (lt_d) cublasLtMatrixLayoutDestroy(lt_d);
    *this = Plan{};
  }
};

template <class T>
cublasStatus_t set_attribute(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attribute,
                             const T& value) {
  return cublasLtMatmulDescSetAttribute(op, attribute, &value, sizeof(value));
}

cublasStatus_t set_scale_pointers(cublasLtMatmulDesc_t op, const Scales& scales) {
  const void* lt_a = scales.lt_a;
  const void* lt_b = scales.lt_b;
  cublasStatus_t status = set_attribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, lt_a);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  return set_attribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, lt_b);
}

/// Descriptors for C^T[N, M] = B[N, K] . A^T[K, M], then the heuristic's choice. The scale
/// pointers are set before the heuristic: cuBLASLt refuses vector scale modes without them.
cublasStatus_t build(cublasLtHandle_t handle, Plan& plan, const Scales& scales) {
  const PlanKey& key = plan.key;
  cublasStatus_t status = cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  const int32_t mode_a = scale_mode(KA_SCALE_B_KIND), mode_b = scale_mode(KA_SCALE_A_KIND);
  const int8_t fast_accum = FAST_ACCUM ? 1 : 0;
  if ((status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, trans_a)) ||
      (status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, trans_b)) ||
      (status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode_a)) ||
      (status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode_b)) ||
      (status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accum)) ||
      (status = set_scale_pointers(plan.op, scales)))
    return status;
  if ((status = cublasLtMatrixLayoutCreate(&plan.lt_a, CUDA_R_8F_E4M3, key.k, key.n, key.k)) ||
      (status = cublasLtMatrixLayoutCreate(&plan.lt_b, CUDA_R_8F_E4M3, key.k, key.m, key.k)) ||
      (status = cublasLtMatrixLayoutCreate(&plan.lt_d, KA_CUDA_TYPE_C, key.n, key.m, key.n)))
    return status;

  cublasLtMatmulPreference_t preference = nullptr;
  if ((status = cublasLtMatmulPreferenceCreate(&preference))) return status;
  const auto set = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    return cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value));
  };
  const uint64_t workspace = key.workspace_bytes;
  const uint32_t align_a = key.align_b, align_b = key.align_a, align_d = key.align_c;
  cublasLtMatmulHeuristicResult_t results[kHeuristicResults] = {};
  int returned = 0;
  if (!(status = set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d)))
    status =
        cublasLtMatmulAlgoGetHeuristic(handle, plan.op, plan.lt_a, plan.lt_b, plan.lt_d, plan.lt_d,
                                       preference, kHeuristicResults, results, &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  // No algorithm, or modes this cuBLASLt or GPU does not offer: the kernel serves the key.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE ||
      (status == CUBLAS_STATUS_SUCCESS && returned <= 0)) {
    plan.unsupported = true;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  plan.algo = results[HEURISTIC_RANK < returned ? HEURISTIC_RANK : 0].algo;
  return CUBLAS_STATUS_SUCCESS;
}

/// The fallback: the tensor-core kernel at scaled_gemm_mma's default point (64 x 128 tiles, 2 x 4
/// warps of 32 x 32, K steps of 128, 3 stages: no spills with block scales under ptxas -v).
int run_kernel(const KaArgs& ka, cudaStream_t stream) {
  const cudaError_t status = ka_fp8::launch<64, 128, 128, 2, 4, 3>(ka, stream);
  if (status == cudaSuccess) return 0;
  std::snprintf(g_error, sizeof(g_error), "scaled_gemm_cublaslt: the fallback kernel: %s",
                cudaGetErrorString(status));
  return 1;
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka))
    return fail(message);
  if (ka.m == 0 || ka.n == 0) return 0;
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  if (workspace == nullptr) workspace_bytes = 0;
  Scales scales;
  if (!cublaslt_eligible(ka, workspace, workspace_bytes, scales))
    return run_kernel(ka, cuda_stream);

  ka_lt::Cache<Plan>& s = ka_lt::cache<Plan>();
  if (s.create_status != CUBLAS_STATUS_SUCCESS) return fail("cublasLtCreate", s.create_status);
  std::lock_guard<std::mutex> lock(s.mutex);
  void* lt_workspace =
      scales.workspace_used ? static_cast<char*>(workspace) + scales.workspace_used : workspace;
  const size_t lt_workspace_bytes = workspace_bytes - scales.workspace_used;
  const PlanKey key{ka.m,
                    ka.n,
                    ka.k,
                    lt_workspace_bytes,
                    ka_lt::alignment_of(reinterpret_cast<uintptr_t>(ka.a)),
                    ka_lt::alignment_of(reinterpret_cast<uintptr_t>(ka.b)),
                    ka_lt::alignment_of(reinterpret_cast<uintptr_t>(ka.c))};
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  Plan* plan = ka_lt::find_plan(
      s, key, [&](cublasLtHandle_t handle, Plan& p) { return build(handle, p, scales); }, status);
  if (!plan) return fail("building the cuBLASLt plan", status);
  if (plan->unsupported) return run_kernel(ka, cuda_stream);

  // The scale copies cuBLASLt reads (1x128 scales transposed), on the same stream.
  const auto transpose = [&](int kind, const float* given, const float* placed, long long rows) {
    if (kind != KA_SCALE_BLOCK_1X128 || ka.k_blocks == 0) return cudaSuccess;
    const long long total = rows * ka.k_blocks;
    const unsigned blocks = static_cast<unsigned>(total / 256 + 1 < 1024 ? total / 256 + 1 : 1024);
    transpose_scales<<<blocks, 256, 0, cuda_stream>>>(given, const_cast<float*>(placed), rows,
                                                      ka.k_blocks);
    return cudaGetLastError();
  };
  cudaError_t launched = transpose(KA_SCALE_B_KIND, ka.scale_b, scales.lt_a, ka.n);
  if (launched == cudaSuccess) launched = transpose(KA_SCALE_A_KIND, ka.scale_a, scales.lt_b, ka.m);
  if (launched != cudaSuccess) {
    std::snprintf(g_error, sizeof(g_error), "scaled_gemm_cublaslt: transposing the scales: %s",
                  cudaGetErrorString(launched));
    return 1;
  }
  // The given scale pointers change between calls (the placed copies do not).
  if ((status = set_scale_pointers(plan->op, scales)))
    return fail("setting the scale pointers", status);
  const float alpha = 1.0f, beta = 0.0f;
  status = cublasLtMatmul(s.handle, plan->op, &alpha, ka.b, plan->lt_a, ka.a, plan->lt_b, &beta,
                          ka.c, plan->lt_d, ka.c, plan->lt_d, &plan->algo, lt_workspace,
                          lt_workspace_bytes, cuda_stream);
  if (status != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmul", status);
  return 0;
}
