// cuBLASLt GEMM for the gemm family: C[M, N] = epilogue(A . B^T) (or A . B for B [K, N]), row
// major. cuBLASLt's native epilogues (bias, relu, gelu and their bias forms) run inside its
// kernel; any other epilogue (the problem's own expression over the product, per-column vectors,
// full [M, N] operands and scalars) runs as a second, element-wise pass over C that reads the
// product cuBLASLt stored there and writes the epilogue's value in place. That is what serves a
// float32 product with a custom epilogue (KernelBench's Linear layers followed by activations),
// which no tensor-core template takes. For a 16-bit C the product is rounded to C's type before
// the epilogue reads it, as eager PyTorch rounds a matmul's result before the next operation.
//
// cuBLASLt is column major. A row-major [M, N] matrix is the column-major [N, M] matrix C^T, so
// the template asks cuBLASLt for C^T = op(B)^T . op(A)^T: cuBLASLt's "A" operand is our B and its
// "B" operand is our A. A per-column bias of C is then a per-row bias of C^T, which is the form
// CUBLASLT_EPILOGUE_BIAS applies (a vector as long as D has rows).
//
// Knobs: MODE (KA_MODE_heuristic: the HEURISTIC_RANK-th result of cublasLtMatmulAlgoGetHeuristic,
// or its first when it returns fewer; KA_MODE_table: the configuration that
// tools/cublaslt_tune compiled into ka_cublaslt_table.h for this shape, or the heuristic's first
// choice when the shape is absent or cuBLASLt rejects the configuration here).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <type_traits>

#include "ka_lt_matmul.cuh"
#include "ka_problem.h"

#if !defined(MODE) || !defined(HEURISTIC_RANK) || !defined(KA_MODE_table)
#error "gemm_cublaslt needs -DMODE=<index> -DHEURISTIC_RANK=<0..7> and the KA_MODE_* labels"
#endif

#if MODE == KA_MODE_table && __has_include("ka_cublaslt_table.h")
#include "ka_cublaslt_table.h"
#define KA_USE_CUBLASLT_TABLE 1
#else
#define KA_USE_CUBLASLT_TABLE 0
#endif

static_assert(KA_EPILOGUE_KIND <= KA_EPILOGUE_CUSTOM, "an epilogue kind this template predates");

namespace {

constexpr int kHeuristicResults = 8;  // HEURISTIC_RANK is 0..7

/// The cudaDataType_t of a bias element (the header's ka_*_t or float).
template <class T>
constexpr cudaDataType_t cuda_type_of() {
  static_assert(
      std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half> || std::is_same_v<T, float>,
      "a cuBLASLt bias is bfloat16, float16 or float32");
  return std::is_same_v<T, __nv_bfloat16> ? CUDA_R_16BF
         : std::is_same_v<T, __half>      ? CUDA_R_16F
                                          : CUDA_R_32F;
}

using BiasElement = std::remove_cv_t<std::remove_pointer_t<decltype(KaArgs::bias)>>;

constexpr bool kHasBias = KA_EPILOGUE_KIND == KA_EPILOGUE_BIAS ||
                          KA_EPILOGUE_KIND == KA_EPILOGUE_BIAS_RELU ||
                          KA_EPILOGUE_KIND == KA_EPILOGUE_BIAS_GELU;

constexpr bool kCustomEpilogue = KA_EPILOGUE_KIND == KA_EPILOGUE_CUSTOM;

constexpr cublasLtEpilogue_t native_epilogue() {
  switch (KA_EPILOGUE_KIND) {
    case KA_EPILOGUE_BIAS:
      return CUBLASLT_EPILOGUE_BIAS;
    case KA_EPILOGUE_RELU:
      return CUBLASLT_EPILOGUE_RELU;
    case KA_EPILOGUE_GELU:
      return CUBLASLT_EPILOGUE_GELU;
    case KA_EPILOGUE_BIAS_RELU:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case KA_EPILOGUE_BIAS_GELU:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
    default:
      return CUBLASLT_EPILOGUE_DEFAULT;
  }
}

thread_local char g_error[512];

int fail(const char* what, cublasStatus_t status) {
  std::snprintf(g_error, sizeof(g_error), "gemm_cublaslt: %s: %s", what,
                cublasLtGetStatusString(status));
  return 1;
}

int fail(const char* what) {
  std::snprintf(g_error, sizeof(g_error), "gemm_cublaslt: %s", what);
  return 1;
}

/// The largest power of two (up to 256) that divides the address: cuBLASLt picks kernels by the
/// alignment it is promised, so the plan must promise only what the pointers give.
unsigned alignment_of(const void* pointer) {
  return ka_lt::alignment_of(reinterpret_cast<uintptr_t>(pointer));
}

struct PlanKey {
  long long m, n, k;
  size_t workspace_bytes;
  unsigned align_a, align_b, align_c, align_bias;

