// The two grouped GEMMs of moe_fp8_grouped, over the local experts' sorted rows:
//
//  gate_up_kernel  (GEMM 1) for the rows of local expert le, N = INTER, K = HIDDEN:
//                  g = sum_k x[k] xs(kb) gate[n, k] gs(n / 128, kb), u likewise with up, and
//                  h[row][n] = bf16(act(g) * u); A rows gathered by token through ka.x_row.
//  down_kernel     (GEMM 2) N = HIDDEN, K = INTER: y[row][n] = bf16(sum_j h[j] down[n, j]
//                  ds(n / 128, j / 128)); A rows are the expert's contiguous segment of h.
//
// A CTA owns a BM x BN output tile: its M tile is one of the routing-dependent schedule
// (find_m_tile, ka_moe_grouped.cuh; M_GROUP ordering), its N tile one of N / BN. The host launches
// the upper bound of M tiles times the N tiles, and the CTAs past the real count exit.
//
// Both operands are K-major, so tiles are copied row by row in 16-byte cp.async chunks into
// padded shared rows through a STAGES-deep pipeline (as templates/cuda/gemm_mma: STAGES - 1 tiles
// in flight; per K tile wait for the oldest, barrier, issue the next, compute). Rows past the
// segment are zero-filled (src-size 0); HIDDEN and INTER are multiples of 128 and BN, BK divide
// 128, so no other tile is partial.
//
// Fragments (ka_fp8_mma.cuh's layouts) are read 4 bytes of K at a time with a permuted K: in each
// 16-wide K step, lane t's word of K elements [4t, 4t + 4) is the mma's k (2t, 2t + 1) in its low
// half and k (2t + 8, 2t + 9) in its high half. A and B use the same permutation, so every
// product pairs the same K element and the sum over the step is unchanged; one 32-bit shared load
// (e4m3) or one 64-bit load (GEMM 2's bfloat16 h) gives both registers of a row.
//
//  GEMM 1: e4m3 x and weights widened to float16 (cvt.rn.f16x2.e4m3x2, exact), mma.sync
//          m16n8k16 f16 -> f32. The B tile holds BN gate rows then the BN up rows of the same
//          columns, so each thread has matching gate and up accumulators.
//  GEMM 2: h is bfloat16 (it can pass float16's range), so the e4m3 down weights are widened to
//          float16 and converted to bfloat16 (exact: e4m3 values are bfloat16 values), and the
//          mma is m16n8k16 bf16 -> f32.
//
// Block scales: every 128-deep K block is accumulated on its own in float32 partials (exact
// products, the mma's float32 sums) and folded in as acc += part * scale. With 128 % BN == 0 all
// columns of a CTA share one weight scale block, so the scale of a row is x_scale(token, kb) *
// gate_scale(le, n0 / 128, kb) in GEMM 1 (per row) and down_scale(le, n0 / 128, kb) in GEMM 2 (per
// CTA). The scales of the next K block are loaded into registers right after each fold, so their
// latency hides behind a whole K block of MMAs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ka_fp8_mma.cuh"
#include "ka_mma_sync.cuh"
#include "moe_fp8_route.cuh"

