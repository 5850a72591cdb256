// The grouped GEMMs of moe_grouped (and, dense, of mlp_gated): one kernel template,
// instantiated twice per template.
//
//  kGated = true  (GEMM 1, gate/up): for the sorted rows of expert e,
//                 h[row][n] = act(x[token(row)] . gate_e[n]) * (x[token(row)] . up_e[n]),
//                 N = INTER, K = HIDDEN; A rows gathered by token through ka.x_row.
//  kGated = false (GEMM 2, down):  y[row][n] = h[row] . down_e[n], N = HIDDEN, K = INTER;
//                 A rows are the expert's contiguous segment of h.
//
// Both operands are K-major (rows of K contiguous elements: "NT"), so A and B tiles are copied
// row by row in 16-byte chunks and read with plain ldmatrix. A CTA owns a BM x BN output tile:
// its M tile is one of the routing-dependent schedule (tile_prefix: expert e owns tiles
// [tile_prefix[e], tile_prefix[e + 1]), ceil(count_e / BM) of them). The host launches a 1-D grid
// of m_tiles x N-tiles CTAs for the upper bound m_tiles = ceil(T*K / BM) + min(E, T*K), ordered
// in groups of M_GROUP M tiles (see below); CTAs past tile_prefix[E] return at once.
//
// kDense (mlp_gated: one expert, no routing): the rows are the tokens themselves, A row r of
// GEMM 1 is x_row(r), the grid is exactly ceil(T / BM) x N-tiles and no schedule is read; only
// ws.h and ws.y are used (y may be the output itself).
//
// Shared memory, per stage: the A tile [BM][BK + 8], then the B tile [NB * BN][BK + 8] (NB = 2
// for GEMM 1: rows [0, BN) are gate rows n0.., rows [BN, 2 BN) the up rows of the same columns,
// so every thread holds gate and up accumulators of the same (row, column) and applies the
// activation in registers). The 8-element pad makes the 8 row addresses of an ldmatrix phase
// fall in 8 different 16-byte bank groups. After the stages: the BM A-row pointers of the tile
// (nullptr past the expert's last row). Out-of-range chunks (rows past the segment, columns past
// N, K past the end) are zero-filled by cp.async with src-size 0; K and N are multiples of 8, so
// a chunk is wholly inside or wholly outside.
//
// The pipeline (as templates/cuda/gemm_mma): STAGES - 1 stages in flight; per K tile: wait for
// the oldest, __syncthreads (the stage about to be refilled was computed by every warp in the
// previous iteration), issue the next stage, compute. The B chunks of the prologue are issued
// before the A-row pointers are looked up, to overlap the weights' latency with the gathers.
#pragma once

#include "ka_mma_sync.cuh"
#include "ka_moe_common.cuh"

namespace ka_moe {

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, bool kGated>
struct GemmConfig : WarpTiles<kBM, kBN, kWarpsM, kWarpsN> {
  using Tiles = WarpTiles<kBM, kBN, kWarpsM, kWarpsN>;  // ka_moe_grouped.cuh
  static constexpr int kNB = kGated ? 2 : 1;            // B sub-tiles (gate, up) or (down)
  static constexpr int kN = kGated ? kInter : kHidden;  // output columns
  static constexpr int kK = kGated ? kHidden : kInter;  // reduction length
  static constexpr int kLd = kBK + 8;                   // shared row pitch, elements
  static constexpr int kAStage = kBM * kLd;             // elements
  static constexpr int kBStage = kNB * kBN * kLd;       // elements
  static constexpr int kPipeBytes = kStages * (kAStage + kBStage) * 2;
  static constexpr int kSharedBytes = kPipeBytes + kBM * 8;         // + A-row pointers
  static constexpr int kChunksPerRow = kBK / 8;                     // 16-byte chunks per tile row
  static constexpr int kRowStep = Tiles::kThreads / kChunksPerRow;  // tile rows per copy round
  static constexpr int kACopies = (kBM + kRowStep - 1) / kRowStep;
  static constexpr int kBCopies = (kNB * kBN + kRowStep - 1) / kRowStep;