  bool operator==(const PlanKey& other) const {
    return m == other.m && n == other.n && k == other.k &&
           workspace_bytes == other.workspace_bytes && align_a == other.align_a &&
           align_b == other.align_b && align_c == other.align_c && align_bias == other.align_bias;
  }
};

/// Everything cublasLtMatmul needs for one shape, built on its first call.
struct Plan {
  bool used = false;
  PlanKey key{};
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t lt_a = nullptr;  // cuBLASLt's A: our B
  cublasLtMatrixLayout_t lt_b = nullptr;  // cuBLASLt's B: our A
  cublasLtMatrixLayout_t lt_c = nullptr;  // C^T, also D
  cublasLtMatmulAlgo_t algo{};

  void release() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (lt_a) cublasLtMatrixLayoutDestroy(lt_a);
    if (lt_b) cublasLtMatrixLayoutDestroy(lt_b);
    if (lt_c) cublasLtMatrixLayoutDestroy(lt_c);
    *this = Plan{};
  }
};

template <class T>
cublasStatus_t set_attribute(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attribute,
                             const T& value) {
  return cublasLtMatmulDescSetAttribute(op, attribute, &value, sizeof(value));
}

template <class T>
cublasStatus_t set_config(cublasLtMatmulAlgo_t& algo,
                          cublasLtMatmulAlgoConfigAttributes_t attribute, const T& value) {
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, attribute, &value, sizeof(value));
}

/// Descriptors for C^T[N, M] = op(B)[N, K] . op(A)[K, M] in column-major terms. Row-major B
/// [N, K] is column-major [K, N] with ld K, hence transposed; row-major B [K, N] is column-major
/// [N, K] with ld N, used as is. Likewise A [M, K] is column-major [K, M] (no transpose) and
/// A [K, M] is column-major [M, K] (transposed). The bias pointer is set before the algorithm is
/// chosen: cuBLASLt reads the alignment a kernel may assume from it.
cublasStatus_t create_descriptors(Plan& plan, const void* bias) {
  const PlanKey& key = plan.key;
  cublasStatus_t status = cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const cublasOperation_t trans_b_operand = KA_B_K_MAJOR ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_a_operand = KA_A_K_MAJOR ? CUBLAS_OP_N : CUBLAS_OP_T;
  if ((status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, trans_b_operand)) ||
      (status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, trans_a_operand)) ||
      (status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, native_epilogue())))
    return status;
  if (kHasBias) {
    const int32_t bias_type = cuda_type_of<BiasElement>();
    if ((status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type)) ||
        (status = set_attribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias)))
      return status;
  }
  const uint64_t b_rows = KA_B_K_MAJOR ? key.k : key.n, b_cols = KA_B_K_MAJOR ? key.n : key.k;
  const uint64_t a_rows = KA_A_K_MAJOR ? key.k : key.m, a_cols = KA_A_K_MAJOR ? key.m : key.k;
  if ((status = cublasLtMatrixLayoutCreate(&plan.lt_a, KA_CUDA_TYPE_B, b_rows, b_cols, b_rows)) ||
      (status = cublasLtMatrixLayoutCreate(&plan.lt_b, KA_CUDA_TYPE_A, a_rows, a_cols, a_rows)) ||
      (status = cublasLtMatrixLayoutCreate(&plan.lt_c, KA_CUDA_TYPE_C, key.n, key.m, key.n)))
    return status;
  return CUBLAS_STATUS_SUCCESS;
}

