// The persistent warp-specialised GEMM kernel: C[M, N] = epilogue(A[M, K] * B[N, K]^T).
//
// Warpgroup 0 is the producer: one thread streams BM x 64 tiles of A and BN x 64 tiles of B
// through a STAGES-deep ring of shared memory with TMA (128-byte swizzle), each stage guarded by
// a "full" mbarrier (transaction bytes) and an "empty" one (one arrival per consumer). Warpgroups
// 1..CONSUMERS each own BM / CONSUMERS rows of the CTA tile and issue wgmma m64nBNk16 on the
// stage, keeping one k-step of wgmma in flight before releasing the previous stage. CTAs walk
// the output tiles with a stride of the grid size; the ring runs on across tiles, so the
// producer loads the next tile while the consumers run the epilogue. Out-of-bounds rows and
// K columns arrive zero-filled from TMA, so only the stores check bounds. When the output has
// too few tiles to occupy the GPU (small M), the host splits K: each split writes float32
// partials to the workspace and reduce_splits_kernel sums them and runs the epilogue. With
// CLUSTER 2, pairs of CTAs on adjacent tiles of M share their B tile through TMA multicast
// (ka_sm90_gemm.cuh), halving what L2 serves for B.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "ka_problem.h"
#include "ka_sm90.cuh"
#include "ka_sm90_gemm.cuh"
#include "ka_wgmma.cuh"

namespace ka_gemm {

// K steps of 64 two-byte elements: one 128-byte swizzle row.
using Ring = ka_sm90::RingShape<STAGES, BM, BN, 64, 2, RASTER == KA_RASTER_swizzle, CLUSTER>;
constexpr int kBlockK = Ring::kBlockK;
constexpr int kRowBytes = Ring::kRowBytes;
constexpr int kConsumers = CONSUMERS;
constexpr int kThreads = 128 * (kConsumers + 1);
constexpr int kBlockM = BM;
constexpr int kBlockN = BN;
constexpr int kStages = STAGES;
constexpr int kConsumerRows = kBlockM / kConsumers;
constexpr int kSubtilesM = kConsumerRows / 64;
constexpr int kAccumulators = kBlockN / 2;  // per thread, per m64 subtile
constexpr int kTileBytesA = Ring::kTileBytesA;
constexpr int kTileBytesB = Ring::kTileBytesB;
constexpr int kSharedBytes = Ring::kSharedBytes;
constexpr bool kF16 = std::is_same_v<ka_a_t, __half>;

static_assert(std::is_same_v<ka_a_t, ka_b_t>, "gemm_wgmma: A and B must have the same type");
static_assert(std::is_same_v<ka_a_t, __nv_bfloat16> || std::is_same_v<ka_a_t, __half>,
              "gemm_wgmma: A and B must be bfloat16 or float16");
static_assert(KA_A_K_MAJOR == 1 && KA_B_K_MAJOR == 1, "gemm_wgmma: A and B must be K-major");
static_assert(kConsumerRows % 64 == 0, "BM must be a multiple of 64 * CONSUMERS");
static_assert(kSubtilesM * kAccumulators <= 128, "accumulators exceed the register budget");

/// Writes one consumer's m64 x BN accumulator block at (row0, col0): through the epilogue, or
/// raw into `partial` (this split's [M, N] float32 slice) when the K range is split.
__device__ __forceinline__ void store_tile(const KaArgs& ka, const float (&acc)[kAccumulators],
                                           long long row0, long long col0, float* partial) {
  const long long row_top = ka_wgmma::accumulator_row(row0);
  const long long col_lane = ka_wgmma::accumulator_column(col0);
  const bool pairs = ka.n % 2 == 0;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const long long row = row_top + 8 * half;
    if (row >= ka.m) continue;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
      const long long col = col_lane + 8 * j;
      const float pair[2] = {acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1]};
      if (partial != nullptr) {
        float* out = partial + row * ka.n + col;
        if (pairs) {
          if (col < ka.n) *reinterpret_cast<float2*>(out) = make_float2(pair[0], pair[1]);
        } else {
          if (col < ka.n) out[0] = pair[0];
          if (col + 1 < ka.n) out[1] = pair[1];
        }
      } else if (pairs) {
        if (col < ka.n) ka.store<2>(row, col, pair);
      } else {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float one[1] = {pair[e]};
          if (col + e < ka.n) ka.store<1>(row, col + e, one);
        }
      }
    }
  }
}

