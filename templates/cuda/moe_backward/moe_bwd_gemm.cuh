// The grouped GEMMs of moe_backward over the sorted rows (routed slots), M tiles of BM rows from
// the routing-dependent schedule (find_m_tile, ka_moe_grouped.cuh):
//
//  GEMM 1, dgrad_act_kernel: for expert e's rows and BN intermediate columns n, three products
//    over K = H at once: g = x W_gate^T, u = x W_up^T (the forward recomputed) and
//    d = dy W_down (the gradient of h before the routing weight), A rows x and dy gathered by
//    token. Its epilogue is the activation's backward: with w the slot's routing weight,
//    h = act(g) u, dh = w d, dg = dh u act'(g), du = dh act(g) and w h for dW_down, each
//    stored as two 16-bit parts hi + lo (they feed the tensor cores next; GEMM 3 multiplies
//    both, GEMM 2 hi alone); with the routing gradient, the partial dy . y = d . h over the
//    tile's columns (y = h W_down^T, so no y is formed).
//  GEMM 2, dx_kernel: dx_part = dg W_gate + du W_up over K = I, float32, per slot, from dg's and
//    du's hi parts (a slot's dx sums I products, not thousands: hi's rounding stays far inside
//    the tolerance); the combine sums a token's slots in k order.
//
// Operand layouts: x, dy, dg, du and the gate/up weights are K-major ([row][k]): copied row by
// row, read with plain ldmatrix. W_down ([H][I]) in GEMM 1 and W_gate / W_up ([I][H]) in GEMM 2
// are N-major ([k][n]): copied as [BK][BN] tiles along the weights' rows and read with
// ldmatrix .trans. Shared rows are padded by 16 bytes so that the 8 row addresses of an
// ldmatrix phase fall in 8 different bank groups. Rows past the segment, columns past N and K
// past the end are zero-filled, so they add nothing.
//
// The pipeline (as moe_grouped's): STAGES - 1 stages in flight; per K tile: wait for the oldest,
// __syncthreads (the stage about to be refilled was read by every warp in the previous
// iteration), issue the next stage, compute.
#pragma once

#include "moe_bwd_common.cuh"

namespace ka_moe {

/// The K loop of every GEMM of moe_backward (the pipeline above): the first kStages - 1 K tiles
/// issued, a commit group each, then per K tile: wait for the oldest, barrier, issue the tile
/// kStages - 1 ahead, compute; the copies drained at the end. load_stage(stage, k_tile) issues
/// one K tile's copies into a stage, compute_stage(stage) multiplies one. With k_tiles == 0 (an
/// expert no token chose, GEMM 3) only empty groups are committed.
template <int kStages, typename Load, typename Compute>
__device__ __forceinline__ void run_pipeline(int k_tiles, Load&& load_stage,
                                             Compute&& compute_stage) {
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    ka_cp_async_commit();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    ka_cp_async_wait<kStages - 2>();
    __syncthreads();
    const int next = kt + kStages - 1;
    if (next < k_tiles) load_stage(next % kStages, next);
    ka_cp_async_commit();
    compute_stage(kt % kStages);
  }
  ka_cp_async_wait<0>();
}

// The epilogues' walk over this lane's accumulators of a WarpTiles C whose CTA tile starts at
// (row0, col0). Accumulator fragment (i, j): c0, c1 at (lane / 4, 2 (lane % 4) + {0, 1}), c2, c3
// eight rows down. Rows and columns are two walks, nested by the caller, so that per-row work
// (the row's weight, its output offset) is done once per row.

/// row_fn(i, half, row) for the rows of this lane's fragments (c[2 half], c[2 half + 1] of the
/// m16 tile i) below row_limit.
template <class C, typename Row, typename F>
__device__ __forceinline__ void for_each_acc_row(int lane, int warp_m, Row row0, Row row_limit,
                                                 F&& row_fn) {
#pragma unroll
  for (int i = 0; i < C::kMmaM; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const Row row = row0 + warp_m * C::kWarpTileM + i * 16 + lane / 4 + half * 8;
      if (row >= row_limit) continue;
      row_fn(i, half, row);
    }
  }
}