/// The heuristic's rank-th result (its first when it returns fewer), within the workspace and the
/// pointers' alignment.
cublasStatus_t heuristic_algo(cublasLtHandle_t handle, Plan& plan, int rank) {
  cublasLtMatmulPreference_t preference = nullptr;
  cublasStatus_t status = cublasLtMatmulPreferenceCreate(&preference);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const uint64_t workspace = plan.key.workspace_bytes;
  const uint32_t align_a = plan.key.align_b, align_b = plan.key.align_a, align_c = plan.key.align_c;
  cublasLtMatmulHeuristicResult_t results[kHeuristicResults] = {};
  int returned = 0;
  const auto set = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    return cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value));
  };
  if (!(status = set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c))) {
    status =
        cublasLtMatmulAlgoGetHeuristic(handle, plan.op, plan.lt_a, plan.lt_b, plan.lt_c, plan.lt_c,
                                       preference, kHeuristicResults, results, &returned);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (returned <= 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  plan.algo = results[rank < returned ? rank : 0].algo;
  return CUBLAS_STATUS_SUCCESS;
}

#if KA_USE_CUBLASLT_TABLE
const KaCublasLtConfig* find_table_entry(const PlanKey& key) {
  for (const KaCublasLtConfig& entry : ka_cublaslt_table) {
    if (entry.m == key.m && entry.n == key.n && entry.k == key.k &&
        entry.a_k_major == KA_A_K_MAJOR && entry.b_k_major == KA_B_K_MAJOR &&
        entry.type_a == KA_CUDA_TYPE_A && entry.type_b == KA_CUDA_TYPE_B &&
        entry.type_c == KA_CUDA_TYPE_C)
      return &entry;
  }
  return nullptr;
}

bool capability_at_most(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t cap,
                        uint32_t alignment) {
  uint32_t required = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, cap, &required, sizeof(required), &written) !=
      CUBLAS_STATUS_SUCCESS)
    return true;  // an older cuBLASLt without the capability: AlgoCheck has the last word
  return required <= alignment;
}

/// The tuned configuration for the plan's shape, when the table has one and cuBLASLt accepts it
/// here: a valid configuration, within the workspace, and the pointers aligned as it needs.
bool table_algo(cublasLtHandle_t handle, Plan& plan) {
  const KaCublasLtConfig* entry = find_table_entry(plan.key);
  if (!entry) return false;
  cublasLtMatmulAlgo_t algo{};
  if (cublasLtMatmulAlgoInit(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, KA_CUDA_TYPE_B, KA_CUDA_TYPE_A,
                             KA_CUDA_TYPE_C, KA_CUDA_TYPE_C, entry->algo_id,
                             &algo) != CUBLAS_STATUS_SUCCESS)
    return false;
  const uint32_t tile = entry->tile, stages = entry->stages, reduction = entry->reduction,
                 swizzle = entry->swizzle, custom = entry->custom;
  const int32_t split_k = entry->split_k;
  const uint16_t inner_shape = entry->inner_shape, cluster = entry->cluster;
  if (set_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, tile) ||
      set_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, stages) ||
      set_config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, split_k) ||
      set_config(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, reduction) ||
      set_config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, swizzle) ||
      set_config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, custom) ||
      set_config(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, inner_shape) ||
      set_config(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster))
    return false;
  cublasLtMatmulHeuristicResult_t result{};
  if (cublasLtMatmulAlgoCheck(handle, plan.op, plan.lt_a, plan.lt_b, plan.lt_c, plan.lt_c, &algo,
                              &result) != CUBLAS_STATUS_SUCCESS ||
      result.workspaceSize > plan.key.workspace_bytes)
    return false;
  if (!capability_at_most(algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, plan.key.align_b) ||
      !capability_at_most(algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES, plan.key.align_a) ||
      !capability_at_most(algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, plan.key.align_c) ||
      !capability_at_most(algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES, plan.key.align_c))
    return false;
  plan.algo = algo;
  return true;
}
#endif

cublasStatus_t choose_algo(cublasLtHandle_t handle, Plan& plan) {
#if KA_USE_CUBLASLT_TABLE
  if (table_algo(handle, plan)) return CUBLAS_STATUS_SUCCESS;
#endif
  return heuristic_algo(handle, plan, MODE == KA_MODE_table ? 0 : HEURISTIC_RANK);
}