  static_assert(kBK % 16 == 0, "BK is a multiple of the mma's k16");
  static_assert(Tiles::kThreads % kChunksPerRow == 0, "a copy round covers whole rows");
  static_assert(kRowStep > kBN || kBN % kRowStep == 0, "copy rounds tile the B sub-tiles");
  static_assert(kStages >= 2, "at least two pipeline stages");
};

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, bool kGated,
          int kMGroup, bool kDense = false>
__global__ void __launch_bounds__(kWarpsM* kWarpsN * 32)
    grouped_gemm_kernel(KaArgs ka, Workspace ws, int m_tiles) {
  using C = GemmConfig<kBM, kBN, kBK, kWarpsM, kWarpsN, kStages, kGated>;
  using elem_t = ka_act_t;  // == ka_w_t (ka_moe_common.cuh)
  constexpr int kThreads = C::kThreads;
  constexpr int kLd = C::kLd;
  constexpr int kN = C::kN;
  constexpr int kK = C::kK;

  extern __shared__ __align__(16) unsigned char ka_smem[];
  elem_t* a_smem = reinterpret_cast<elem_t*>(ka_smem);
  elem_t* b_smem = a_smem + kStages * C::kAStage;
  const elem_t** a_rows = reinterpret_cast<const elem_t**>(ka_smem + C::kPipeBytes);

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;

  // ---- The tile schedule (find_m_tile, ka_moe_grouped.cuh: groups of kMGroup M tiles).
  constexpr int kNTiles = (kN + kBN - 1) / kBN;
  MTile tile;
  if constexpr (kDense) {
    tile = dense_m_tile<kBM, kMGroup, kNTiles>(m_tiles, ka.tokens());
  } else if (!find_m_tile<kExperts, kBM, kMGroup, kNTiles, kThreads>(m_tiles, ws.tile_prefix,
                                                                     ws.offsets, tile)) {
    return;  // past the real tile count: uniform exit
  }
  const int expert = tile.expert;
  const int seg_start = tile.seg_start;
  const int m0 = tile.m0;
  const int rows = tile.rows;
  const int nt = tile.nt;
  const long long n0 = static_cast<long long>(nt) * kBN;

  const elem_t* b_base0 = kGated ? ka.gate_rows(expert) : ka.down_rows(expert);
  const elem_t* b_base1 = kGated ? ka.up_rows(expert) : b_base0;

  // ---- Copies: thread tid moves chunk column copy_col of rows copy_row + i * kRowStep.
  const int copy_row = tid / C::kChunksPerRow;
  const int copy_col = (tid % C::kChunksPerRow) * 8;

  // B rows of this thread: copy_row + i * kRowStep of the tile. When kRowStep divides BN (all but
  // the widest CTAs with narrow tiles), copy i's sub-tile and row are compile-time constants, so
  // the sources are two row pointers plus constant offsets: few live registers across the loop.
  const elem_t* b_row0 = b_base0 + (n0 + copy_row) * kK;
  const elem_t* b_row1 = b_base1 + (n0 + copy_row) * kK;
  const long long n_limit = kN - n0 - copy_row;  // copy i is inside when its tile row < this
  auto load_b = [&](int stage, int k_tile) {
    const int k = k_tile * kBK + copy_col;
    const bool k_inside = k < kK;
    elem_t* dst = b_smem + stage * C::kBStage + copy_row * kLd + copy_col;
    // The stage's two row pointers, opaque so that the copies' addresses are formed from them
    // each stage (constant offsets) rather than hoisted out of the K loop one register pair each.
    const elem_t* b_k0 = opaque(b_row0 + k);
    const elem_t* b_k1 = kGated ? opaque(b_row1 + k) : b_k0;
#pragma unroll
    for (int i = 0; i < C::kBCopies; ++i) {
      if (C::kRowStep <= kBN) {
        const bool second = kGated && i * C::kRowStep >= kBN;
        const int row = i * C::kRowStep - (second ? kBN : 0);  // in the sub-tile, less copy_row
        const bool inside = k_inside && row < n_limit;
        const elem_t* src = (second ? b_k1 : b_k0) + static_cast<long long>(row) * kK;
        ka_cp_async_16(dst + i * C::kRowStep * kLd, inside ? src : b_base0, inside ? 16 : 0);
      } else {
        const int r = copy_row + i * C::kRowStep;
        if ((C::kNB * kBN) % C::kRowStep != 0 && r >= C::kNB * kBN) break;
        const bool second = kGated && r >= kBN;
        const long long n = n0 + (second ? r - kBN : r);
        const bool inside = n < kN && k_inside;
        const elem_t* src = (second ? b_base1 : b_base0) + n * kK + k;
        ka_cp_async_16(dst + i * C::kRowStep * kLd, inside ? src : b_base0, inside ? 16 : 0);
      }
    }
  };
  auto load_a = [&](int stage, int k_tile) {
    const int k = k_tile * kBK + copy_col;
    elem_t* dst = a_smem + stage * C::kAStage + copy_row * kLd + copy_col;
#pragma unroll
    for (int i = 0; i < C::kACopies; ++i) {
      const int r = copy_row + i * C::kRowStep;
      if (kBM % C::kRowStep != 0 && r >= kBM) break;
      const elem_t* row = a_rows[r];
      const bool inside = row != nullptr && k < kK;
      ka_cp_async_16(dst + i * C::kRowStep * kLd, inside ? row + k : b_base0, inside ? 16 : 0);
    }
  };

  const int k_tiles = (kK + kBK - 1) / kBK;
  // Prologue, B first: its addresses are known before the A rows are looked up.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s)
    if (s < k_tiles) load_b(s, s);

  for (int r = tid; r < kBM; r += kThreads) {
    const elem_t* row = nullptr;
    if (r < rows) {
      const long long pos = static_cast<long long>(seg_start) + m0 + r;
      if (kGated)
        row = ka.x_row(kDense ? pos : ws.sorted_slot[pos] / kTopK);
      else
        row = ws.h + pos * kInter;
    }
    a_rows[r] = row;
  }
  __syncthreads();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s)
    if (s < k_tiles) load_a(s, s);
      // One group holds the whole prologue; the other kStages - 2 groups are empty, so that the
      // wait in iteration kt always finds tile kt complete.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) ka_cp_async_commit();

