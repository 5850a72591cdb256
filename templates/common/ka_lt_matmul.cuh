// A strided, batched matrix product through cuBLASLt for generated code (the fused family's
// library route): D[b, m, n] = alpha * sum_k A[b, m, k] B[b, k, n] (+ C[b, m, n]), every
// operand given by element strides. ka_lt_matmul says why not instead of failing when cuBLASLt
// cannot read the operands as they lie (no element stride of one along a matrix dimension,
// batch dimensions that do not collapse into one stride, a shape no algorithm serves), so that
// the caller runs its own kernel.
//
// cuBLASLt is column major. With D's n stride 1 (row major) it computes D^T = B^T A^T, where
// B^T and A^T are read as stored (transposed or not by their strides), and D^T is column major
// with leading dimension D's m stride; with D's m stride 1 it computes D = A B as is.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <mutex>

constexpr int KA_LT_MAX_BATCH = 8;
// Plans kept per process; a template that runs more distinct shapes a call (a grouped GEMM's
// per-expert products) defines a larger count before including this header.
#ifndef KA_LT_MAX_PLANS
#define KA_LT_MAX_PLANS 16
#endif

struct KaLtMatmul {
  cudaDataType_t type_ab = CUDA_R_32F, type_d = CUDA_R_32F;
  long long m = 0, n = 0, k = 0;
  int batch_rank = 0;
  long long batch[KA_LT_MAX_BATCH] = {};
  long long a_batch[KA_LT_MAX_BATCH] = {}, b_batch[KA_LT_MAX_BATCH] = {},
            d_batch[KA_LT_MAX_BATCH] = {}, c_batch[KA_LT_MAX_BATCH] = {};
  long long a_m = 0, a_k = 0, b_k = 0, b_n = 0, d_m = 0, d_n = 0, c_m = 0, c_n = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;  ///< a residual with D's strides, or nullptr
  void* d = nullptr;
  float alpha = 1;
  /// When > 0: the algorithm is the one cuBLASLt's heuristic gives for algo_m rows, run for m
  /// (where cuBLASLt accepts it for m). A caller whose m follows its data (a grouped GEMM's rows
  /// per expert) names a representative count here, so that every call runs the same kernels.
  long long algo_m = 0;
};

namespace ka_lt {

constexpr int kMaxPlans = KA_LT_MAX_PLANS;
constexpr int kMaxOuterCalls = 64;  // batch dims that do not collapse: one call per outer index
constexpr unsigned kMaxAlignment = 256;

/// A logical rows x cols matrix read by cuBLASLt as stored: op N (column major, ld) or op T
/// (its transpose is column major).
struct Operand {
  cublasOperation_t op = CUBLAS_OP_N;
  uint64_t rows = 0, cols = 0;  ///< of the stored column-major matrix
  int64_t ld = 0;
};

/// Element (i, j) at s_r * i + s_c * j. A dimension of size one takes any stride.
inline bool read_as_stored(long long r, long long c, long long s_r, long long s_c, Operand& out) {
  if (r == 1 || s_r == 1) {
    const long long ld = c == 1 ? r : s_c;
    if (ld >= r && ld >= 1) {
      out = {CUBLAS_OP_N, (uint64_t)r, (uint64_t)c, ld};
      return true;
    }
  }
  if (c == 1 || s_c == 1) {
    const long long ld = r == 1 ? c : s_r;
    if (ld >= c && ld >= 1) {
      out = {CUBLAS_OP_T, (uint64_t)c, (uint64_t)r, ld};
      return true;
    }
  }
  return false;
}

inline unsigned alignment_of(uintptr_t value) {
  if (value == 0) return kMaxAlignment;
  const uintptr_t lowest_bit = value & (~value + 1);
  return lowest_bit >= kMaxAlignment ? kMaxAlignment : (unsigned)lowest_bit;
}

/// One cuBLASLt call's shape: the layouts, the batch and the promised alignments.
struct Key {
  cudaDataType_t type_ab, type_d;
  Operand x, y, d;
  bool pinned;  ///< the algorithm is chosen for the shape of hx, hy, hd (KaLtMatmul::algo_m)
  Operand hx, hy, hd;
  long long batch_count, x_stride, y_stride, d_stride;
  bool residual;
  unsigned align_x, align_y, align_d;
  size_t workspace_bytes;

