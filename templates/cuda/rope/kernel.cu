// Rotary position embedding, NeoX layout: for each token and head, the first half x1 and the
// second half x2 of the head become (x1 * cos - x2 * sin, x2 * cos + x1 * sin), with the token's
// cos and sin. The products and the sum are rounded one by one (no fused multiply-add), as
// torch computes them in float32, so the result matches its rounding.
//
// A thread owns one column chunk of the half head (VEC columns) for the whole block: it loads the
// chunk's cos and sin once per token and rotates that chunk of every kHeadStride-th head,
// HEAD_UNROLL heads' loads in flight at a time.
#include "ka_problem.h"

constexpr int kChunks = KA_ROTARY_HALF / VEC;  // column chunks per half head
constexpr int kHeadStride = BLOCK_THREADS / kChunks;
static_assert(KA_ROTARY_HALF % VEC == 0 && BLOCK_THREADS % kChunks == 0,
              "a block covers whole half heads");

template <int W>
__device__ __forceinline__ void rotate(const float (&x1)[W], const float (&x2)[W],
                                       const float (&c)[W], const float (&s)[W], float (&y1)[W],
                                       float (&y2)[W]) {
#pragma unroll
  for (int i = 0; i < W; ++i) {
    y1[i] = __fsub_rn(__fmul_rn(x1[i], c[i]), __fmul_rn(x2[i], s[i]));
    y2[i] = __fadd_rn(__fmul_rn(x2[i], c[i]), __fmul_rn(x1[i], s[i]));
  }
}

/// Rotates columns [col, col + W) of both halves of this thread's heads of one token.
template <int W>
__device__ __forceinline__ void rotate_token(const KaArgs& ka, long long token, int col,
                                             int first_head) {
  float c[W], s[W];
  ka.load_cos<W>(token, col, c);
  ka.load_sin<W>(token, col, s);
  const long long heads = ka.heads();
  for (long long head = first_head; head < heads; head += kHeadStride * HEAD_UNROLL) {
    float x1[HEAD_UNROLL][W], x2[HEAD_UNROLL][W];
#pragma unroll
    for (int u = 0; u < HEAD_UNROLL; ++u) {
      const long long h = head + u * kHeadStride;
      if (h >= heads) continue;
      ka.load_head<W>(token, h, col, x1[u]);
      ka.load_head<W>(token, h, col + KA_ROTARY_HALF, x2[u]);
    }
#pragma unroll
    for (int u = 0; u < HEAD_UNROLL; ++u) {
      const long long h = head + u * kHeadStride;
      if (h >= heads) continue;
      float y1[W], y2[W];
      rotate<W>(x1[u], x2[u], c, s, y1, y2);
      ka.store_head<W>(token, h, col, y1);
      ka.store_head<W>(token, h, col + KA_ROTARY_HALF, y2);
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) ka_rope(KA_KERNEL_PARAMS) {
  const KaArgs ka = KA_ARGS;
  const int chunk = threadIdx.x % kChunks;
  const int first_head = threadIdx.x / kChunks;
  const bool packed = VEC > 1 && ka.vector_ok(VEC);
  for (int t = 0; t < TOKENS_PER_BLOCK; ++t) {
    const long long token = static_cast<long long>(blockIdx.x) * TOKENS_PER_BLOCK + t;
    if (token >= ka.tokens()) return;
    if (packed) {
      rotate_token<VEC>(ka, token, chunk * VEC, first_head);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) rotate_token<1>(ka, token, chunk * VEC + e, first_head);
    }
  }
}
