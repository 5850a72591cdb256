// RMSNorm and LayerNorm over the last axis, with the fused prologue of the binding (e.g. a
// residual add, whose value may be written out as well), per-row float8 quantization, which
// shares their shape (a reduction over the row, its largest magnitude, then a scaled write),
// and plain reductions of the row to one value (sum, mean, max, min).
// Statistics in float32.
//
// CACHE_ROW: the row is read once into registers (MAX_VECS_PER_THREAD packs of VEC per thread);
// LayerNorm then takes the mean and the sum of squared deviations from the registers (two
// passes over registers, no cancellation). A row too long for the cache, or CACHE_ROW off, is
// streamed: one pass for the statistics (Welford for LayerNorm) and one to write, which
// re-reads the row (from L2 when it is still there).
//
// PRELOAD_WEIGHT (cached rows only): weight and bias are loaded with the row, before the
// reduction, so a short batch waits for one memory round trip instead of two; it costs the
// registers of a second copy of the row's columns.
#include "ka_problem.h"
#include "ka_row_group.cuh"

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

/// y = (x - mean) * rstd * w + b (mean 0 and no bias for RMSNorm), stored.
template <int W>
__device__ __forceinline__ void write_normalized(const KaArgs& ka, long long row, long long col,
                                                 const float (&x)[W], float mean, float rstd,
                                                 const float (&w)[W], const float (&b)[W]) {
  float y[W];
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

/// write_normalized with weight and bias loaded now.
template <int W>
__device__ __forceinline__ void load_and_write_normalized(const KaArgs& ka, long long row,
                                                          long long col, const float (&x)[W],
                                                          float mean, float rstd) {
  float w[W], b[W];
  ka.load_weight<W>(col, w);
  ka.load_bias<W>(col, b);
  write_normalized<W>(ka, row, col, x, mean, rstd, w, b);
}

struct RowNorm {
#if CACHE_ROW
  template <int W>
  static __device__ __forceinline__ void cached(const KaArgs& ka, const RowSlot& slot) {
    CachedRow<W> cache(ka, slot);
#if PRELOAD_WEIGHT
    float w[kCacheSlots<W>][W], b[kCacheSlots<W>][W];
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k) {
      if (!cache.has(k)) continue;
      ka.load_weight<W>(cache.col[k], w[k]);
      ka.load_bias<W>(cache.col[k], b[k]);
    }
#endif
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k) {
      if (!cache.has(k)) continue;
      ka.store_prologue<W>(slot.row, cache.col[k], cache.x[k]);
#if KA_OP_LAYERNORM
#pragma unroll
      for (int i = 0; i < W; ++i) sum += cache.x[k][i];
#else
      sum += sum_of_squares(cache.x[k]);
#endif
    }
    const float inv_cols = 1.0f / static_cast<float>(ka.cols());
    float mean = 0.0f;
#if KA_OP_LAYERNORM
    mean = group_sum(sum, slot.group) * inv_cols;
    float deviations = 0.0f;
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k) {
      if (!cache.has(k)) continue;
#pragma unroll
      for (int i = 0; i < W; ++i) deviations += (cache.x[k][i] - mean) * (cache.x[k][i] - mean);
    }
    const float rstd = ka_rsqrt(group_sum(deviations, slot.group) * inv_cols + KA_EPS);
#else
    const float rstd = ka_rsqrt(group_sum(sum, slot.group) * inv_cols + KA_EPS);
#endif
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k) {
      if (!cache.has(k)) continue;
#if PRELOAD_WEIGHT
      write_normalized<W>(ka, slot.row, cache.col[k], cache.x[k], mean, rstd, w[k], b[k]);
#else
      load_and_write_normalized<W>(ka, slot.row, cache.col[k], cache.x[k], mean, rstd);
#endif
    }
  }
#endif

  template <int W>
  static __device__ __forceinline__ void streamed(const KaArgs& ka, const RowSlot& slot) {
    float state[3] = {0.0f, 0.0f, 0.0f};  // RMSNorm: the sum of squares in state[0]
    stream_row<W>(ka, slot, [&](long long col, const float(&x)[W]) {
      ka.store_prologue<W>(slot.row, col, x);
#if KA_OP_LAYERNORM
      welford_add<W>(state, x);
#else
      state[0] += sum_of_squares(x);
#endif
    });
    const float inv_cols = 1.0f / static_cast<float>(ka.cols());
#if KA_OP_LAYERNORM
    group_reduce(state, WelfordOp(), slot.group);
    const float mean = state[1];
    const float rstd = ka_rsqrt(state[2] * inv_cols + KA_EPS);
#else
    const float mean = 0.0f;
    const float rstd = ka_rsqrt(group_sum(state[0], slot.group) * inv_cols + KA_EPS);
#endif
    stream_row<W>(ka, slot, [&](long long col, const float(&x)[W]) {
      load_and_write_normalized<W>(ka, slot.row, col, x, mean, rstd);
    });
  }
};

#if KA_OP_QUANTIZE
/// The row's dequantization scale from its largest magnitude: torch's
/// amax.clamp(min=1e-12) / fp8_max in float32. ka_max propagates a NaN, as amax does, and the
/// comparison leaves it NaN.
__device__ __forceinline__ float quantize_scale(float local_amax, int group) {
  const float amax = group_max(local_amax, group);
  return __fdiv_rn(amax < 1e-12f ? 1e-12f : amax, KA_FP8_MAX);
}

