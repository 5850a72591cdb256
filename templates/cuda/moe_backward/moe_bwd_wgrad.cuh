// GEMM 3 of moe_backward, the weight gradients: per expert, a sum over the expert's sorted rows
// (its routed slots, token order), which is the GEMM's K:
//
//  kDown = false: dW_gate = dg^T x and dW_up = du^T x, M = I, N = H: two A operands (dg and du,
//                 contiguous rows of the workspace) share the B tile (x rows gathered by token),
//                 so each CTA writes the same BM x BN block of both gradients.
//  kDown = true:  dW_down = dy^T (w h), M = H, N = I: A is dy gathered by token, B the rows of
//                 w h that GEMM 1 wrote.
//
// GEMM 1 wrote dg, du and w h in two 16-bit parts, hi + lo (store_split_pair), and both parts go
// through the tensor cores into one float32 accumulator: two mma per product, the operand near
// float32's precision. With hi alone, a gradient summing a few thousand slots (Mixtral's 2 experts
// of a rank at 4096 tokens) picked up an error of ~0.03 from hi's roundings and failed 2e-2 on
// the elements near zero (2.5% of them); x and dy are the inputs, exact in 16 bits.
//
// Both operands are K-outer ([k][m] and [k][n]: a row of the tile is one slot's elements), so
// the tiles are copied slot by slot and both read with ldmatrix .trans. A CTA owns one
// (expert, M tile, N tile) block and the whole K range, in position order: no split-K, no
// atomics, the same sum on every run. An expert no token chose gets zeros (an empty K loop).
#pragma once

#include "moe_bwd_gemm.cuh"

