// The base-2 online softmax of the CUDA attention templates: exponents are scaled by
// scale * log2(e) so that exponentials are one ex2.approx each, and converted back to natural-log
// units only for the lse output. Usable from nvcc and NVRTC.
#ifndef KA_SOFTMAX_BASE2_CUH
#define KA_SOFTMAX_BASE2_CUH

constexpr float ka_log2e = 1.4426950408889634f;
constexpr float ka_ln2 = 0.6931471805599453f;

__device__ __forceinline__ float ka_neg_inf() {
  return __int_as_float(0xff800000u);
}

// 2^x; ex2.approx(-inf) = +0, which the masked logits rely on.
__device__ __forceinline__ float ka_fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/// One row's step of the online softmax over a tile of keys starting at `n0`, on the scores of
/// the row that this thread holds in an mma accumulator: score(n, e) is the row's score in column
/// 8 n + 2 c4 + e (kGroups groups of 8 columns; the 4 lanes of a quad hold the row). Masks keys
/// at or past `limit` when `masked`, replaces the scores by exp2(scale_log2 * (score - new max))
/// (unnormalised probabilities), folds their sum into this thread's `row_sum` and moves `row_max`
/// (kept in unscaled score units: the scale is positive, so the max commutes with it, and each
/// probability costs one FFMA and one ex2); returns the factor the row's earlier output must be
/// scaled by.
template <int kGroups, typename Score>
__device__ __forceinline__ float ka_online_softmax_row(Score score, int n0, int c4, bool masked,
                                                       int limit, float scale_log2, float& row_max,
                                                       float& row_sum) {
  float tile_max = ka_neg_inf();
#pragma unroll
  for (int n = 0; n < kGroups; ++n) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (masked && n0 + n * 8 + 2 * c4 + e >= limit) score(n, e) = ka_neg_inf();
      tile_max = fmaxf(tile_max, score(n, e));
    }
  }
  tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
  tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
  const float new_max = fmaxf(row_max, tile_max);
  // While every key so far is masked the max is -inf; subtracting 0 instead keeps
  // exp2(-inf - m) = 0 and avoids -inf - -inf = NaN.
  const float base = new_max == ka_neg_inf() ? 0.0f : new_max * scale_log2;
  const float alpha = ka_fast_exp2(fmaf(row_max, scale_log2, -base));
  row_max = new_max;
  float sum = 0.0f;
#pragma unroll
  for (int n = 0; n < kGroups; ++n) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float p = ka_fast_exp2(fmaf(score(n, e), scale_log2, -base));
      score(n, e) = p;
      sum += p;
    }
  }
  row_sum = row_sum * alpha + sum;
  return alpha;
}

/// The row's log-sum-exp in natural-log units from the softmax's final state (row_max in score
/// units, sum the row's whole sum); -inf for a row that saw no key.
__device__ __forceinline__ float ka_softmax_lse(float row_max, float sum, float scale_log2) {
  return sum > 0.0f ? (row_max * scale_log2 + log2f(sum)) * ka_ln2 : ka_neg_inf();
}

#endif  // KA_SOFTMAX_BASE2_CUH