/// col_fn(j, col) for the first columns of this lane's pairs (n8 tile j) below col_limit. The
/// column is even and col_limit a multiple of 8 (the problem's sizes are), so a pair is wholly
/// in or out.
template <class C, typename F>
__device__ __forceinline__ void for_each_acc_col(int lane, int warp_n, long long col0,
                                                 long long col_limit, F&& col_fn) {
#pragma unroll
  for (int j = 0; j < C::kMmaN; ++j) {
    const long long col = col0 + warp_n * C::kWarpTileN + j * 8 + (lane % 4) * 2;
    if (col >= col_limit) continue;
    col_fn(j, col);
  }
}

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages>
struct Gemm1Config : WarpTiles<kBM, kBN, kWarpsM, kWarpsN> {
  static constexpr int kLdK = kBK + 8;                            // x, dy, gate/up tiles' pitch
  static constexpr int kLdN = kBN + 8;                            // the W_down tile's pitch
  static constexpr int kAStage = kBM * kLdK;                      // one of x, dy
  static constexpr int kBStage = 2 * kBN * kLdK;                  // gate rows, then up rows
  static constexpr int kDStage = kBK * kLdN;                      // W_down [BK][BN]
  static constexpr int kStage = 2 * kAStage + kBStage + kDStage;  // elements
  static constexpr int kPipeBytes = kStages * kStage * 2;
  // + x and dy row pointers, row weights, the route partials [WARPS_N][BM].
  static constexpr int kSharedBytes = kPipeBytes + kBM * (8 + 8 + 4) + kWarpsN * kBM * 4;
  static constexpr int kNTiles = (kInter + kBN - 1) / kBN;
  static_assert(kBK % 16 == 0, "BK is a multiple of the mma's k16");
  static_assert(kStages >= 2, "at least two pipeline stages");
};

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages>
struct Gemm2Config : WarpTiles<kBM, kBN, kWarpsM, kWarpsN> {
  static constexpr int kLdK = kBK + 8;  // dg, du tiles' pitch
  static constexpr int kLdN = kBN + 8;  // W_gate, W_up tiles' pitch
  static constexpr int kAStage = kBM * kLdK;
  static constexpr int kBStage = kBK * kLdN;
  static constexpr int kStage = 2 * kAStage + 2 * kBStage;
  static constexpr int kSharedBytes = kStages * kStage * 2;
  static constexpr int kNTiles = (kHidden + kBN - 1) / kBN;
  static_assert(kBK % 16 == 0, "BK is a multiple of the mma's k16");
  static_assert(kStages >= 2, "at least two pipeline stages");
};

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, int kMGroup>
__global__ void __launch_bounds__(kWarpsM* kWarpsN * 32)
    dgrad_act_kernel(KaArgs ka, Workspace ws, int m_tiles) {
  using C = Gemm1Config<kBM, kBN, kBK, kWarpsM, kWarpsN, kStages>;
  constexpr int kThreads = C::kThreads;
  constexpr int kLdK = C::kLdK;
  constexpr int kLdN = C::kLdN;

  extern __shared__ __align__(16) unsigned char ka_smem[];
  elem_t* pipe = reinterpret_cast<elem_t*>(ka_smem);
  const elem_t** x_rows = reinterpret_cast<const elem_t**>(ka_smem + C::kPipeBytes);
  const elem_t** dy_rows = x_rows + kBM;
  float* row_weight = reinterpret_cast<float*>(dy_rows + kBM);
  float* route_sum = row_weight + kBM;

  MTile tile;
  if (!find_m_tile<kExperts, kBM, kMGroup, C::kNTiles, kThreads>(m_tiles, ws.tile_prefix,
                                                                 ws.offsets, tile))
    return;  // past the real tile count: uniform exit
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;
  const int rows = tile.rows;
  const long long pos0 = static_cast<long long>(tile.seg_start) + tile.m0;
  const long long n0 = static_cast<long long>(tile.nt) * kBN;

  for (int r = tid; r < kBM; r += kThreads) {
    const elem_t* x = nullptr;
    const elem_t* dy = nullptr;
    float weight = 0.0f;
    if (r < rows) {
      const int slot = ws.sorted_slot[pos0 + r];
      const long long t = slot / kTopK;
      x = ka.x_row(t);
      dy = ka.dy_row(t);
      weight = ws.topk_weights[slot];
    }
    x_rows[r] = x;
    dy_rows[r] = dy;
    row_weight[r] = weight;
  }
  __syncthreads();

  const elem_t* gate = ka.gate_rows(tile.expert);
  const elem_t* up = ka.up_rows(tile.expert);
  const elem_t* down = ka.down_rows(tile.expert);
  auto load_stage = [&](int stage, int k_tile) {
    const long long k0 = static_cast<long long>(k_tile) * kBK;
    elem_t* dst = pipe + stage * C::kStage;
    copy_tile<kBM, kBK, kThreads>(
        dst, kLdK, [&](int r) { return x_rows[r]; }, k0, kHidden, gate);
    copy_tile<kBM, kBK, kThreads>(
        dst + C::kAStage, kLdK, [&](int r) { return dy_rows[r]; }, k0, kHidden, gate);
    copy_tile<2 * kBN, kBK, kThreads>(
        dst + 2 * C::kAStage, kLdK,
        [&](int r) -> const elem_t* {
          const bool is_up = r >= kBN;
          const long long n = n0 + (is_up ? r - kBN : r);
          return n < kInter ? (is_up ? up : gate) + n * kHidden : nullptr;
        },
        k0, kHidden, gate);
    copy_tile<kBK, kBN, kThreads>(
        dst + 2 * C::kAStage + C::kBStage, kLdN,
        [&](int r) -> const elem_t* {
          const long long k = k0 + r;
          return k < kHidden ? down + k * kInter : nullptr;
        },
        n0, kInter, gate);
  };

  // Accumulators: [0] g, [1] u, [2] d.
  float acc[3][C::kMmaM][C::kMmaN][4];
  zero_fill(acc);

  const int a_lane = warp_m * C::kWarpTileM * kLdK + ka_ldsm_offset_a(lane, kLdK);
  const int b_lane = warp_n * C::kWarpTileN * kLdK + ka_ldsm_offset_b(lane, kLdK);
  const int d_lane = warp_n * C::kWarpTileN + ka_ldsm_offset_b_trans(lane, kLdN);
  const int live_m = C::live_m(rows, warp_m);

  auto compute_stage = [&](int stage) {
    if (live_m == 0) return;
    const elem_t* base = pipe + stage * C::kStage;
    const elem_t* x_base = base + a_lane;
    const elem_t* dy_base = base + C::kAStage + a_lane;
    const elem_t* gu_base = base + 2 * C::kAStage + b_lane;
    const elem_t* d_base = base + 2 * C::kAStage + C::kBStage + d_lane;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      unsigned b_gu[2][C::kMmaN / 2][4];
      unsigned b_d[C::kMmaN / 2][4];
#pragma unroll
      for (int j = 0; j < C::kMmaN / 2; ++j) {
        ka_ldmatrix_x4(b_gu[0][j], gu_base + j * 16 * kLdK + kk * 16);
        ka_ldmatrix_x4(b_gu[1][j], gu_base + (kBN + j * 16) * kLdK + kk * 16);
        ka_ldmatrix_x4_trans(b_d[j], d_base + kk * 16 * kLdN + j * 16);
      }
#pragma unroll
      for (int i = 0; i < C::kMmaM; ++i) {
        if (i >= live_m) break;
        unsigned a_x[4], a_dy[4];
        ka_ldmatrix_x4(a_x, x_base + i * 16 * kLdK + kk * 16);
        ka_ldmatrix_x4(a_dy, dy_base + i * 16 * kLdK + kk * 16);
#pragma unroll
        for (int j = 0; j < C::kMmaN; ++j) {
          const int p = j / 2, q = (j % 2) * 2;
          ka_mma_16816(acc[0][i][j], a_x, b_gu[0][p][q], b_gu[0][p][q + 1], elem_t());
          ka_mma_16816(acc[1][i][j], a_x, b_gu[1][p][q], b_gu[1][p][q + 1], elem_t());
          ka_mma_16816(acc[2][i][j], a_dy, b_d[p][q], b_d[p][q + 1], elem_t());
        }
      }
    }
  };

  run_pipeline<kStages>((kHidden + kBK - 1) / kBK, load_stage, compute_stage);

  // ---- Epilogue: the activation's backward per accumulator pair.
  float route[C::kMmaM][2];
  zero_fill(route);
  for_each_acc_row<C>(lane, warp_m, 0, rows, [&](int i, int half, int row) {
    const float weight = row_weight[row];
    const long long out = (pos0 + row) * kInter;
    for_each_acc_col<C>(lane, warp_n, n0, kInter, [&](int j, long long col) {
      float dg[2], du[2], hw[2];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const float g = acc[0][i][j][2 * half + c];
        const float u = acc[1][i][j][2 * half + c];
        const float d = acc[2][i][j][2 * half + c];
        const float a = ka_moe_activation(g);
        const float h = a * u;
        route[i][half] += d * h;
        const float dh = weight * d;
        dg[c] = dh * u * ka_moe_activation_grad(g);
        du[c] = dh * a;
        hw[c] = weight * h;
      }
      store_split_pair(ws.dg + out + col, ws.dg_lo + out + col, dg[0], dg[1]);
      store_split_pair(ws.du + out + col, ws.du_lo + out + col, du[0], du[1]);
      store_split_pair(ws.hw + out + col, ws.hw_lo + out + col, hw[0], hw[1]);
    });
  });
