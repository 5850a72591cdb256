// A tensor-core kernel for the scaled_gemm family (include it after ka_problem.h):
//   C[m, n] = sum_k A[m, k] * B[n, k] * a_scale(m, k / 128) * b_scale(n, k / 128)
// with A [M, K] and B [N, K] float8_e4m3fn (raw bytes), the scales from KaArgs, and C stored
// through ka_from_float<ka_c_t>.
//
// Tiles of e4m3 bytes go to shared memory through a kStages-deep cp.async pipeline (16-byte
// chunks, zero-filled outside the matrix) or, when a row is not 16-byte aligned (K % 16 != 0 or an
// unaligned base), byte by byte with zeros outside. Fragments are read from shared memory two
// bytes at a time and widened with cvt.rn.f16x2.e4m3x2 (sm_89+): every e4m3 value is exact in
// float16 (3 mantissa bits, exponents 2^-9 .. 2^8), so mma.sync m16n8k16 f16 with float32
// accumulators computes the exact products. The scales are applied in float32: with a block
// scale (KA_SCALE_BLOCKED) each 128-wide K block is accumulated on its own and folded in as
// acc += a_scale(m, kb) * b_scale(n, kb) * partial; otherwise the scales multiply the whole sum
// once at the end. Any M, N and K are served; knobs only tune.
//
// The fragment layouts and the device primitives (row padding, cp.async, widening, the f16
// mma) are ka_fp8_mma.cuh's, shared with the moe_fp8_grouped template.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ka_fp8_mma.cuh"
#include "ka_problem.h"  // KaArgs, ka_c_t, ka_from_float: the binder's header comes first