  bool operator==(const Key& o) const {
    const auto same = [](const Operand& p, const Operand& q) {
      return p.op == q.op && p.rows == q.rows && p.cols == q.cols && p.ld == q.ld;
    };
    return type_ab == o.type_ab && type_d == o.type_d && same(x, o.x) && same(y, o.y) &&
           same(d, o.d) && pinned == o.pinned &&
           (!pinned || (same(hx, o.hx) && same(hy, o.hy) && same(hd, o.hd))) &&
           batch_count == o.batch_count && x_stride == o.x_stride && y_stride == o.y_stride &&
           d_stride == o.d_stride && residual == o.residual && align_x == o.align_x &&
           align_y == o.align_y && align_d == o.align_d && workspace_bytes == o.workspace_bytes;
  }
};

struct Plan {
  bool used = false;
  Key key{};
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};

  void release() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (x) cublasLtMatrixLayoutDestroy(x);
    if (y) cublasLtMatrixLayoutDestroy(y);
    if (d) cublasLtMatrixLayoutDestroy(d);
    *this = Plan{};
  }
};

/// One cuBLASLt handle per process and the plans (type P, with `used`, `key` and release())
/// built so far, the oldest evicted first when all are taken.
template <class P>
struct Cache {
  std::mutex mutex;
  cublasLtHandle_t handle = nullptr;
  cublasStatus_t create_status = CUBLAS_STATUS_NOT_INITIALIZED;
  P plans[kMaxPlans];
  int next_victim = 0;
};

/// Created on first use and never destroyed: at exit the CUDA context may already be gone, and
/// destroying a handle then can crash.
template <class P>
Cache<P>& cache() {
  static Cache<P>* instance = [] {
    Cache<P>* created = new Cache<P>;
    created->create_status = cublasLtCreate(&created->handle);
    return created;
  }();
  return *instance;
}

/// The plan for `key`: cached, or built now by build(handle, plan) (the only place that
/// allocates); nullptr with `status` when building fails.
template <class P, class K, class Build>
P* find_plan(Cache<P>& c, const K& key, Build&& build, cublasStatus_t& status) {
  for (P& plan : c.plans)
    if (plan.used && plan.key == key) return &plan;
  P& plan = c.plans[c.next_victim];
  c.next_victim = (c.next_victim + 1) % kMaxPlans;
  plan.release();
  plan.key = key;
  if ((status = build(c.handle, plan)) != CUBLAS_STATUS_SUCCESS) {
    plan.release();
    return nullptr;
  }
  plan.used = true;
  return &plan;
}

inline cublasStatus_t layout(cublasLtMatrixLayout_t& out, cudaDataType_t type, const Operand& o,
                             long long batch_count, long long batch_stride) {
  cublasStatus_t status = cublasLtMatrixLayoutCreate(&out, type, o.rows, o.cols, o.ld);
  if (status != CUBLAS_STATUS_SUCCESS || batch_count == 1) return status;
  const int32_t count = (int32_t)batch_count;
  const int64_t stride = batch_stride;
  if ((status = cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                 sizeof(count))))
    return status;
  return cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                          sizeof(stride));
}