namespace ka_moe_fp8 {

/// Rows [0, kRows) x 16-byte chunks [0, kChunks) of a tile into shared memory at `dst` (row pitch
/// kPitch bytes), by all kThreads threads of the CTA, kThreads / kChunks rows a round: chunk c of
/// row r comes from src(r) + 16 c, where src(r) is row r's first byte in this K tile, or nullptr
/// for a row past the segment (zero-filled, nothing read; `fallback` is the valid address cp.async
/// still names). Callers form src from a stage base hidden by ka_moe::opaque plus r times the row
/// length, so that the sources cost a register pair, not one per round.
template <int kRows, int kChunks, int kPitch, int kThreads, typename Src>
__device__ __forceinline__ void copy_tile(unsigned char* dst, const void* fallback, Src src) {
  static_assert(kThreads % kChunks == 0, "a round covers whole rows");
  constexpr int kStep = kThreads / kChunks;
  const int r0 = static_cast<int>(threadIdx.x) / kChunks;
  const int c = static_cast<int>(threadIdx.x) % kChunks;
#pragma unroll
  for (int it = 0; it < (kRows + kStep - 1) / kStep; ++it) {
    const int r = r0 + it * kStep;
    if (kRows % kStep != 0 && r >= kRows) break;  // wider rounds than the tile (kStep > kRows)
    const unsigned char* row = src(r);
    ka_fp8::copy16(dst + r * kPitch + c * 16, row != nullptr ? row + c * 16 : fallback,
                   row != nullptr ? 16 : 0);
  }
}

/// Two float16 values (an f16x2 register holding e4m3 values) as bfloat16x2, exactly: float16 ->
/// float32 is exact and every e4m3 value is a bfloat16 value. The low half stays the low half.
__device__ __forceinline__ unsigned f16x2_to_bf16x2(unsigned f16x2) {
  __half2 h;
  static_assert(sizeof(h) == sizeof(f16x2), "32-bit pairs");
  __builtin_memcpy(&h, &f16x2, sizeof(h));
  const __nv_bfloat162 b = __float22bfloat162_rn(__half22float2(h));
  unsigned bits;
  __builtin_memcpy(&bits, &b, sizeof(bits));
  return bits;
}

/// A warp's output tile as bfloat16 pairs, both GEMMs' epilogue: accumulator fragment (i, j)'s
/// values c0, c1 at row first_row + 16 i, columns (j * 8 + {0, 1}) from `base` (this lane's
/// first column of the tile's row 0, rows kLd elements apart), c2, c3 eight rows down;
/// value(i, j, c) gives them. Rows at or past `rows` (the segment's end) are not stored.
template <int kMmaM, int kMmaN, int kLd, typename Value>
__device__ __forceinline__ void store_bf16_pairs(__nv_bfloat16* base, int first_row, int rows,
                                                 Value value) {
#pragma unroll
  for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = first_row + i * 16 + half * 8;
      if (row >= rows) continue;
      __nv_bfloat16* out = base + static_cast<long long>(row) * kLd;
#pragma unroll
      for (int j = 0; j < kMmaN; ++j)
        *reinterpret_cast<__nv_bfloat162*>(out + j * 8) =
            __floats2bfloat162_rn(value(i, j, 2 * half), value(i, j, 2 * half + 1));
    }
  }
}