  // ---- Accumulators and the per-lane ldmatrix offsets.
  float acc[C::kNB][C::kMmaM][C::kMmaN][4];
  zero_fill(acc);

  // A ([m][k]): lanes 0-15 address rows m 0-15 at k 0, lanes 16-31 rows 0-15 at k 8: matrices
  // (m0-7, k0-7), (m8-15, k0-7), (m0-7, k8-15), (m8-15, k8-15) = a0..a3.
  // B ([n][k]), two n8 tiles at once: lanes 8q + r address row n = r + 8 (q / 2) at k = 8 (q % 2):
  // matrices (n0-7, k0-7), (n0-7, k8-15), (n8-15, k0-7), (n8-15, k8-15) = b[j][0], b[j][1],
  // b[j+1][0], b[j+1][1].
  const int a_lane = warp_m * C::kWarpTileM * kLd + ka_ldsm_offset_a(lane, kLd);
  const int b_lane = warp_n * C::kWarpTileN * kLd + ka_ldsm_offset_b(lane, kLd);
  const int live_m = C::live_m(rows, warp_m);

  auto compute_stage = [&](int stage) {
    if (live_m == 0) return;  // a warp wholly past the segment's last row
    const elem_t* a_base = a_smem + stage * C::kAStage + a_lane;
    const elem_t* b_base = b_smem + stage * C::kBStage + b_lane;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      unsigned b_frag[C::kNB][C::kMmaN / 2][4];
#pragma unroll
      for (int b = 0; b < C::kNB; ++b)
#pragma unroll
        for (int j = 0; j < C::kMmaN / 2; ++j)
          ka_ldmatrix_x4(b_frag[b][j], b_base + (b * kBN + j * 16) * kLd + kk * 16);
#pragma unroll
      for (int i = 0; i < C::kMmaM; ++i) {
        if (i >= live_m) break;
        unsigned a_frag[4];
        ka_ldmatrix_x4(a_frag, a_base + i * 16 * kLd + kk * 16);
#pragma unroll
        for (int b = 0; b < C::kNB; ++b)
#pragma unroll
          for (int j = 0; j < C::kMmaN; ++j)
            ka_mma_16816(acc[b][i][j], a_frag, b_frag[b][j / 2][(j % 2) * 2],
                         b_frag[b][j / 2][(j % 2) * 2 + 1], elem_t());
      }
    }
  };

  for (int kt = 0; kt < k_tiles; ++kt) {
    ka_cp_async_wait<kStages - 2>();
    __syncthreads();
    const int next = kt + kStages - 1;
    if (next < k_tiles) {
      load_b(next % kStages, next);
      load_a(next % kStages, next);
    }
    ka_cp_async_commit();
    compute_stage(kt % kStages);
  }
  ka_cp_async_wait<0>();

  // ---- Epilogue. Accumulator fragment: c0, c1 at (lane / 4, 2 (lane % 4) + {0, 1}), c2, c3
  // eight rows down. N is a multiple of 8 and the column even, so a pair is wholly in or out.
  elem_t* out = kGated ? ws.h : ws.y;
#pragma unroll
  for (int i = 0; i < C::kMmaM; ++i) {
#pragma unroll
    for (int j = 0; j < C::kMmaN; ++j) {
      const long long col = n0 + warp_n * C::kWarpTileN + j * 8 + (lane % 4) * 2;
      if (col >= kN) continue;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = warp_m * C::kWarpTileM + i * 16 + lane / 4 + half * 8;
        if (row >= rows) continue;
        float v0 = acc[0][i][j][2 * half], v1 = acc[0][i][j][2 * half + 1];
        if (kGated) {
          v0 = ka_moe_activation(v0) * acc[C::kNB - 1][i][j][2 * half];
          v1 = ka_moe_activation(v1) * acc[C::kNB - 1][i][j][2 * half + 1];
        }
        Pack2<elem_t> pair;
        pair.v[0] = ka_from_float<elem_t>(v0);
        pair.v[1] = ka_from_float<elem_t>(v1);
        const long long pos = static_cast<long long>(seg_start) + m0 + row;
        *reinterpret_cast<Pack2<elem_t>*>(out + pos * kN + col) = pair;
      }
    }
  }
}

}  // namespace ka_moe