inline cublasStatus_t build(cublasLtHandle_t handle, Plan& plan) {
  const Key& key = plan.key;
  cublasStatus_t status = cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (status) return status;
  if ((status = cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &key.x.op,
                                               sizeof(key.x.op))) ||
      (status = cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &key.y.op,
                                               sizeof(key.y.op))) ||
      (status = layout(plan.x, key.type_ab, key.x, key.batch_count, key.x_stride)) ||
      (status = layout(plan.y, key.type_ab, key.y, key.batch_count, key.y_stride)) ||
      (status = layout(plan.d, key.type_d, key.d, key.batch_count, key.d_stride)))
    return status;
  cublasLtMatmulPreference_t preference = nullptr;
  if ((status = cublasLtMatmulPreferenceCreate(&preference))) return status;
  const auto set = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    return cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value));
  };
  const uint64_t workspace = key.workspace_bytes;
  const uint32_t align_x = key.align_x, align_y = key.align_y, align_d = key.align_d;
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  if (!(status = set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_x)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_y)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d)) &&
      !(status = set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d))) {
    if (key.pinned) {
      // The representative shape's plan (cached like any other, so its heuristic runs once),
      // its algorithm kept where cuBLASLt accepts it for this shape.
      Key representative = key;
      representative.pinned = false;
      representative.x = key.hx;
      representative.y = key.hy;
      representative.d = key.hd;
      cublasStatus_t ignored = CUBLAS_STATUS_SUCCESS;
      const Plan* chosen = find_plan(cache<Plan>(), representative, build, ignored);
      cublasLtMatmulHeuristicResult_t checked{};
      if (chosen &&
          cublasLtMatmulAlgoCheck(handle, plan.op, plan.x, plan.y, plan.d, plan.d, &chosen->algo,
                                  &checked) == CUBLAS_STATUS_SUCCESS &&
          checked.workspaceSize <= workspace) {
        result.algo = chosen->algo;
        returned = 1;
      }
    }
    if (returned <= 0)
      status = cublasLtMatmulAlgoGetHeuristic(handle, plan.op, plan.x, plan.y, plan.d, plan.d,
                                              preference, 1, &result, &returned);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  if (status) return status;
  if (returned <= 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  plan.algo = result.algo;
  return CUBLAS_STATUS_SUCCESS;
}

inline const char* why(const char* what, cublasStatus_t status = CUBLAS_STATUS_SUCCESS) {
  static thread_local char message[256];
  if (status == CUBLAS_STATUS_SUCCESS)
    std::snprintf(message, sizeof(message), "cuBLASLt: %s", what);
  else
    std::snprintf(message, sizeof(message), "cuBLASLt: %s: %s", what,
                  cublasLtGetStatusString(status));
  return message;
}

}  // namespace ka_lt