// ---- GEMM 1: gate / up.

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages>
struct GateUpConfig : ka_moe::WarpTiles<kBM, kBN, kWarpsM, kWarpsN> {
  static constexpr int kRow = kBK + ka_fp8::kRowPad;  // bytes per shared row (A and B)
  static constexpr int kAStage = kBM * kRow;          // bytes
  static constexpr int kBStage = 2 * kBN * kRow;      // gate rows, then up rows
  static constexpr int kStageBytes = kAStage + kBStage;
  static constexpr int kPipeBytes = kStages * kStageBytes;
  // After the stages: the BM A-row pointers and tokens of the tile (nullptr, -1 past the segment).
  static constexpr int kSharedBytes =
      kPipeBytes + kBM * static_cast<int>(sizeof(void*) + sizeof(int));
  static constexpr int kChunks = kBK / 16;  // 16-byte chunks per tile row
  static constexpr int kKTiles = kHidden / kBK;
  static constexpr int kTilesPerBlock = kBlock / kBK;  // K tiles per scale block
  static constexpr int kNTiles = kInter / kBN;
  static_assert(kBK == 32 || kBK == 64 || kBK == 128, "BK divides the 128-deep scale block");
  static_assert(kBlock % kBN == 0, "a CTA's columns share one weight scale block (128 % BN == 0)");
  static_assert(kInter % kBN == 0 && kHidden % kBK == 0, "whole tiles");
  static_assert(kStages >= 2, "at least two pipeline stages");
  static_assert(kPipeBytes % 16 == 0, "the row pointers after the stages are aligned");
};

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, int kMGroup>
__global__ void __launch_bounds__(kWarpsM* kWarpsN * 32)
    gate_up_kernel(KaArgs ka, Workspace ws, int m_tiles) {
  using C = GateUpConfig<kBM, kBN, kBK, kWarpsM, kWarpsN, kStages>;
  constexpr int kThreads = C::kThreads;
  constexpr int kRow = C::kRow;
  constexpr int kMmaM = C::kMmaM;
  constexpr int kMmaN = C::kMmaN;

  extern __shared__ __align__(16) unsigned char ka_smem[];
  const unsigned char** a_rows = reinterpret_cast<const unsigned char**>(ka_smem + C::kPipeBytes);
  int* a_token = reinterpret_cast<int*>(ka_smem + C::kPipeBytes + kBM * sizeof(void*));

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;
  const int g = lane / 4, t4 = lane % 4;

  ka_moe::MTile tile;
  if (!ka_moe::find_m_tile<kLocal, kBM, kMGroup, C::kNTiles, kThreads>(m_tiles, ws.tile_prefix,
                                                                       ws.offsets, tile))
    return;  // past the real tile count: uniform exit
  const int le = tile.expert;
  const int rows = tile.rows;
  const long long pos0 = static_cast<long long>(tile.seg_start) + tile.m0;  // the tile's row 0
  const int n0 = tile.nt * kBN;
  const int nb = n0 / kBlock;

  const unsigned char* gate = ka.gate_rows(le) + static_cast<long long>(n0) * kHidden;
  const unsigned char* up = ka.up_rows(le) + static_cast<long long>(n0) * kHidden;

  // B: the BN gate rows, then the BN up rows of the same columns.
  auto load_b = [&](int stage, int kt) {
    unsigned char* dst = ka_smem + stage * C::kStageBytes + C::kAStage;
    const unsigned char* gate_k = ka_moe::opaque(gate + kt * kBK);
    const unsigned char* up_k = ka_moe::opaque(up + kt * kBK);
    copy_tile<kBN, C::kChunks, kRow, kThreads>(dst, gate,
                                               [&](int r) { return gate_k + r * kHidden; });
    copy_tile<kBN, C::kChunks, kRow, kThreads>(dst + kBN * kRow, gate,
                                               [&](int r) { return up_k + r * kHidden; });
  };
  // A: the tile's rows of x, gathered by token (a_rows; nullptr past the segment).
  auto load_a = [&](int stage, int kt) {
    const int k0 = kt * kBK;
    copy_tile<kBM, C::kChunks, kRow, kThreads>(ka_smem + stage * C::kStageBytes, gate, [&](int r) {
      const unsigned char* row = a_rows[r];
      return row != nullptr ? row + k0 : row;
    });
  };

  // Prologue, B first: its addresses are known before the A rows are looked up.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s)
    if (s < C::kKTiles) load_b(s, s);
  for (int r = tid; r < kBM; r += kThreads) {
    const unsigned char* row = nullptr;
    int token = -1;
    if (r < rows) {
      token = ws.sorted_slot[pos0 + r] / kTopK;
      row = ka.x_row(token);
    }
    a_rows[r] = row;
    a_token[r] = token;
  }
  __syncthreads();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < C::kKTiles) load_a(s, s);
  }
  // One group holds the whole prologue; the other kStages - 2 are empty, so that the wait in
  // iteration kt always finds tile kt complete.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) ka_fp8::commit();

  // This lane's rows (warp_m * kWarpTileM + 16 i + g + 8 half) and their tokens (-1 past the
  // segment: scale 0, and their A rows are zeros).
  int token[kMmaM][2];
