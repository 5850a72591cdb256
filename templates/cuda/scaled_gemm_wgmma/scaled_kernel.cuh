// The persistent warp-specialised FP8 GEMM of the scaled_gemm family on Hopper:
//   C[m, n] = sum_k A[m, k] B[n, k] a_scale(m, k / 128) b_scale(n, k / 128), A and B e4m3.
//
// The pipeline is gemm_wgmma's (warpgroup 0 streams BM x 128 and BN x 128 byte tiles with TMA
// through a STAGES-deep ring guarded by full/empty mbarriers; warpgroups 1..CONSUMERS each own
// BM / CONSUMERS rows and issue wgmma m64nBNk32 e4m3; CTAs walk the output tiles persistently).
// A K step is 128 bytes, one 128B-swizzle row, which is also one scale block of K, so the block
// scales apply per step.
//
// Accumulation. Hopper's FP8 wgmma keeps fewer accumulator bits than float32 across a long K
// (DeepSeek-V3 measured about 14), so with PROMOTE (always with block scales) each K step goes
// to its own accumulators (the first wgmma of the step overwrites them) and is then added in
// float32 registers, times a_scale * b_scale of that block when the scales are blocked:
// CUTLASS's and DeepGEMM's "promotion" every 128 K. That needs the step's wgmmas finished
// (wait_group 0) before the add, so a consumer does not overlap its own steps; with two
// consumers the other warpgroup's wgmmas fill the gap. Without PROMOTE (row or tensor scales
// only) the wgmmas accumulate across all of K with one step in flight, as gemm_wgmma does,
// cuBLASLt's "fast accumulation". Row and tensor scales multiply once in the epilogue.
//
// Schedule. Cooperative: the consumers split each BM x BN tile by rows and work on it together,
// so the tensor cores idle while they both store it. PINGPONG (two consumers): each consumer
// owns whole BM x BN tiles, every other unit of the CTA's walk; the ring hands the units' K steps
// out in order, so one consumer's epilogue runs while the other's wgmmas run (CUTLASS's
// "ping-pong" kernels). The consumers take turns: one starts waiting for its unit's stages only
// once the other has received its last stage. A ring barrier's parity wait tells phases apart
// only within one lap of the ring, and a unit's first stage can be laps ahead of what the
// producer has loaded for the other's unit.
//
// The epilogue multiplies the accumulators by their row and column scales before storing any of
// them. With a scale load before each store, no load could move above the stores before it (C
// may alias the scales as far as the compiler knows), so every pair of outputs waited a load's
// latency: long_scoreboard was the top stall of the first profile on an H100 (0.51x _scaled_mm).
//
// CLUSTER 2 pairs CTAs on adjacent tiles of M and one tile of N: each loads half of the B tile
// into both (TMA multicast), so L2 serves each B tile once per pair. On an H100 the first
// sweep's slower points moved 4.6-5.5 TB/s from L2 into shared memory, the likely ceiling; the
// 128 x 256 tiles need 704 MB at M 4096, N 7168, K 2048 (0.19 ms at 3.6 TB/s), 470 MB with B
// shared.
//
// Small M splits K over the idle multiprocessors: float32 partials in the workspace (block
// scales already applied), summed by reduce_splits_kernel, which applies the rest.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "ka_problem.h"
#include "ka_sm90.cuh"
#include "ka_sm90_gemm.cuh"
#include "ka_wgmma.cuh"