namespace ka_fp8 {

template <int kTileM, int kTileN, int kTileK, int kWarpsM, int kWarpsN, int kStages>
struct Config {
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kWarpM = kTileM / kWarpsM;
  static constexpr int kWarpN = kTileN / kWarpsN;
  static constexpr int kTilesM = kWarpM / 16;    // m16 tiles per warp
  static constexpr int kTilesN = kWarpN / 8;     // n8 tiles per warp
  static constexpr int kRow = kTileK + kRowPad;  // bytes per shared-memory row
  static constexpr int kStageBytes = (kTileM + kTileN) * kRow;
  static constexpr int kSharedBytes = kStages * kStageBytes;
  static_assert(kTileK == 32 || kTileK == 64 || kTileK == 128,
                "kTileK divides the 128-wide scale block");
  static_assert(kTileM % kWarpsM == 0 && kTileN % kWarpsN == 0, "the warps split the tile evenly");
  static_assert(kWarpM % 16 == 0 && kWarpN % 8 == 0, "warp tiles are whole m16n8 tiles");
  static_assert(kStages >= 2, "the pipeline needs two stages");
};

/// Rows [row0, row0 + kRows) x bytes [k0, k0 + kTileK) of a row-major [rows, k] byte matrix into
/// shared memory (row pitch C::kRow), zeros outside the matrix.
template <class C, int kRows, int kTileK>
__device__ __forceinline__ void load_tile(unsigned char* dst, const unsigned char* src,
                                          long long rows, long long k, long long row0, long long k0,
                                          bool chunked) {
  if (chunked) {
    constexpr int kChunksPerRow = kTileK / 16;
    for (int i = threadIdx.x; i < kRows * kChunksPerRow; i += C::kThreads) {
      const int r = i / kChunksPerRow, chunk = i % kChunksPerRow;
      const long long row = row0 + r, col = k0 + chunk * 16;
      // K % 16 == 0 here, so a chunk is wholly inside or wholly outside the row.
      const bool inside = row < rows && col < k;
      copy16(dst + r * C::kRow + chunk * 16, inside ? src + row * k + col : src, inside ? 16 : 0);
    }
  } else {
    for (int i = threadIdx.x; i < kRows * kTileK; i += C::kThreads) {
      const int r = i / kTileK, c = i % kTileK;
      const long long row = row0 + r, col = k0 + c;
      dst[r * C::kRow + c] = row < rows && col < k ? src[row * k + col] : 0;
    }
  }
}

template <int kTileM, int kTileN, int kTileK, int kWarpsM, int kWarpsN, int kStages>
__global__ void __launch_bounds__(kWarpsM* kWarpsN * 32)
    scaled_mma_kernel(const KaArgs ka, int tiles_n) {
  using C = Config<kTileM, kTileN, kTileK, kWarpsM, kWarpsN, kStages>;
  extern __shared__ __align__(16) unsigned char shared[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const long long tile_m = blockIdx.x / tiles_n, tile_n = blockIdx.x % tiles_n;
  const long long row0 = tile_m * kTileM, col0 = tile_n * kTileN;

  // 16-byte chunks need 16-byte row starts: K % 16 == 0 and aligned bases.
  const bool chunked = ka.k % 16 == 0 && reinterpret_cast<uintptr_t>(ka.a) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(ka.b) % 16 == 0;
  const int k_tiles = static_cast<int>((ka.k + kTileK - 1) / kTileK);

  float part[C::kTilesM][C::kTilesN][4];
  float acc[C::kTilesM][C::kTilesN][4];
#pragma unroll
  for (int i = 0; i < C::kTilesM; ++i)
#pragma unroll
    for (int j = 0; j < C::kTilesN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) part[i][j][e] = acc[i][j][e] = 0.0f;

  const auto stage_a = [&](int stage) { return shared + stage * C::kStageBytes; };
  const auto stage_b = [&](int stage) {
    return shared + stage * C::kStageBytes + kTileM * C::kRow;
  };
  const auto load_stage = [&](int stage, int kt) {
    const long long k0 = static_cast<long long>(kt) * kTileK;
    load_tile<C, kTileM, kTileK>(stage_a(stage), ka.a, ka.m, ka.k, row0, k0, chunked);
    load_tile<C, kTileN, kTileK>(stage_b(stage), ka.b, ka.n, ka.k, col0, k0, chunked);
  };

  // acc += a_scale * b_scale * part for K block kb (or, without block scales, the whole sum).
  const auto fold = [&](long long kb) {
#pragma unroll
    for (int i = 0; i < C::kTilesM; ++i) {
      const long long r0 = row0 + warp_m * C::kWarpM + i * 16 + g;
      const float sa0 = r0 < ka.m ? ka.a_scale(r0, kb) : 0.0f;
      const float sa1 = r0 + 8 < ka.m ? ka.a_scale(r0 + 8, kb) : 0.0f;
#pragma unroll
      for (int j = 0; j < C::kTilesN; ++j) {
        const long long c0 = col0 + warp_n * C::kWarpN + j * 8 + 2 * t;
        const float sb0 = c0 < ka.n ? ka.b_scale(c0, kb) : 0.0f;
        const float sb1 = c0 + 1 < ka.n ? ka.b_scale(c0 + 1, kb) : 0.0f;
        acc[i][j][0] += sa0 * sb0 * part[i][j][0];
        acc[i][j][1] += sa0 * sb1 * part[i][j][1];
        acc[i][j][2] += sa1 * sb0 * part[i][j][2];
        acc[i][j][3] += sa1 * sb1 * part[i][j][3];
#pragma unroll
        for (int e = 0; e < 4; ++e) part[i][j][e] = 0.0f;
      }
    }
  };

  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    commit();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    wait_pending<kStages - 2>();
    __syncthreads();  // tile kt has landed; every warp is done with tile kt - 1's stage
    const int next = kt + kStages - 1;
    if (next < k_tiles) load_stage(next % kStages, next);
    commit();

    const unsigned char* sa = stage_a(kt % kStages);
    const unsigned char* sb = stage_b(kt % kStages);
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += 16) {
      unsigned a_frag[C::kTilesM][4];
      unsigned b_frag[C::kTilesN][2];
#pragma unroll
      for (int i = 0; i < C::kTilesM; ++i) {
        const unsigned char* p = sa + (warp_m * C::kWarpM + i * 16 + g) * C::kRow + kk + 2 * t;
        a_frag[i][0] = widen(p);
        a_frag[i][1] = widen(p + 8 * C::kRow);
        a_frag[i][2] = widen(p + 8);
        a_frag[i][3] = widen(p + 8 * C::kRow + 8);
      }
#pragma unroll
      for (int j = 0; j < C::kTilesN; ++j) {
        const unsigned char* p = sb + (warp_n * C::kWarpN + j * 8 + g) * C::kRow + kk + 2 * t;
        b_frag[j][0] = widen(p);
        b_frag[j][1] = widen(p + 8);
      }
#pragma unroll
      for (int i = 0; i < C::kTilesM; ++i)
#pragma unroll
        for (int j = 0; j < C::kTilesN; ++j) mma(part[i][j], a_frag[i], b_frag[j]);
    }
#if KA_SCALE_BLOCKED
    // A K block ends every 128 / kTileK tiles, and at the last tile.
    if ((kt + 1) % (KA_SCALE_BLOCK_K / kTileK) == 0 || kt + 1 == k_tiles)
      fold(static_cast<long long>(kt) * kTileK / KA_SCALE_BLOCK_K);
#endif
  }
  wait_pending<0>();
#if !KA_SCALE_BLOCKED
  if (k_tiles > 0) fold(0);
#endif