#pragma unroll
  for (int i = 0; i < kMmaM; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      token[i][half] = a_token[warp_m * C::kWarpTileM + i * 16 + g + half * 8];

  // The scales of K block kb: x's per row, gate's and up's for the CTA's columns.
  float x_scale[kMmaM][2], gate_scale = 0.0f, up_scale = 0.0f;
  auto load_scales = [&](int kb) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        x_scale[i][half] = token[i][half] >= 0 ? ka.x_scale(token[i][half], kb) : 0.0f;
    gate_scale = ka.gate_scale(le, nb, kb);
    up_scale = ka.up_scale(le, nb, kb);
  };
  load_scales(0);

  float acc[2][kMmaM][kMmaN][4];
  float part[2][kMmaM][kMmaN][4];
  ka_moe::zero_fill(acc);
  ka_moe::zero_fill(part);

  const int live_m = C::live_m(rows, warp_m);
  // Byte offsets of this lane's words: A row warp_m * kWarpTileM + g, B row warp_n * kWarpTileN
  // + g of a sub-tile, both at K byte 4 t4 of the 16-wide step.
  const int a_lane = (warp_m * C::kWarpTileM + g) * kRow + 4 * t4;
  const int b_lane = C::kAStage + (warp_n * C::kWarpTileN + g) * kRow + 4 * t4;

  auto compute_stage = [&](int stage) {
    if (live_m == 0) return;  // a warp wholly past the segment's last row
    const unsigned char* a_base = ka_smem + stage * C::kStageBytes + a_lane;
    const unsigned char* b_base = ka_smem + stage * C::kStageBytes + b_lane;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      unsigned b_frag[2][kMmaN][2];
#pragma unroll
      for (int b = 0; b < 2; ++b)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j) {
          const unsigned word =
              *reinterpret_cast<const unsigned*>(b_base + (b * kBN + j * 8) * kRow + kk * 16);
          ka_fp8::widen4(word, b_frag[b][j][0], b_frag[b][j][1]);
        }
#pragma unroll
      for (int i = 0; i < kMmaM; ++i) {
        if (i >= live_m) break;
        const unsigned char* a = a_base + i * 16 * kRow + kk * 16;
        unsigned a_frag[4];
        ka_fp8::widen4(*reinterpret_cast<const unsigned*>(a), a_frag[0], a_frag[2]);
        ka_fp8::widen4(*reinterpret_cast<const unsigned*>(a + 8 * kRow), a_frag[1], a_frag[3]);
#pragma unroll
        for (int b = 0; b < 2; ++b)
#pragma unroll
          for (int j = 0; j < kMmaN; ++j) ka_fp8::mma(part[b][i][j], a_frag, b_frag[b][j]);
      }
    }
  };

  // acc += part * x_scale(row) * weight scale, then part = 0 and the next block's scales.
  auto fold = [&](int kb) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float scale[2] = {x_scale[i][half] * gate_scale, x_scale[i][half] * up_scale};
#pragma unroll
        for (int b = 0; b < 2; ++b)
#pragma unroll
          for (int j = 0; j < kMmaN; ++j)
#pragma unroll
            for (int c = 0; c < 2; ++c) {
              float& p = part[b][i][j][2 * half + c];
              acc[b][i][j][2 * half + c] = fmaf(p, scale[b], acc[b][i][j][2 * half + c]);
              p = 0.0f;
            }
      }
    if (kb + 1 < kHidden / kBlock) load_scales(kb + 1);
  };

  for (int kt = 0; kt < C::kKTiles; ++kt) {
    ka_fp8::wait_pending<kStages - 2>();
    __syncthreads();  // tile kt has landed; every warp is done with tile kt - 1's stage
    const int next = kt + kStages - 1;
    if (next < C::kKTiles) {
      load_b(next % kStages, next);
      load_a(next % kStages, next);
    }
    ka_fp8::commit();
    compute_stage(kt % kStages);
    if ((kt + 1) % C::kTilesPerBlock == 0) fold(kt / C::kTilesPerBlock);
  }
  ka_fp8::wait_pending<0>();

  // ---- Epilogue: h = act(g) * u in float32, stored as bfloat16 pairs at the rows' positions.
  store_bf16_pairs<kMmaM, kMmaN, kInter>(
      ws.h + pos0 * kInter + n0 + warp_n * C::kWarpTileN + 2 * t4, warp_m * C::kWarpTileM + g, rows,
      [&](int i, int j, int c) { return ka_moe_activation(acc[0][i][j][c]) * acc[1][i][j][c]; });
}