namespace ka_scaled {

// K steps of 128 one-byte elements: a 128-byte swizzle row, and one scale block.
using Ring = ka_sm90::RingShape<STAGES, BM, BN, 128, 1, RASTER == KA_RASTER_swizzle, CLUSTER>;
constexpr int kBlockK = Ring::kBlockK;
constexpr int kRowBytes = Ring::kRowBytes;
constexpr int kConsumers = CONSUMERS;
constexpr bool kPingpong = PINGPONG;
constexpr int kThreads = 128 * (kConsumers + 1);
constexpr int kBlockM = BM;
constexpr int kBlockN = BN;
constexpr int kStages = STAGES;
constexpr int kConsumerRows = kPingpong ? kBlockM : kBlockM / kConsumers;
// Consumer warpgroups that read each ring stage (the arrivals its "empty" barrier waits for).
constexpr int kStageReaders = kPingpong ? 1 : kConsumers;
constexpr int kSubtilesM = kConsumerRows / 64;
constexpr int kAccumulators = kBlockN / 2;  // per thread, per m64 subtile
constexpr int kTileBytesA = Ring::kTileBytesA;
constexpr int kTileBytesB = Ring::kTileBytesB;
constexpr int kSharedBytes = Ring::kSharedBytes;
constexpr bool kPromote = PROMOTE || KA_SCALE_BLOCKED;
constexpr int kWgmmaK = 32;  // bytes of K per wgmma m64nNk32 e4m3

static_assert(KA_SCALE_BLOCK_K == kBlockK, "a K step must be one scale block");
static_assert(kConsumerRows % 64 == 0, "a consumer's rows must be a multiple of 64");
static_assert(!kPingpong || kConsumers == 2, "ping-pong needs two consumers");
static_assert(kSubtilesM * kAccumulators * (kPromote ? 2 : 1) <= 128,
              "accumulators exceed the register budget");

using Mma = ka_wgmma::MmaSs<kBlockN, ka_wgmma::kE4m3>;

/// The scale the epilogue applies to C[row, col]: the row and column scales when they do not
/// change along K (the block scales were applied per step).
__device__ __forceinline__ float output_scale(const KaArgs& ka, long long row, long long col) {
#if KA_SCALE_BLOCKED
  (void)ka, (void)row, (void)col;
  return 1.0f;
#else
  return ka.a_scale(row, 0) * ka.b_scale(col, 0);
#endif
}

/// Stores two adjacent outputs (col, col + 1) of one row, whichever are inside C.
__device__ __forceinline__ void store_pair(const KaArgs& ka, long long row, long long col, float v0,
                                           float v1, bool pairs) {
  ka_c_t* out = ka.c + row * ka.n + col;
  if (pairs) {
    struct alignas(2 * sizeof(ka_c_t)) Pair {
      ka_c_t v[2];
    } pair;
    pair.v[0] = ka_from_float<ka_c_t>(v0);
    pair.v[1] = ka_from_float<ka_c_t>(v1);
    *reinterpret_cast<Pair*>(out) = pair;
    return;
  }
  out[0] = ka_from_float<ka_c_t>(v0);
  if (col + 1 < ka.n) out[1] = ka_from_float<ka_c_t>(v1);
}

using ka_wgmma::accumulator_column;
using ka_wgmma::accumulator_row;

/// Multiplies one consumer's m64 x BN accumulator block at (row0, col0) by the row and column
/// scales that do not change along K (none with block scales: they were applied per step).
__device__ __forceinline__ void scale_tile(const KaArgs& ka, float (&acc)[kAccumulators],
                                           long long row0, long long col0) {
#if KA_SCALE_BLOCKED
  (void)ka, (void)acc, (void)row0, (void)col0;
#else
  const long long row_top = accumulator_row(row0), col_lane = accumulator_column(col0);
  float row_scale[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const long long row = row_top + 8 * half;
    row_scale[half] = row < ka.m ? ka.a_scale(row, 0) : 0.0f;
  }
#pragma unroll
  for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const long long col = col_lane + 8 * j + e;
      const float column_scale = col < ka.n ? ka.b_scale(col, 0) : 0.0f;
#pragma unroll
      for (int half = 0; half < 2; ++half)
        acc[4 * j + 2 * half + e] *= row_scale[half] * column_scale;
    }
  }
#endif
}

/// Writes one consumer's m64 x BN accumulator block at (row0, col0): into C (scaled by
/// scale_tile), or raw into `partial` (this split's [M, N] float32 slice) when K is split.
__device__ __forceinline__ void store_tile(const KaArgs& ka, const float (&acc)[kAccumulators],
                                           long long row0, long long col0, float* partial,
                                           bool pairs) {
  const long long row_top = accumulator_row(row0), col_lane = accumulator_column(col0);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const long long row = row_top + 8 * half;
    if (row >= ka.m) continue;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
      const long long col = col_lane + 8 * j;
      if (col >= ka.n) continue;
      const float v0 = acc[4 * j + 2 * half], v1 = acc[4 * j + 2 * half + 1];
      if (partial == nullptr) {
        store_pair(ka, row, col, v0, v1, pairs);
      } else {
        float* out = partial + row * ka.n + col;
        out[0] = v0;
        if (col + 1 < ka.n) out[1] = v1;
      }
    }
  }
}

/// One K block's scales for a consumer's m64 x BN subtile, read before its wgmmas finish: the
/// thread's two rows, and its columns (one value per 128-column block for 128x128 blocks of B,
/// two per 8-column group otherwise). Rows and columns outside C get 0.
struct StepScales {
  static constexpr bool kPerColumnBlock = KA_SCALE_B_KIND == KA_SCALE_BLOCK_128X128;
  static constexpr int kColumns = kPerColumnBlock ? (kBlockN + 127) / 128 : kBlockN / 4;
  float row[2];
  float column[kColumns];