#if KA_HAS_GRAD_ROUTING
  // dy . y of each row over this tile's columns: the quad's lanes hold a row's column pairs, the
  // WARPS_N warps its column ranges; summed in a fixed order, so the partial is deterministic.
#pragma unroll
  for (int i = 0; i < C::kMmaM; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float v = route[i][half];
      v += __shfl_xor_sync(0xffffffffu, v, 1);
      v += __shfl_xor_sync(0xffffffffu, v, 2);
      if (lane % 4 == 0)
        route_sum[warp_n * kBM + warp_m * C::kWarpTileM + i * 16 + lane / 4 + half * 8] = v;
    }
  }
  __syncthreads();
  for (int r = tid; r < rows; r += kThreads) {
    float total = 0.0f;
    for (int w = 0; w < kWarpsN; ++w) total += route_sum[w * kBM + r];
    ws.route_part[(pos0 + r) * C::kNTiles + tile.nt] = total;
  }
#else
  (void)route;
  (void)route_sum;
#endif
}

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, int kMGroup>
__global__ void __launch_bounds__(kWarpsM* kWarpsN * 32)
    dx_kernel(KaArgs ka, Workspace ws, int m_tiles) {
  using C = Gemm2Config<kBM, kBN, kBK, kWarpsM, kWarpsN, kStages>;
  constexpr int kThreads = C::kThreads;
  constexpr int kLdK = C::kLdK;
  constexpr int kLdN = C::kLdN;

  extern __shared__ __align__(16) unsigned char ka_smem[];
  elem_t* pipe = reinterpret_cast<elem_t*>(ka_smem);

  MTile tile;
  if (!find_m_tile<kExperts, kBM, kMGroup, C::kNTiles, kThreads>(m_tiles, ws.tile_prefix,
                                                                 ws.offsets, tile))
    return;
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;
  const int rows = tile.rows;
  const long long pos0 = static_cast<long long>(tile.seg_start) + tile.m0;
  const long long n0 = static_cast<long long>(tile.nt) * kBN;
  const elem_t* gate = ka.gate_rows(tile.expert);
  const elem_t* up = ka.up_rows(tile.expert);

  auto load_stage = [&](int stage, int k_tile) {
    const long long k0 = static_cast<long long>(k_tile) * kBK;
    elem_t* dst = pipe + stage * C::kStage;
    copy_tile<kBM, kBK, kThreads>(
        dst, kLdK,
        [&](int r) -> const elem_t* { return r < rows ? ws.dg + (pos0 + r) * kInter : nullptr; },
        k0, kInter, gate);
    copy_tile<kBM, kBK, kThreads>(
        dst + C::kAStage, kLdK,
        [&](int r) -> const elem_t* { return r < rows ? ws.du + (pos0 + r) * kInter : nullptr; },
        k0, kInter, gate);
    copy_tile<kBK, kBN, kThreads>(
        dst + 2 * C::kAStage, kLdN,
        [&](int r) -> const elem_t* {
          const long long k = k0 + r;
          return k < kInter ? gate + k * kHidden : nullptr;
        },
        n0, kHidden, gate);
    copy_tile<kBK, kBN, kThreads>(
        dst + 2 * C::kAStage + C::kBStage, kLdN,
        [&](int r) -> const elem_t* {
          const long long k = k0 + r;
          return k < kInter ? up + k * kHidden : nullptr;
        },
        n0, kHidden, gate);
  };

  float acc[C::kMmaM][C::kMmaN][4];
  zero_fill(acc);

  const int a_lane = warp_m * C::kWarpTileM * kLdK + ka_ldsm_offset_a(lane, kLdK);
  const int b_lane = warp_n * C::kWarpTileN + ka_ldsm_offset_b_trans(lane, kLdN);
  const int live_m = C::live_m(rows, warp_m);

  auto compute_stage = [&](int stage) {
    if (live_m == 0) return;
    const elem_t* base = pipe + stage * C::kStage;
    const elem_t* dg_base = base + a_lane;
    const elem_t* du_base = base + C::kAStage + a_lane;
    const elem_t* g_base = base + 2 * C::kAStage + b_lane;
    const elem_t* u_base = g_base + C::kBStage;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      unsigned b_g[C::kMmaN / 2][4], b_u[C::kMmaN / 2][4];
#pragma unroll
      for (int j = 0; j < C::kMmaN / 2; ++j) {
        ka_ldmatrix_x4_trans(b_g[j], g_base + kk * 16 * kLdN + j * 16);
        ka_ldmatrix_x4_trans(b_u[j], u_base + kk * 16 * kLdN + j * 16);
      }
#pragma unroll
      for (int i = 0; i < C::kMmaM; ++i) {
        if (i >= live_m) break;
        unsigned a_g[4], a_u[4];
        ka_ldmatrix_x4(a_g, dg_base + i * 16 * kLdK + kk * 16);
        ka_ldmatrix_x4(a_u, du_base + i * 16 * kLdK + kk * 16);
#pragma unroll
        for (int j = 0; j < C::kMmaN; ++j) {
          const int p = j / 2, q = (j % 2) * 2;
          ka_mma_16816(acc[i][j], a_g, b_g[p][q], b_g[p][q + 1], elem_t());
          ka_mma_16816(acc[i][j], a_u, b_u[p][q], b_u[p][q + 1], elem_t());
        }
      }
    }
  };

  run_pipeline<kStages>((kInter + kBK - 1) / kBK, load_stage, compute_stage);

  for_each_acc_row<C>(lane, warp_m, 0, rows, [&](int i, int half, int row) {
    for_each_acc_col<C>(lane, warp_n, n0, kHidden, [&](int j, long long col) {
      store_pair(ws.dx_part + (pos0 + row) * kHidden + col, acc[i][j][2 * half],
                 acc[i][j][2 * half + 1]);
    });
  });
}

}  // namespace ka_moe