// ---- GEMM 2: down.

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages>
struct DownConfig : ka_moe::WarpTiles<kBM, kBN, kWarpsM, kWarpsN> {
  // A (h, bfloat16): rows of kBK elements padded by 16 (32 bytes), so that the 4 rows a
  // half-warp's 8-byte loads touch fall in distinct 32-byte bank groups (the pitch is 32 or 96
  // modulo 128 bytes).
  static constexpr int kARow = (kBK + 16) * 2;         // bytes
  static constexpr int kBRow = kBK + ka_fp8::kRowPad;  // bytes (e4m3 down rows)
  static constexpr int kAStage = kBM * kARow;
  static constexpr int kBStage = kBN * kBRow;
  static constexpr int kStageBytes = kAStage + kBStage;
  static constexpr int kSharedBytes = kStages * kStageBytes;
  static constexpr int kAChunks = kBK * 2 / 16;  // 16-byte chunks per A row
  static constexpr int kBChunks = kBK / 16;      // per B row
  static constexpr int kKTiles = kInter / kBK;
  static constexpr int kTilesPerBlock = kBlock / kBK;
  static constexpr int kNTiles = kHidden / kBN;
  static_assert(kBK == 32 || kBK == 64 || kBK == 128, "BK2 divides the 128-deep scale block");
  static_assert(kBlock % kBN == 0, "a CTA's columns share one weight scale block (128 % BN2 == 0)");
  static_assert(kHidden % kBN == 0 && kInter % kBK == 0, "whole tiles");
  static_assert(kStages >= 2, "at least two pipeline stages");
};

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, int kMGroup>
__global__ void __launch_bounds__(kWarpsM* kWarpsN * 32)
    down_kernel(KaArgs ka, Workspace ws, int m_tiles) {
  using C = DownConfig<kBM, kBN, kBK, kWarpsM, kWarpsN, kStages>;
  constexpr int kThreads = C::kThreads;
  constexpr int kMmaM = C::kMmaM;
  constexpr int kMmaN = C::kMmaN;

  extern __shared__ __align__(16) unsigned char ka_smem[];

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;
  const int g = lane / 4, t4 = lane % 4;

  ka_moe::MTile tile;
  if (!ka_moe::find_m_tile<kLocal, kBM, kMGroup, C::kNTiles, kThreads>(m_tiles, ws.tile_prefix,
                                                                       ws.offsets, tile))
    return;  // past the real tile count: uniform exit
  const int le = tile.expert;
  const int rows = tile.rows;
  const long long pos0 = static_cast<long long>(tile.seg_start) + tile.m0;
  const int n0 = tile.nt * kBN;
  const int nb = n0 / kBlock;

  const unsigned char* down = ka.down_rows(le) + static_cast<long long>(n0) * kInter;
  const unsigned char* h = reinterpret_cast<const unsigned char*>(ws.h + pos0 * kInter);

  // B: the BN down rows (e4m3); A: the tile's rows of h (bfloat16, zeros past the segment).
  auto load_stage = [&](int stage, int kt) {
    unsigned char* dst = ka_smem + stage * C::kStageBytes;
    const unsigned char* down_k = ka_moe::opaque(down + kt * kBK);
    const unsigned char* h_k = ka_moe::opaque(h + kt * kBK * 2);
    copy_tile<kBN, C::kBChunks, C::kBRow, kThreads>(dst + C::kAStage, down,
                                                    [&](int r) { return down_k + r * kInter; });
    copy_tile<kBM, C::kAChunks, C::kARow, kThreads>(
        dst, down, [&](int r) { return r < rows ? h_k + r * (kInter * 2) : nullptr; });
  };

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < C::kKTiles) load_stage(s, s);
    ka_fp8::commit();
  }

  float down_scale = ka.down_scale(le, nb, 0);

  float acc[kMmaM][kMmaN][4];
  float part[kMmaM][kMmaN][4];
  ka_moe::zero_fill(acc);
  ka_moe::zero_fill(part);

  const int live_m = C::live_m(rows, warp_m);
  // A: this lane's 8 bytes (bfloat16 K elements [4 t4, 4 t4 + 4) of the step) of row
  // warp_m * kWarpTileM + g; B: its 4 bytes of row warp_n * kWarpTileN + g.
  const int a_lane = (warp_m * C::kWarpTileM + g) * C::kARow + 8 * t4;
  const int b_lane = C::kAStage + (warp_n * C::kWarpTileN + g) * C::kBRow + 4 * t4;

  auto compute_stage = [&](int stage) {
    if (live_m == 0) return;
    const unsigned char* a_base = ka_smem + stage * C::kStageBytes + a_lane;
    const unsigned char* b_base = ka_smem + stage * C::kStageBytes + b_lane;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      unsigned b_frag[kMmaN][2];
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) {
        const unsigned word =
            *reinterpret_cast<const unsigned*>(b_base + j * 8 * C::kBRow + kk * 16);
        unsigned low, high;
        ka_fp8::widen4(word, low, high);
        b_frag[j][0] = f16x2_to_bf16x2(low);
        b_frag[j][1] = f16x2_to_bf16x2(high);
      }