namespace ka_moe {

template <bool kDown, int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages>
struct WgradConfig : WarpTiles<kBM, kBN, kWarpsM, kWarpsN> {
  static constexpr int kNA = kDown ? 1 : 2;      // A operands sharing the B tile: accumulators
  static constexpr int kAParts = kDown ? 1 : 2;  // tiles per A operand: dg, du as hi and lo
  static constexpr int kBParts = kDown ? 2 : 1;  // tiles of B: w h as hi and lo
  static constexpr int kM = kDown ? kHidden : kInter;
  static constexpr int kN = kDown ? kInter : kHidden;
  static constexpr int kLdA = kBM + 8;
  static constexpr int kLdB = kBN + 8;
  static constexpr int kAStage = kBK * kLdA;
  static constexpr int kBStage = kBK * kLdB;
  static constexpr int kStage = kNA * kAParts * kAStage + kBParts * kBStage;
  static constexpr int kSharedBytes = kStages * kStage * 2;
  static constexpr int kMTiles = (kM + kBM - 1) / kBM;
  static constexpr int kNTiles = (kN + kBN - 1) / kBN;
  static_assert(kBK % 16 == 0, "BK3 is a multiple of the mma's k16");
  static_assert(kStages >= 2, "at least two pipeline stages");
};

template <bool kDown, int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages>
__global__ void __launch_bounds__(kWarpsM* kWarpsN * 32) wgrad_kernel(KaArgs ka, Workspace ws) {
  using C = WgradConfig<kDown, kBM, kBN, kBK, kWarpsM, kWarpsN, kStages>;
  constexpr int kThreads = C::kThreads;
  constexpr int kLdA = C::kLdA;
  constexpr int kLdB = C::kLdB;

  extern __shared__ __align__(16) unsigned char ka_smem[];
  elem_t* pipe = reinterpret_cast<elem_t*>(ka_smem);

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;
  const int expert = blockIdx.y;
  // M tiles advance fastest: the CTAs running at once read the same slots' B rows.
  const long long m0 = static_cast<long long>(blockIdx.x % C::kMTiles) * kBM;
  const long long n0 = static_cast<long long>(blockIdx.x / C::kMTiles) * kBN;
  const int seg_start = ws.offsets[expert];
  const int count = ws.offsets[expert + 1] - seg_start;
  const elem_t* anywhere = ka.gate_rows(0);

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_tile * kBK;
    const long long p0 = static_cast<long long>(seg_start) + k0;
    elem_t* dst = pipe + stage * C::kStage;
    // The token of tile row r, or -1 past the expert's rows.
    auto token = [&](int r) -> long long {
      return k0 + r < count ? ws.sorted_slot[p0 + r] / kTopK : -1;
    };
    if constexpr (kDown) {
      copy_tile<kBK, kBM, kThreads>(
          dst, kLdA,
          [&](int r) -> const elem_t* {
            const long long t = token(r);
            return t >= 0 ? ka.dy_row(t) : nullptr;
          },
          m0, kHidden, anywhere);
      // B: w h's hi tile, then its lo tile.
#pragma unroll
      for (int part = 0; part < 2; ++part) {
        const elem_t* hw = part == 0 ? ws.hw : ws.hw_lo;
        copy_tile<kBK, kBN, kThreads>(
            dst + C::kAStage + part * C::kBStage, kLdB,
            [&](int r) -> const elem_t* {
              return k0 + r < count ? hw + (p0 + r) * kInter : nullptr;
            },
            n0, kInter, anywhere);
      }
    } else {
      // A: dg's hi and lo tiles, then du's.
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        const elem_t* rows = a == 0 ? ws.dg : a == 1 ? ws.dg_lo : a == 2 ? ws.du : ws.du_lo;
        copy_tile<kBK, kBM, kThreads>(
            dst + a * C::kAStage, kLdA,
            [&](int r) -> const elem_t* {
              return k0 + r < count ? rows + (p0 + r) * kInter : nullptr;
            },
            m0, kInter, anywhere);
      }
      copy_tile<kBK, kBN, kThreads>(
          dst + 4 * C::kAStage, kLdB,
          [&](int r) -> const elem_t* {
            const long long t = token(r);
            return t >= 0 ? ka.x_row(t) : nullptr;
          },
          n0, kHidden, anywhere);
    }
  };

  float acc[C::kNA][C::kMmaM][C::kMmaN][4];
  zero_fill(acc);

  const int a_lane = warp_m * C::kWarpTileM + ka_ldsm_offset_a_trans(lane, kLdA);
  const int b_lane = warp_n * C::kWarpTileN + ka_ldsm_offset_b_trans(lane, kLdB);

  auto compute_stage = [&](int stage) {
    const elem_t* base = pipe + stage * C::kStage;
    const elem_t* b_base = base + C::kNA * C::kAParts * C::kAStage + b_lane;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      unsigned b_frag[C::kBParts][C::kMmaN / 2][4];
#pragma unroll
      for (int b = 0; b < C::kBParts; ++b)
#pragma unroll
        for (int j = 0; j < C::kMmaN / 2; ++j)
          ka_ldmatrix_x4_trans(b_frag[b][j], b_base + b * C::kBStage + kk * 16 * kLdB + j * 16);
#pragma unroll
      for (int a = 0; a < C::kNA; ++a) {
#pragma unroll
        for (int i = 0; i < C::kMmaM; ++i) {
          // Each part of A times each part of B (hi hi, then lo), into one accumulator.
#pragma unroll
          for (int ap = 0; ap < C::kAParts; ++ap) {
            unsigned a_frag[4];
            ka_ldmatrix_x4_trans(a_frag, base + (a * C::kAParts + ap) * C::kAStage + a_lane +
                                             kk * 16 * kLdA + i * 16);
#pragma unroll
            for (int j = 0; j < C::kMmaN; ++j)
#pragma unroll
              for (int b = 0; b < C::kBParts; ++b)
                ka_mma_16816(acc[a][i][j], a_frag, b_frag[b][j / 2][(j % 2) * 2],
                             b_frag[b][j / 2][(j % 2) * 2 + 1], elem_t());
          }
        }
      }
    }
  };

  run_pipeline<kStages>((count + kBK - 1) / kBK, load_stage, compute_stage);

  // ---- Epilogue: rows of the gradient along M, pairs of columns along N (a multiple of 8).
#pragma unroll
  for (int a = 0; a < C::kNA; ++a) {
    ka_wgrad_t* out = kDown    ? ka.ddown_rows(expert)
                      : a == 0 ? ka.dgate_rows(expert)
                               : ka.dup_rows(expert);
    for_each_acc_row<C>(
        lane, warp_m, m0, static_cast<long long>(C::kM), [&](int i, int half, long long row) {
          for_each_acc_col<C>(lane, warp_n, n0, C::kN, [&](int j, long long col) {
            store_pair(out + row * C::kN + col, acc[a][i][j][2 * half], acc[a][i][j][2 * half + 1]);
          });
        });
  }
}

}  // namespace ka_moe