  // Pairs of columns as one store where C's layout allows it.
  const bool pairs = ka.n % 2 == 0 && reinterpret_cast<uintptr_t>(ka.c) % (2 * sizeof(ka_c_t)) == 0;
#pragma unroll
  for (int i = 0; i < C::kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < C::kTilesN; ++j) {
      const long long c0 = col0 + warp_n * C::kWarpN + j * 8 + 2 * t;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const long long r = row0 + warp_m * C::kWarpM + i * 16 + g + half * 8;
        if (r >= ka.m || c0 >= ka.n) continue;
        ka_c_t* dst = ka.c + r * ka.n + c0;
        const float v0 = acc[i][j][2 * half], v1 = acc[i][j][2 * half + 1];
        if (pairs) {
          struct alignas(2 * sizeof(ka_c_t)) Pair {
            ka_c_t v[2];
          } pair;
          pair.v[0] = ka_from_float<ka_c_t>(v0);
          pair.v[1] = ka_from_float<ka_c_t>(v1);
          *reinterpret_cast<Pair*>(dst) = pair;
        } else {
          dst[0] = ka_from_float<ka_c_t>(v0);
          if (c0 + 1 < ka.n) dst[1] = ka_from_float<ka_c_t>(v1);
        }
      }
    }
  }
}

/// Launches the kernel for `ka` on `stream` (nothing for an empty C); the first call per device
/// raises the kernel's dynamic shared-memory limit.
template <int kTileM, int kTileN, int kTileK, int kWarpsM, int kWarpsN, int kStages>
cudaError_t launch(const KaArgs& ka, cudaStream_t stream) {
  using C = Config<kTileM, kTileN, kTileK, kWarpsM, kWarpsN, kStages>;
  if (ka.m == 0 || ka.n == 0) return cudaSuccess;
  const long long tiles_m = (ka.m + kTileM - 1) / kTileM, tiles_n = (ka.n + kTileN - 1) / kTileN;
  if (tiles_m * tiles_n > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  auto kernel = scaled_mma_kernel<kTileM, kTileN, kTileK, kWarpsM, kWarpsN, kStages>;
  constexpr int kMaxDevices = 64;
  static bool prepared[kMaxDevices] = {};
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  if (device >= kMaxDevices) return cudaErrorInvalidDevice;
  if (!prepared[device]) {
    status =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSharedBytes);
    if (status != cudaSuccess) return status;
    prepared[device] = true;
  }
  kernel<<<static_cast<unsigned>(tiles_m * tiles_n), C::kThreads, C::kSharedBytes, stream>>>(
      ka, static_cast<int>(tiles_n));
  return cudaGetLastError();
}

}  // namespace ka_fp8