#pragma unroll
      for (int i = 0; i < kMmaM; ++i) {
        if (i >= live_m) break;
        const unsigned char* a = a_base + i * 16 * C::kARow + kk * 32;
        const uint2 r0 = *reinterpret_cast<const uint2*>(a);
        const uint2 r1 = *reinterpret_cast<const uint2*>(a + 8 * C::kARow);
        const unsigned a_frag[4] = {r0.x, r1.x, r0.y, r1.y};
#pragma unroll
        for (int j = 0; j < kMmaN; ++j)
          ka_mma_16816(part[i][j], a_frag, b_frag[j][0], b_frag[j][1], __nv_bfloat16());
      }
    }
  };

  auto fold = [&](int kb) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
      for (int j = 0; j < kMmaN; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          acc[i][j][c] = fmaf(part[i][j][c], down_scale, acc[i][j][c]);
          part[i][j][c] = 0.0f;
        }
    if (kb + 1 < kInter / kBlock) down_scale = ka.down_scale(le, nb, kb + 1);
  };

  for (int kt = 0; kt < C::kKTiles; ++kt) {
    ka_fp8::wait_pending<kStages - 2>();
    __syncthreads();
    const int next = kt + kStages - 1;
    if (next < C::kKTiles) load_stage(next % kStages, next);
    ka_fp8::commit();
    compute_stage(kt % kStages);
    if ((kt + 1) % C::kTilesPerBlock == 0) fold(kt / C::kTilesPerBlock);
  }
  ka_fp8::wait_pending<0>();

  // ---- Epilogue: y as bfloat16 pairs at the rows' positions.
  store_bf16_pairs<kMmaM, kMmaN, kHidden>(
      ws.y + pos0 * kHidden + n0 + warp_n * C::kWarpTileN + 2 * t4, warp_m * C::kWarpTileM + g,
      rows, [&](int i, int j, int c) { return acc[i][j][c]; });
}

}  // namespace ka_moe_fp8