/// The plan for `key`: cached, or built now.
Plan* find_plan(ka_lt::Cache<Plan>& cache, const PlanKey& key, const void* bias,
                cublasStatus_t& status, const char*& step) {
  return ka_lt::find_plan(
      cache, key,
      [&](cublasLtHandle_t handle, Plan& plan) {
        step = "creating the matmul descriptors";
        const cublasStatus_t created = create_descriptors(plan, bias);
        if (created != CUBLAS_STATUS_SUCCESS) return created;
        step =
            "choosing an algorithm (no cuBLASLt algorithm serves this shape, types and workspace)";
        return choose_algo(handle, plan);
      },
      status);
}

constexpr int kEpilogueThreads = 256;
constexpr long long kMaxEpilogueBlocks = 1 << 20;  // a grid-stride loop covers larger outputs

/// C[row, col + i] = epilogue(C[row, col + i]) for kCount consecutive elements a thread: the
/// product cuBLASLt left in C is the epilogue's acc. kCount > 1 needs n % kCount == 0 and C
/// aligned for a 16-byte access (KaArgs::store's vector store).
template <int kCount>
__global__ void __launch_bounds__(kEpilogueThreads) apply_epilogue(KaArgs args) {
  const long long vectors = args.m * args.n / kCount;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors;
       v += stride) {
    const long long first = v * kCount;
    float acc[kCount];
    for (int i = 0; i < kCount; ++i) acc[i] = ka_to_float(args.c[first + i]);
    args.store<kCount>(first / args.n, first % args.n, acc);
  }
}

template <int kCount>
int launch_epilogue(const KaArgs& args, cudaStream_t stream) {
  const long long vectors = args.m * args.n / kCount;
  const long long blocks = (vectors + kEpilogueThreads - 1) / kEpilogueThreads;
  apply_epilogue<kCount>
      <<<static_cast<unsigned>(blocks < kMaxEpilogueBlocks ? blocks : kMaxEpilogueBlocks),
         kEpilogueThreads, 0, stream>>>(args);
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    std::snprintf(g_error, sizeof(g_error), "gemm_cublaslt: launching the epilogue: %s",
                  cudaGetErrorString(error));
    return 1;
  }
  return 0;
}

/// The custom epilogue's pass, 16 bytes a thread where n and C's address allow it.
int run_custom_epilogue(const KaArgs& args, cudaStream_t stream) {
  constexpr int kVector = 16 / static_cast<int>(sizeof(ka_c_t));
  if (args.n % kVector == 0 && alignment_of(args.c) >= 16)
    return launch_epilogue<kVector>(args, stream);
  return launch_epilogue<1>(args, stream);
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs args;
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &args))
    return fail(message);
  if (args.m == 0 || args.n == 0) return 0;
  if (args.k == 0) return fail("K == 0 is not served (cuBLASLt needs a reduced dimension)");
  if (kHasBias && args.bias == nullptr) return fail("the bias epilogue has no bias pointer");
  if (workspace == nullptr) workspace_bytes = 0;

  ka_lt::Cache<Plan>& s = ka_lt::cache<Plan>();
  if (s.create_status != CUBLAS_STATUS_SUCCESS) return fail("cublasLtCreate", s.create_status);
  std::lock_guard<std::mutex> lock(s.mutex);
  const PlanKey key{args.m,
                    args.n,
                    args.k,
                    workspace_bytes,
                    alignment_of(args.a),
                    alignment_of(args.b),
                    alignment_of(args.c),
                    alignment_of(args.bias)};
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  const char* step = "";
  const void* bias = args.bias;
  Plan* plan = find_plan(s, key, bias, status, step);
  if (!plan) return fail(step, status);
  if (kHasBias) {
    // The pointer changes between calls; only its alignment (part of the key) shaped the plan.
    if ((status = set_attribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias)))
      return fail("setting the bias pointer", status);
  }
  const float alpha = 1.0f, beta = 0.0f;
  status = cublasLtMatmul(s.handle, plan->op, &alpha, args.b, plan->lt_a, args.a, plan->lt_b, &beta,
                          args.c, plan->lt_c, args.c, plan->lt_c, &plan->algo, workspace,
                          workspace_bytes, static_cast<cudaStream_t>(stream));
  if (status != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmul", status);
  if constexpr (kCustomEpilogue)
    return run_custom_epilogue(args, static_cast<cudaStream_t>(stream));
  return 0;
}