  __device__ __forceinline__ void load(const KaArgs& ka, long long row0, long long col0,
                                       long long kb) {
    const long long row_top = accumulator_row(row0);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const long long r = row_top + 8 * half;
      row[half] = r < ka.m ? ka.a_scale(r, kb) : 0.0f;
    }
#pragma unroll
    for (int c = 0; c < kColumns; ++c) {
      // A tile starts at a multiple of 64 columns, so one 128-column block holds a BN = 64 tile.
      const long long col =
          kPerColumnBlock ? col0 + 128 * c : accumulator_column(col0) + 8 * (c / 2) + c % 2;
      column[c] = col < ka.n ? ka.b_scale(col, kb) : 0.0f;
    }
  }

  /// The scale of column 8 j + 2 (lane % 4) + e of the subtile.
  __device__ __forceinline__ float column_scale(int j, int e) const {
    return kPerColumnBlock ? column[8 * j / 128] : column[2 * j + e];
  }
};

/// acc += part * a_scale(row, kb) * b_scale(col, kb) with block scales, acc += part otherwise.
__device__ __forceinline__ void promote(float (&acc)[kAccumulators],
                                        const float (&part)[kAccumulators],
                                        const StepScales& scales) {
#if KA_SCALE_BLOCKED
#pragma unroll
  for (int j = 0; j < kBlockN / 8; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        acc[4 * j + 2 * half + e] +=
            part[4 * j + 2 * half + e] * scales.row[half] * scales.column_scale(j, e);
#else
  (void)scales;
#pragma unroll
  for (int j = 0; j < kAccumulators; ++j) acc[j] += part[j];
#endif
}

template <int kCount>
__device__ __forceinline__ void fence_all(float (&values)[kSubtilesM][kCount]) {
#pragma unroll
  for (int i = 0; i < kSubtilesM; ++i)
#pragma unroll
    for (int j = 0; j < kCount; ++j) ka_sm90::fence_register(values[i][j]);
}

/// A consumer warpgroup's walk: the wgmmas of its tiles' K steps and their epilogues.
__device__ __forceinline__ void consume(int consumer, const KaArgs& ka,
                                        const ka_sm90::RingTiles<Ring>& tiles,
                                        const ka_sm90::WorkUnits<Ring>& work,
                                        unsigned long long* full, unsigned long long* empty,
                                        unsigned long long* order, float* partials, int splits) {
  const bool signals = threadIdx.x % 128 == 0;
  const uint32_t a_base =
      ka_sm90::smem_address(tiles.a) + (kPingpong ? 0 : consumer * kConsumerRows * kRowBytes);
  const uint32_t b_base = ka_sm90::smem_address(tiles.b);
  const bool pairs = ka.n % 2 == 0 && reinterpret_cast<uintptr_t>(ka.c) % (2 * sizeof(ka_c_t)) == 0;
  float acc[kSubtilesM][kAccumulators];
  float part[kSubtilesM][kAccumulators];  // one K step's products (with kPromote)
  // One K step's wgmmas from stage s into `d`, accumulating or (the first) overwriting.
  const auto issue = [&](float(&d)[kSubtilesM][kAccumulators], int s, bool accumulate) {
    fence_all(d);
    ka_sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockK / kWgmmaK; ++kk) {
      const uint64_t desc_b =
          ka_sm90::smem_descriptor_128b(b_base + s * kTileBytesB + kk * kWgmmaK);
#pragma unroll
      for (int i = 0; i < kSubtilesM; ++i) {
        const uint64_t desc_a = ka_sm90::smem_descriptor_128b(a_base + s * kTileBytesA +
                                                              i * 64 * kRowBytes + kk * kWgmmaK);
        Mma::run(d[i], desc_a, desc_b, accumulate || kk > 0);
      }
    }
    ka_sm90::wgmma_commit();
  };
  int step = 0;  // the ring position of this unit's first K step
  int turn = 0;  // the unit's place in the CTA's walk
  int mine = 0;  // units this consumer has run
  for (int unit = work.first(); unit < work.units; unit += work.stride(), ++turn) {
    const int k_begin = work.k_begin(unit), k_end = work.k_end(unit);
    if (kPingpong && turn % kConsumers != consumer) {  // the other consumer's unit
      step += k_end - k_begin;
      continue;
    }
    const ka_sm90::TileCoord t = work.tile(unit);
    const long long row0 =
        static_cast<long long>(t.m) * kBlockM + (kPingpong ? 0 : consumer * kConsumerRows);
    const long long col0 = static_cast<long long>(t.n) * kBlockN;
#pragma unroll
    for (int i = 0; i < kSubtilesM; ++i)
#pragma unroll
      for (int j = 0; j < kAccumulators; ++j) acc[i][j] = 0.0f;

    // Consumer 1's unit j follows consumer 0's unit j, and consumer 0's unit j > 0 follows
    // consumer 1's unit j - 1.
    if (kPingpong && (consumer == 1 || mine > 0))
      ka_sm90::mbarrier_wait(&order[consumer], (consumer == 1 ? mine : mine - 1) & 1);
    int previous = 0;
    for (int k = k_begin; k < k_end; ++k, ++step) {
      const int s = step % kStages;
      ka_sm90::mbarrier_wait(&full[s], (step / kStages) & 1);
      if constexpr (kPromote) {
        issue(part, s, false);
        StepScales scales[kSubtilesM];
        if constexpr (KA_SCALE_BLOCKED) {
#pragma unroll
          for (int i = 0; i < kSubtilesM; ++i) scales[i].load(ka, row0 + i * 64, col0, k);
        }
        ka_sm90::wgmma_wait<0>();
        fence_all(part);
        if (signals) ka_sm90::release_stage<Ring>(empty, s);
#pragma unroll
        for (int i = 0; i < kSubtilesM; ++i) promote(acc[i], part[i], scales[i]);
      } else {
        issue(acc, s, true);
        fence_all(acc);
        if (k > k_begin) {
          // The previous step's wgmma group has finished reading its stage.
          ka_sm90::wgmma_wait<1>();
          if (signals) ka_sm90::release_stage<Ring>(empty, previous);
        }
        previous = s;
      }
    }
    if (kPingpong && signals) ka_sm90::mbarrier_arrive(&order[1 - consumer]);
    ++mine;
    if constexpr (!kPromote) {
      ka_sm90::wgmma_wait<0>();
      fence_all(acc);
      if (k_end > k_begin && signals) ka_sm90::release_stage<Ring>(empty, previous);
    }

    float* partial = splits > 1 ? partials + unit % splits * ka.m * ka.n : nullptr;
    if (partial == nullptr) {
#pragma unroll
      for (int i = 0; i < kSubtilesM; ++i) scale_tile(ka, acc[i], row0 + i * 64, col0);
    }
#pragma unroll
    for (int i = 0; i < kSubtilesM; ++i)
      store_tile(ka, acc[i], row0 + i * 64, col0, partial, pairs);
  }
}

