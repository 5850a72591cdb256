// RMSNorm and LayerNorm over the last axis, with the fused prologue of the binding (e.g. a
// residual add, whose value may be written out as well). Statistics in float32.
//
// CACHE_ROW: the row is read once into registers (MAX_VECS_PER_THREAD packs of VEC per thread);
// LayerNorm then takes the mean and the sum of squared deviations from the registers (two
// passes over registers, no cancellation). A row too long for the cache, or CACHE_ROW off, is
// streamed: one pass for the statistics (Welford for LayerNorm) and one to write, which
// re-reads the row (from L2 when it is still there).
#include "ka_problem.h"
#include "row_group.cuh"

/// Register cache per thread, in packs of W: the same registers whatever the width.
template <int W>
constexpr int kCacheSlots = MAX_VECS_PER_THREAD* VEC / W;

/// Chan et al.'s merge of {count, mean, sum of squared deviations}.
struct WelfordOp {
  __device__ __forceinline__ void operator()(float (&a)[3], const float (&b)[3]) const {
    const float n = a[0] + b[0];
    if (n == 0.0f) return;
    const float delta = b[1] - a[1];
    const float b_share = b[0] / n;
    a[1] += delta * b_share;
    a[2] += b[2] + delta * delta * a[0] * b_share;
    a[0] = n;
  }
};

template <int W>
__device__ __forceinline__ void welford_add(float (&state)[3], const float (&x)[W]) {
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < W; ++i) sum += x[i];
  const float mean = sum / W;
  float m2 = 0.0f;
#pragma unroll
  for (int i = 0; i < W; ++i) m2 += (x[i] - mean) * (x[i] - mean);
  const float batch[3] = {static_cast<float>(W), mean, m2};
  WelfordOp()(state, batch);
}

template <int W>
__device__ __forceinline__ float sum_of_squares(const float (&x)[W]) {
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < W; ++i) sum += x[i] * x[i];
  return sum;
}

/// y = (x - mean) * rstd * weight + bias (mean 0 and no bias for RMSNorm), stored.
template <int W>
__device__ __forceinline__ void write_normalized(const KaArgs& ka, long long row, long long col,
                                                 const float (&x)[W], float mean, float rstd) {
  float w[W], b[W], y[W];
  ka.load_weight<W>(col, w);
  ka.load_bias<W>(col, b);
#pragma unroll
  for (int i = 0; i < W; ++i) {
#if KA_OP_LAYERNORM
    y[i] = (x[i] - mean) * rstd * w[i] + b[i];
#else
    y[i] = x[i] * rstd * w[i];
    (void)mean, (void)b;
#endif
  }
  ka.store_row<W>(row, col, y);
}

#if CACHE_ROW
template <int W>
__device__ __forceinline__ void normalize_cached(const KaArgs& ka, const RowSlot& slot) {
  constexpr int kSlots = kCacheSlots<W>;
  float x[kSlots][W];
  long long col[kSlots];
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    col[k] = (static_cast<long long>(k) * kThreadsPerRow + slot.lane_in_row) * W;
    if (col[k] < slot.cols) ka.load_row<W>(slot.row, col[k], x[k]);
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    if (col[k] >= slot.cols) continue;
    ka.store_prologue<W>(slot.row, col[k], x[k]);
#if KA_OP_LAYERNORM
#pragma unroll
    for (int i = 0; i < W; ++i) sum += x[k][i];
#else
    sum += sum_of_squares(x[k]);
#endif
  }
  const float inv_cols = 1.0f / static_cast<float>(ka.cols());
  float mean = 0.0f;
#if KA_OP_LAYERNORM
  mean = group_sum(sum, slot.group) * inv_cols;
  float deviations = 0.0f;
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    if (col[k] >= slot.cols) continue;
#pragma unroll
    for (int i = 0; i < W; ++i) deviations += (x[k][i] - mean) * (x[k][i] - mean);
  }
  const float rstd = ka_rsqrt(group_sum(deviations, slot.group) * inv_cols + KA_EPS);
#else
  const float rstd = ka_rsqrt(group_sum(sum, slot.group) * inv_cols + KA_EPS);
#endif
#pragma unroll
  for (int k = 0; k < kSlots; ++k)
    if (col[k] < slot.cols) write_normalized<W>(ka, slot.row, col[k], x[k], mean, rstd);
}
#endif

template <int W>
__device__ __forceinline__ void normalize_streamed(const KaArgs& ka, const RowSlot& slot) {
  constexpr long long kStride = static_cast<long long>(kThreadsPerRow) * W;
  const long long first = static_cast<long long>(slot.lane_in_row) * W;
  float state[3] = {0.0f, 0.0f, 0.0f};  // RMSNorm: the sum of squares in state[0]
  for (long long base = first; base < slot.cols; base += kStride * kPassUnroll) {
    float x[kPassUnroll][W];
#pragma unroll
    for (int u = 0; u < kPassUnroll; ++u)
      if (base + u * kStride < slot.cols) ka.load_row<W>(slot.row, base + u * kStride, x[u]);
#pragma unroll
    for (int u = 0; u < kPassUnroll; ++u) {
      if (base + u * kStride >= slot.cols) continue;
      ka.store_prologue<W>(slot.row, base + u * kStride, x[u]);
#if KA_OP_LAYERNORM
      welford_add<W>(state, x[u]);
#else
      state[0] += sum_of_squares(x[u]);
#endif
    }
  }
  const float inv_cols = 1.0f / static_cast<float>(ka.cols());
#if KA_OP_LAYERNORM
  group_reduce(state, WelfordOp(), slot.group);
  const float mean = state[1];
  const float rstd = ka_rsqrt(state[2] * inv_cols + KA_EPS);
#else
  const float mean = 0.0f;
  const float rstd = ka_rsqrt(group_sum(state[0], slot.group) * inv_cols + KA_EPS);
#endif
  for (long long base = first; base < slot.cols; base += kStride * kPassUnroll) {
    float x[kPassUnroll][W];
#pragma unroll
    for (int u = 0; u < kPassUnroll; ++u)
      if (base + u * kStride < slot.cols) ka.load_row<W>(slot.row, base + u * kStride, x[u]);
#pragma unroll
    for (int u = 0; u < kPassUnroll; ++u)
      if (base + u * kStride < slot.cols)
        write_normalized<W>(ka, slot.row, base + u * kStride, x[u], mean, rstd);
  }
}

template <int W>
__device__ __forceinline__ void normalize(const KaArgs& ka, const RowSlot& slot) {
#if CACHE_ROW
  // Decided on the row length, not on the slot: every group of the block takes the same path,
  // so the barriers of the reductions match.
  if (ka.cols() <= static_cast<long long>(kCacheSlots<W>) * kThreadsPerRow * W) {
    normalize_cached<W>(ka, slot);
    return;
  }
#endif
  normalize_streamed<W>(ka, slot);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) ka_rownorm(KA_KERNEL_PARAMS) {
  const KaArgs ka = KA_ARGS;
  const RowSlot slot = row_slot(ka);
  if (VEC > 1 && ka.vector_ok(VEC)) {
    normalize<VEC>(ka, slot);
  } else {
    normalize<1>(ka, slot);
  }
}