/// Runs the product on `stream`: nullptr, or why cuBLASLt did not (nothing was launched then).
inline const char* ka_lt_matmul(const KaLtMatmul& call, void* workspace, size_t workspace_bytes,
                                cudaStream_t stream) {
  using namespace ka_lt;
  if (call.m == 0 || call.n == 0) return nullptr;
  if (call.k == 0) return why("k is 0");
  if (call.batch_rank < 0 || call.batch_rank > KA_LT_MAX_BATCH) return why("too many batch dims");
  // Batch dims of size one drop out; neighbours whose strides nest merge into one.
  long long size[KA_LT_MAX_BATCH], sa[KA_LT_MAX_BATCH], sb[KA_LT_MAX_BATCH], sd[KA_LT_MAX_BATCH];
  int dims = 0;
  for (int i = 0; i < call.batch_rank; ++i) {
    if (call.batch[i] == 0) return nullptr;
    if (call.batch[i] == 1) continue;
    if (call.c && call.c_batch[i] != call.d_batch[i])
      return why("the residual's batch strides differ from the destination's");
    if (dims > 0 && sa[dims - 1] == call.a_batch[i] * call.batch[i] &&
        sb[dims - 1] == call.b_batch[i] * call.batch[i] &&
        sd[dims - 1] == call.d_batch[i] * call.batch[i]) {
      size[dims - 1] *= call.batch[i];
      sa[dims - 1] = call.a_batch[i];
      sb[dims - 1] = call.b_batch[i];
      sd[dims - 1] = call.d_batch[i];
      continue;
    }
    size[dims] = call.batch[i];
    sa[dims] = call.a_batch[i];
    sb[dims] = call.b_batch[i];
    sd[dims] = call.d_batch[i];
    ++dims;
  }
  long long outer = 1;
  for (int i = 0; i + 1 < dims; ++i) outer *= size[i];
  if (outer > kMaxOuterCalls) return why("the batch dims do not collapse into one stride");
  if (dims > 0 && sd[dims - 1] == 0) return why("the destination repeats along a batch dim");
  if (call.c && ((call.m > 1 && call.c_m != call.d_m) || (call.n > 1 && call.c_n != call.d_n)))
    return why("the residual's strides differ from the destination's");

  // D^T = B^T A^T for a row-major D, else D = A B.
  Key key{};
  key.type_ab = call.type_ab;
  key.type_d = call.type_d;
  const bool transposed = call.n == 1 || call.d_n == 1;
  const auto operands = [&](long long m, Operand& d, Operand& x, Operand& y) {
    const bool served = transposed ? read_as_stored(call.n, m, call.d_n, call.d_m, d) &&
                                         read_as_stored(call.n, call.k, call.b_n, call.b_k, x) &&
                                         read_as_stored(call.k, m, call.a_k, call.a_m, y)
                                   : read_as_stored(m, call.n, call.d_m, call.d_n, d) &&
                                         read_as_stored(m, call.k, call.a_m, call.a_k, x) &&
                                         read_as_stored(call.k, call.n, call.b_k, call.b_n, y);
    return served && d.op == CUBLAS_OP_N;
  };
  if (!operands(call.m, key.d, key.x, key.y))
    return why("no element stride of one along a matrix dimension of every operand");
  key.pinned = call.algo_m > 0 && call.algo_m != call.m &&
               operands(call.algo_m, key.hd, key.hx, key.hy) && key.hx.op == key.x.op &&
               key.hy.op == key.y.op;
  const long long element_ab = call.type_ab == CUDA_R_32F ? 4 : 2;
  const long long element_d = call.type_d == CUDA_R_32F ? 4 : 2;
  const char* x = static_cast<const char*>(transposed ? call.b : call.a);
  const char* y = static_cast<const char*>(transposed ? call.a : call.b);
  const long long* sx = transposed ? sb : sa;
  const long long* sy = transposed ? sa : sb;
  key.batch_count = dims > 0 ? size[dims - 1] : 1;
  key.x_stride = dims > 0 ? sx[dims - 1] : 0;
  key.y_stride = dims > 0 ? sy[dims - 1] : 0;
  key.d_stride = dims > 0 ? sd[dims - 1] : 0;
  key.residual = call.c != nullptr;
  // Every call's pointers start at the base plus multiples of the strides: promise only what
  // all of them give.
  const auto promise = [&](const void* base, const long long* strides, long long element) {
    unsigned a = alignment_of(reinterpret_cast<uintptr_t>(base));
    for (int i = 0; i < dims; ++i) {
      const unsigned s = alignment_of((uintptr_t)(strides[i] * element));
      a = s < a ? s : a;
    }
    return a;
  };
  key.align_x = promise(x, sx, element_ab);
  key.align_y = promise(y, sy, element_ab);
  key.align_d = promise(call.d, sd, element_d);
  if (call.c) {
    const unsigned c = promise(call.c, sd, element_d);
    key.align_d = c < key.align_d ? c : key.align_d;
  }
  key.workspace_bytes = workspace ? workspace_bytes : 0;

  Cache<Plan>& s = cache<Plan>();
  if (s.create_status != CUBLAS_STATUS_SUCCESS) return why("cublasLtCreate", s.create_status);
  std::lock_guard<std::mutex> lock(s.mutex);
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  Plan* plan = find_plan(s, key, build, status);
  if (!plan) return why("no algorithm serves this shape", status);
  const float alpha = call.alpha, beta = call.c ? 1.0f : 0.0f;
  for (long long o = 0; o < outer; ++o) {
    long long ox = 0, oy = 0, od = 0;
    for (long long rest = o, i = dims - 2; i >= 0; --i) {
      const long long at = rest % size[i];
      rest /= size[i];
      ox += at * sx[i];
      oy += at * sy[i];
      od += at * sd[i];
    }
    char* d = static_cast<char*>(call.d) + od * element_d;
    const char* c = call.c ? static_cast<const char*>(call.c) + od * element_d : d;
    status = cublasLtMatmul(s.handle, plan->op, &alpha, x + ox * element_ab, plan->x,
                            y + oy * element_ab, plan->y, &beta, c, plan->d, d, plan->d,
                            &plan->algo, workspace, key.workspace_bytes, stream);
    // The caller's own kernel then writes every element again.
    if (status != CUBLAS_STATUS_SUCCESS) return why("cublasLtMatmul", status);
  }
  return nullptr;
}