#if CLUSTER > 1
#define KA_SCALED_CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define KA_SCALED_CLUSTER_DIMS
#endif

__global__ void KA_SCALED_CLUSTER_DIMS __launch_bounds__(kThreads, 1)
    scaled_gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a,
                             const __grid_constant__ CUtensorMap map_b, const KaArgs ka,
                             float* partials, int splits, int split_steps) {
  extern __shared__ uint8_t shared_raw[];
  __shared__ unsigned long long full[kStages];
  __shared__ unsigned long long empty[kStages];
  // Ping-pong: order[c] completes a phase each time the other consumer has received the last
  // stage of a unit, which lets consumer c start its next one.
  __shared__ unsigned long long order[2];
  const ka_sm90::RingTiles<Ring> tiles(shared_raw);
  const ka_sm90::WorkUnits<Ring> work(ka.m, ka.n, ka.k, splits, split_steps);
  if (kPingpong && threadIdx.x == 0) {
    ka_sm90::mbarrier_init(&order[0], 1);
    ka_sm90::mbarrier_init(&order[1], 1);
  }
  ka_sm90::init_ring<Ring>(full, empty, kStageReaders);  // fences the inits and syncs

  ka_sm90::run_warp_specialised<Ring, kConsumers>(
      &map_a, &map_b, tiles, full, empty, work, [&](int consumer) {
        consume(consumer, ka, tiles, work, full, empty, order, partials, splits);
      });
}

/// Split-K: sums the float32 partials of every split and stores them scaled.
__global__ void reduce_splits_kernel(const KaArgs ka, const float* partials, int splits) {
  const long long slice = ka.m * ka.n;
  for (long long item = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; item < slice;
       item += static_cast<long long>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += partials[s * slice + item];
    const long long row = item / ka.n, col = item % ka.n;
    ka.c[item] = ka_from_float<ka_c_t>(sum * output_scale(ka, row, col));
  }
}

}  // namespace ka_scaled