template <int W>
__device__ __forceinline__ float pack_abs_max(float amax, const float (&x)[W]) {
#pragma unroll
  for (int i = 0; i < W; ++i) amax = ka_max(amax, ka_abs(x[i]));
  return amax;
}

/// x / scale rounded to nearest, as torch divides, then saturated and rounded by the store.
/// A full division per element would cost about as much as the memory traffic, so the row's
/// correctly rounded reciprocal is refined once per element (Markstein: q + (x - q * scale) *
/// (1 / scale) with fused multiply-adds is the correctly rounded quotient when 1 / scale is).
/// It needs no overflow: |x| <= amax <= 448 * scale bounds every quotient.
template <int W>
__device__ __forceinline__ void write_quantized(const KaArgs& ka, long long row, long long col,
                                                const float (&x)[W], float scale, float inv_scale) {
  float y[W];
#pragma unroll
  for (int i = 0; i < W; ++i) {
    const float q = x[i] * inv_scale;
    y[i] = fmaf(fmaf(-q, scale, x[i]), inv_scale, q);
  }
  ka.store_row<W>(row, col, y);
}

/// Per-row float8 quantization: the row's largest magnitude sets its scale, then every element
/// is divided by it and stored in the float8 format; the group's first thread stores the scale.
struct RowQuantize {
#if CACHE_ROW
  template <int W>
  static __device__ __forceinline__ void cached(const KaArgs& ka, const RowSlot& slot) {
    CachedRow<W> cache(ka, slot);
    float amax = 0.0f;
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k)
      if (cache.has(k)) amax = pack_abs_max(amax, cache.x[k]);
    const float scale = quantize_scale(amax, slot.group);
    const float inv_scale = __frcp_rn(scale);
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k)
      if (cache.has(k))
        write_quantized<W>(ka, slot.row, cache.col[k], cache.x[k], scale, inv_scale);
    if (slot.lane_in_row == 0 && slot.cols > 0) ka.store_row_scale(slot.row, scale);
  }
#endif

  template <int W>
  static __device__ __forceinline__ void streamed(const KaArgs& ka, const RowSlot& slot) {
    float amax = 0.0f;
    stream_row<W>(ka, slot, [&](long long, const float(&x)[W]) { amax = pack_abs_max(amax, x); });
    const float scale = quantize_scale(amax, slot.group);
    const float inv_scale = __frcp_rn(scale);
    stream_row<W>(ka, slot, [&](long long col, const float(&x)[W]) {
      write_quantized<W>(ka, slot.row, col, x, scale, inv_scale);
    });
    if (slot.lane_in_row == 0 && slot.cols > 0) ka.store_row_scale(slot.row, scale);
  }
};
#endif

#if KA_OP_REDUCE
/// Sum, mean, max or min of the row in float32, one value per row (NaN propagates, as torch's).
struct RowReduce {
  static __device__ __forceinline__ float identity() {
    return KA_REDUCTION == KA_REDUCE_MAX   ? ka_neg_inf()
           : KA_REDUCTION == KA_REDUCE_MIN ? -ka_neg_inf()
                                           : 0.0f;
  }

  template <int W>
  static __device__ __forceinline__ float fold(float acc, const float (&x)[W]) {
#pragma unroll
    for (int i = 0; i < W; ++i) {
      if constexpr (KA_REDUCTION == KA_REDUCE_MAX) {
        acc = ka_max(acc, x[i]);
      } else if constexpr (KA_REDUCTION == KA_REDUCE_MIN) {
        acc = ka_min(acc, x[i]);
      } else {
        acc += x[i];
      }
    }
    return acc;
  }

  /// Combines the group's partial results and lets the group's first thread store the row's.
  static __device__ __forceinline__ void finish(const KaArgs& ka, const RowSlot& slot, float acc) {
    float value = KA_REDUCTION == KA_REDUCE_MAX   ? group_max(acc, slot.group)
                  : KA_REDUCTION == KA_REDUCE_MIN ? group_min(acc, slot.group)
                                                  : group_sum(acc, slot.group);
    if constexpr (KA_REDUCTION == KA_REDUCE_MEAN) value /= static_cast<float>(ka.cols());
    if (slot.lane_in_row == 0 && slot.cols > 0) ka.store_row_value(slot.row, value);
  }

#if CACHE_ROW
  template <int W>
  static __device__ __forceinline__ void cached(const KaArgs& ka, const RowSlot& slot) {
    CachedRow<W> cache(ka, slot);
    float acc = identity();
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k)
      if (cache.has(k)) acc = fold(acc, cache.x[k]);
    finish(ka, slot, acc);
  }
#endif

  template <int W>
  static __device__ __forceinline__ void streamed(const KaArgs& ka, const RowSlot& slot) {
    float acc = identity();
    stream_row<W>(ka, slot, [&](long long, const float(&x)[W]) { acc = fold(acc, x); });
    finish(ka, slot, acc);
  }
};
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) ka_rownorm(KA_KERNEL_PARAMS) {
#if KA_OP_QUANTIZE
  run_row<RowQuantize>(KA_ARGS);
#elif KA_OP_REDUCE
  run_row<RowReduce>(KA_ARGS);
#else
  run_row<RowNorm>(KA_ARGS);
#endif
}