/// A consumer warpgroup's walk: the wgmmas of its rows of each tile's K steps, then the epilogue.
__device__ __forceinline__ void consume(int consumer, const KaArgs& ka,
                                        const ka_sm90::RingTiles<Ring>& tiles,
                                        const ka_sm90::WorkUnits<Ring>& work,
                                        unsigned long long* full, unsigned long long* empty,
                                        float* partials, int splits) {
  const bool signals = threadIdx.x % 128 == 0;
  const uint32_t a_base = ka_sm90::smem_address(tiles.a) + consumer * kConsumerRows * kRowBytes;
  const uint32_t b_base = ka_sm90::smem_address(tiles.b);
  float acc[kSubtilesM][kAccumulators];
  int step = 0;
  for (int unit = work.first(); unit < work.units; unit += work.stride()) {
    const ka_sm90::TileCoord t = work.tile(unit);
    const int k_begin = work.k_begin(unit), k_end = work.k_end(unit);
#pragma unroll
    for (int i = 0; i < kSubtilesM; ++i)
#pragma unroll
      for (int j = 0; j < kAccumulators; ++j) acc[i][j] = 0.0f;

    int previous = 0;
    for (int k = k_begin; k < k_end; ++k, ++step) {
      const int s = step % kStages;
      ka_sm90::mbarrier_wait(&full[s], (step / kStages) & 1);
#pragma unroll
      for (int i = 0; i < kSubtilesM; ++i)
#pragma unroll
        for (int j = 0; j < kAccumulators; ++j) ka_sm90::fence_register(acc[i][j]);
      ka_sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBlockK / 16; ++kk) {
        const uint64_t desc_b = ka_sm90::smem_descriptor_128b(b_base + s * kTileBytesB + kk * 32);
#pragma unroll
        for (int i = 0; i < kSubtilesM; ++i) {
          const uint64_t desc_a = ka_sm90::smem_descriptor_128b(a_base + s * kTileBytesA +
                                                                i * 64 * kRowBytes + kk * 32);
          ka_wgmma::Mma<kBlockN, kF16>::run(acc[i], desc_a, desc_b, 1);
        }
      }
      ka_sm90::wgmma_commit();
#pragma unroll
      for (int i = 0; i < kSubtilesM; ++i)
#pragma unroll
        for (int j = 0; j < kAccumulators; ++j) ka_sm90::fence_register(acc[i][j]);
      if (k > k_begin) {
        // The previous k-step's wgmma group has finished reading its stage.
        ka_sm90::wgmma_wait<1>();
        if (signals) ka_sm90::release_stage<Ring>(empty, previous);
      }
      previous = s;
    }
    ka_sm90::wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < kSubtilesM; ++i)
#pragma unroll
      for (int j = 0; j < kAccumulators; ++j) ka_sm90::fence_register(acc[i][j]);
    if (k_end > k_begin && signals) ka_sm90::release_stage<Ring>(empty, previous);

    float* partial = splits > 1 ? partials + unit % splits * ka.m * ka.n : nullptr;
#pragma unroll
    for (int i = 0; i < kSubtilesM; ++i)
      store_tile(ka, acc[i],
                 static_cast<long long>(t.m) * kBlockM + consumer * kConsumerRows + i * 64,
                 static_cast<long long>(t.n) * kBlockN, partial);
  }
}

#if CLUSTER > 1
#define KA_GEMM_CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define KA_GEMM_CLUSTER_DIMS
#endif

__global__ void KA_GEMM_CLUSTER_DIMS __launch_bounds__(kThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a,
                      const __grid_constant__ CUtensorMap map_b, const KaArgs ka, float* partials,
                      int splits, int split_steps) {
  extern __shared__ uint8_t shared_raw[];
  __shared__ unsigned long long full[kStages];
  __shared__ unsigned long long empty[kStages];
  const ka_sm90::RingTiles<Ring> tiles(shared_raw);
  const ka_sm90::WorkUnits<Ring> work(ka.m, ka.n, ka.k, splits, split_steps);
  ka_sm90::init_ring<Ring>(full, empty, kConsumers);
  ka_sm90::run_warp_specialised<Ring, kConsumers>(
      &map_a, &map_b, tiles, full, empty, work,
      [&](int consumer) { consume(consumer, ka, tiles, work, full, empty, partials, splits); });
}

/// Split-K: sums the float32 partial products of every split and applies the epilogue.
__global__ void reduce_splits_kernel(const KaArgs ka, const float* partials, int splits) {
  const long long slice = ka.m * ka.n;
  const bool pairs = ka.n % 2 == 0;
  const long long items = pairs ? slice / 2 : slice;
  for (long long item = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; item < items;
       item += static_cast<long long>(gridDim.x) * blockDim.x) {
    if (pairs) {
      const long long index = 2 * item;
      float sum[2] = {0.0f, 0.0f};
      for (int s = 0; s < splits; ++s) {
        const float2 v = *reinterpret_cast<const float2*>(partials + s * slice + index);
        sum[0] += v.x;
        sum[1] += v.y;
      }
      ka.store<2>(index / ka.n, index % ka.n, sum);
    } else {
      float sum[1] = {0.0f};
      for (int s = 0; s < splits; ++s) sum[0] += partials[s * slice + item];
      ka.store<1>(item / ka.n, item % ka.n, sum);
    }
  }
}

}  // namespace ka_gemm
