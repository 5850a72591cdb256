// Softmax and logsumexp over the last axis, with the fused prologue of the binding (e.g. a
// scale), in float32.
//
// ALGORITHM three_pass: the row maximum, then the sum of exp(x - max), then the output.
// ALGORITHM online: a running {max, sum} per thread, rescaled when the maximum grows and merged
// across threads in one reduction: one pass fewer over a streamed row, one barrier fewer over a
// cached one.
// CACHE_ROW: the row is read once into registers (MAX_VECS_PER_THREAD packs of VEC per thread);
// a row too long for the cache, or CACHE_ROW off, is re-read from memory on each pass.
#include "ka_problem.h"
#include "ka_row_group.cuh"

/// The exponent shift for a maximum: a row of -inf (or no column) sums exp(-inf) = 0, as
/// torch.logsumexp does, instead of exp(-inf - -inf) = NaN.
__device__ __forceinline__ float shift_of(float max_value) {
  return max_value == ka_neg_inf() ? 0.0f : max_value;
}

/// Folds {max, sum of exp(x - max)} states.
struct OnlineOp {
  __device__ __forceinline__ void operator()(float (&a)[2], const float (&b)[2]) const {
    const float max_value = ka_max(a[0], b[0]);
    const float shift = shift_of(max_value);
    a[1] = a[1] * ka_exp(a[0] - shift) + b[1] * ka_exp(b[0] - shift);
    a[0] = max_value;
  }
};

template <int W>
__device__ __forceinline__ float max_of(const float (&x)[W]) {
  float m = x[0];
#pragma unroll
  for (int i = 1; i < W; ++i) m = ka_max(m, x[i]);
  return m;
}

template <int W>
__device__ __forceinline__ float exp_sum(const float (&x)[W], float shift) {
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < W; ++i) sum += ka_exp(x[i] - shift);
  return sum;
}

template <int W>
__device__ __forceinline__ void online_add(float (&state)[2], const float (&x)[W]) {
  const float m = max_of(x);
  const float batch[2] = {m, exp_sum(x, shift_of(m))};
  OnlineOp()(state, batch);
}

/// Writes the result of a row from its {max, sum}: exp(x - max) / sum per column (softmax),
/// or max + log(sum) once (logsumexp).
template <int W>
__device__ __forceinline__ void write_softmax(const KaArgs& ka, long long row, long long col,
                                              const float (&x)[W], float shift, float sum) {
#if KA_OP_SOFTMAX
  float y[W];
#pragma unroll
  for (int i = 0; i < W; ++i) y[i] = ka_exp(x[i] - shift) / sum;
  ka.store_row<W>(row, col, y);
#else
  (void)ka, (void)row, (void)col, (void)x, (void)shift, (void)sum;
#endif
}

__device__ __forceinline__ void write_logsumexp(const KaArgs& ka, const RowSlot& slot,
                                                float max_value, float sum) {
#if KA_OP_LOGSUMEXP
  if (slot.lane_in_row == 0 && slot.row < ka.rows())
    ka.store_row_value(slot.row, max_value + ka_log(sum));
#else
  (void)ka, (void)slot, (void)max_value, (void)sum;
#endif
}

struct RowSoftmax {
#if CACHE_ROW
  template <int W>
  static __device__ __forceinline__ void cached(const KaArgs& ka, const RowSlot& slot) {
    CachedRow<W> cache(ka, slot);
#if ALGORITHM == KA_ALGORITHM_online
    float state[2] = {ka_neg_inf(), 0.0f};
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k) {
      if (!cache.has(k)) continue;
      ka.store_prologue<W>(slot.row, cache.col[k], cache.x[k]);
      online_add<W>(state, cache.x[k]);
    }
    group_reduce(state, OnlineOp(), slot.group);
    const float max_value = state[0], sum = state[1];
    const float shift = shift_of(max_value);
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k)
      if (cache.has(k)) write_softmax<W>(ka, slot.row, cache.col[k], cache.x[k], shift, sum);
#else
    float local_max = ka_neg_inf();
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k) {
      if (!cache.has(k)) continue;
      ka.store_prologue<W>(slot.row, cache.col[k], cache.x[k]);
      local_max = ka_max(local_max, max_of(cache.x[k]));
    }
    const float max_value = group_max(local_max, slot.group);
    const float shift = shift_of(max_value);
    float local_sum = 0.0f;
    // The exponentials replace the inputs in the registers: each is computed once.
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k) {
      if (!cache.has(k)) continue;
#pragma unroll
      for (int i = 0; i < W; ++i) {
        cache.x[k][i] = ka_exp(cache.x[k][i] - shift);
        local_sum += cache.x[k][i];
      }
    }
    const float sum = group_sum(local_sum, slot.group);
#if KA_OP_SOFTMAX
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k) {
      if (!cache.has(k)) continue;
      float y[W];
#pragma unroll
      for (int i = 0; i < W; ++i) y[i] = cache.x[k][i] / sum;
      ka.store_row<W>(slot.row, cache.col[k], y);
    }
#endif
#endif
    write_logsumexp(ka, slot, max_value, sum);
  }
#endif

  template <int W>
  static __device__ __forceinline__ void streamed(const KaArgs& ka, const RowSlot& slot) {
#if ALGORITHM == KA_ALGORITHM_online
    float state[2] = {ka_neg_inf(), 0.0f};
    stream_row<W>(ka, slot, [&](long long col, const float(&x)[W]) {
      ka.store_prologue<W>(slot.row, col, x);
      online_add<W>(state, x);
    });
    group_reduce(state, OnlineOp(), slot.group);
    const float max_value = state[0], sum = state[1];
#else
    float local_max = ka_neg_inf();
    stream_row<W>(ka, slot, [&](long long col, const float(&x)[W]) {
      ka.store_prologue<W>(slot.row, col, x);
      local_max = ka_max(local_max, max_of(x));
    });
    const float max_value = group_max(local_max, slot.group);
    float local_sum = 0.0f;
    stream_row<W>(ka, slot, [&](long long, const float(&x)[W]) {
      local_sum += exp_sum(x, shift_of(max_value));
    });
    const float sum = group_sum(local_sum, slot.group);
#endif
#if KA_OP_SOFTMAX
    const float shift = shift_of(max_value);
    stream_row<W>(ka, slot, [&](long long col, const float(&x)[W]) {
      write_softmax<W>(ka, slot.row, col, x, shift, sum);
    });
#endif
    write_logsumexp(ka, slot, max_value, sum);
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) ka_rowsoftmax(KA_KERNEL_PARAMS) {
  run_row<RowSoftmax>(KA_ARGS);
}
