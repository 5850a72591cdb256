// FlashAttention-2 style forward attention (prefill, and any other attention problem) for
// bfloat16 / float16 q, k, v with float32 accumulation, sm_80 and later:
//   O = softmax(scale * Q K^T [causal mask]) V   per query head, query head h reading kv head
//   h / KA_GROUP.
//
// Work decomposition. A CTA owns BLOCK_M "rows" of one sequence; a row is one query of one query
// head (HEAD_PACK = 0: the CTA serves query head blockIdx.y), or one (query, head) pair of the
// KA_GROUP query heads that share kv head blockIdx.y (HEAD_PACK = 1: row p is query p / GROUP of
// head blockIdx.y * GROUP + p % GROUP, so the GQA heads share every K/V tile the CTA loads).
// Warp w owns rows [w * 16 * M_TILES, (w + 1) * 16 * M_TILES), M_TILES = BLOCK_M / (16 * WARPS)
// m16 tiles, and keeps their O accumulators, running max and running sum in registers for the
// whole key loop. The CTA walks the keys in tiles of BLOCK_N: S = Q K^T (mma), the online
// softmax in the base-2 domain (scale * log2(e) folded into S, exp2 through ex2.approx), P
// rounded to the input type, O += P V (mma), and finally O / l and the log-sum-exp.
//
// Memory. Q (BLOCK_M rows), and STAGES buffers of K and V (BLOCK_N rows each) live in dynamic
// shared memory as rows of HEAD_DIM + 8 elements: the 16-byte pad makes the row stride an odd
// number of 16-byte units when HEAD_DIM % 16 == 0, so the 8 row addresses of every ldmatrix
// phase land in 8 different bank groups. Rows are copied with cp.async 16-byte chunks, each row
// from the address the header's accessor gives (ka.k_row(b, j, kvh), ...): no stride between
// rows is assumed, so paged and ragged caches work unchanged. Keys at or past kv_len and
// queries past the sequence's end are zero-filled. A row whose address is not 16-byte aligned
// (a tensor base that is not) is copied element by element instead.
//   STAGES >= 2: tile j + STAGES - 1 is prefetched while tile j is computed (one barrier a tile).
//   STAGES == 1: one K and one V buffer; K of tile j + 1 loads during the softmax and P V of
//   tile j, V of tile j + 1 during S of tile j + 1 (the FlashAttention-2 schedule).
//
// Masking. Each row knows its causal limit (keys [0, limit) visible, ka.causal_limit, at most
// kv_len). The CTA loops over ceil(max limit / BLOCK_N) tiles (tiles wholly above the diagonal
// are never loaded); a warp skips the MMAs of a tile that none of its rows can see, and masks
// only tiles that reach past the smallest limit of its rows. A row that sees no key gets a zero
// output and an lse of -inf.
//
// Grid. Dense layouts (RAGGED_Q = 0): blockIdx.x = b * tiles_per_sequence + tile (tile taken in
// reverse, so the longest causal tiles start first), tiles_per_sequence = gridDim.x / batch.
// Ragged and paged prefill (RAGGED_Q = 1): gridDim.x = ceil(TOTAL_Q * PACK / BLOCK_M) + BATCH
// bounds the number of tiles; every warp finds its CTA's (sequence, tile) with a warp-parallel
// prefix sum of the sequences' tile counts; CTAs past the last tile exit.
//
// Knobs: BLOCK_M, BLOCK_N, WARPS (M_TILES = BLOCK_M / (16 * WARPS) is 1 or 2), STAGES,
// Q_IN_REGS (Q's A fragments stay in registers instead of being re-read from shared memory for
// every key tile), HEAD_PACK (above), MIN_BLOCKS (__launch_bounds__ minimum of 2 CTAs per SM,
// applied only when two fit in shared memory).
#include "ka_problem.h"

#include "ka_attention_common.cuh"

static_assert(sizeof(ka_qkv_t) == 2,
              "attention_prefill serves bfloat16 and float16 q/k/v (knobs.json: ELEM_BYTES == 2)");
static_assert(KA_HEAD_DIM % 16 == 0 && KA_HEAD_DIM <= 256,
              "attention_prefill: HEAD_DIM must be a multiple of 16, at most 256");

constexpr int kD = KA_HEAD_DIM;
constexpr int kThreads = WARPS * 32;
constexpr int kMTiles = BLOCK_M / (16 * WARPS);  // m16 tiles per warp
constexpr int kWarpRows = 16 * kMTiles;
constexpr int kSTiles = BLOCK_N / 8;             // n8 tiles of S (keys) per m16 tile
constexpr int kKSteps = kD / 16;                 // k16 steps of Q K^T (over the head dimension)
constexpr int kOTiles = kD / 8;                  // n8 tiles of O (head dimension)
constexpr int kPvSteps = BLOCK_N / 16;           // k16 steps of P V (over the keys)
constexpr int kLd = kD + 8;                      // shared-memory row stride, elements
constexpr int kChunks = kD / 8;                  // 16-byte chunks per row
constexpr int kPack = HEAD_PACK ? KA_GROUP : 1;  // query heads sharing one CTA
static_assert(BLOCK_M % (16 * WARPS) == 0 && kMTiles >= 1, "BLOCK_M = 16 * WARPS * M_TILES");
static_assert(BLOCK_N % 16 == 0, "BLOCK_N is a multiple of 16");
static_assert(STAGES >= 1, "STAGES >= 1");

// Dynamic shared memory (launch.shared_bytes): Q, STAGES x (K, V), one int per warp.
constexpr int kSmemBytes = (BLOCK_M + 2 * STAGES * BLOCK_N) * kLd * 2 + 64;
// MIN_BLOCKS = 2 asks ptxas to fit two CTAs per SM in the register file (at most 128 registers
// a thread with 8 warps); it applies only when two CTAs also fit in shared memory (228 KB per
// SM on sm_90, 1 KB of it reserved per CTA), otherwise it would only cost registers.
constexpr int kMinBlocks = MIN_BLOCKS >= 2 && 2 * (kSmemBytes + 1024) <= 228 * 1024 ? 2 : 1;

__device__ __forceinline__ unsigned smem_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// ldmatrix .x4: lanes 8q..8q+7 give the row addresses of 8x8 matrix q (16 bytes each); register
// r[q] of lane t receives row t / 4, elements 2 * (t % 4) and 2 * (t % 4) + 1 of matrix q (the
// lower column in the low half). With .trans, r[q] of lane t receives elements (2 * (t % 4), t / 4)
// and (2 * (t % 4) + 1, t / 4) of matrix q (row, column as addressed): the transpose.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem))
               : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem))
               : "memory");
}

// d += a * b for one m16n8k16 tile (row.col); the last argument picks the operand type.
// Fragments (g = lane / 4, c = lane % 4; pairs hold the lower column in the low half):
//   A 16x16 row-major: a0 = (g, 2c..2c+1), a1 = (g + 8, 2c..), a2 = (g, 8 + 2c..),
//                      a3 = (g + 8, 8 + 2c..)
//   B 16x8 ("col", element (k, n)): b0 = (k = 2c..2c+1, n = g), b1 = (k = 8 + 2c.., n = g)
//   C/D 16x8 float: d0, d1 = (g, 2c), (g, 2c + 1); d2, d3 = (g + 8, 2c), (g + 8, 2c + 1)
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1, __nv_bfloat16) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1, __half) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ bool aligned_16(const void* pointer) {
  return (reinterpret_cast<unsigned long long>(pointer) & 15) == 0;
}

__device__ __forceinline__ void zero_chunk(ka_qkv_t* dst) {
  *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
}

extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    ka_attention_prefill(KA_KERNEL_PARAMS) {
  const KaArgs ka = KA_ARGS;
  extern __shared__ __align__(16) unsigned char ka_smem[];
  ka_qkv_t* q_smem = reinterpret_cast<ka_qkv_t*>(ka_smem);  // [BLOCK_M][kLd]
  ka_qkv_t* k_smem = q_smem + BLOCK_M * kLd;                // [STAGES][BLOCK_N][kLd]
  ka_qkv_t* v_smem = k_smem + STAGES * BLOCK_N * kLd;       // [STAGES][BLOCK_N][kLd]
  int* limit_smem = reinterpret_cast<int*>(v_smem + STAGES * BLOCK_N * kLd);  // [WARPS]

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const unsigned kFull = 0xffffffffu;

  // ---- Which sequence b and which tile of its rows this CTA computes.
  long long b = -1;
  long long tile = 0;
  if (!ka_attention_find_tile(ka, kPack, BLOCK_M, b, tile)) return;
  const long long rows_total = ka.q_len(b) * kPack;
  const long long row0 = tile * BLOCK_M;
  if (row0 >= rows_total) return;
  const int kv_len = static_cast<int>(ka.kv_len(b));
  const int kvh =
      HEAD_PACK ? static_cast<int>(blockIdx.y) : static_cast<int>(blockIdx.y) / KA_GROUP;
  // Row p of the sequence: its query index and its query head.
  auto row_query = [&](long long p) -> long long { return p / kPack; };
  auto row_head = [&](long long p) -> int {
    return HEAD_PACK ? kvh * KA_GROUP + static_cast<int>(p % kPack) : static_cast<int>(blockIdx.y);
  };

  // ---- Per-thread rows (g = lane / 4): m-tile mt, half hf is CTA row
  // warp * kWarpRows + mt * 16 + g + 8 * hf; its causal limit (0 for rows past the end).
  const int g = lane / 4;
  const int c4 = lane % 4;
  int limit[kMTiles][2];
  int warp_min = 0x7fffffff, warp_max = 0;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const long long p = row0 + warp * kWarpRows + mt * 16 + g + 8 * hf;
      int lim = 0;
      if (p < rows_total) {
        long long l = ka.causal_limit(b, row_query(p));
        l = l < 0 ? 0 : (l > kv_len ? kv_len : l);
        lim = static_cast<int>(l);
        warp_min = min(warp_min, lim);
      }
      warp_max = max(warp_max, lim);
      limit[mt][hf] = lim;
    }
  }
#pragma unroll
  for (int offset = 16; offset >= 1; offset /= 2) {
    warp_min = min(warp_min, __shfl_xor_sync(kFull, warp_min, offset));
    warp_max = max(warp_max, __shfl_xor_sync(kFull, warp_max, offset));
  }
  if (lane == 0) limit_smem[warp] = warp_max;

  // ---- Q tile: row r of the CTA from ka.q_row, zeros past the end (one cp.async group).
  for (int idx = tid; idx < BLOCK_M * kChunks; idx += kThreads) {
    const int r = idx / kChunks;
    const int chunk = idx % kChunks;
    ka_qkv_t* dst = q_smem + r * kLd + chunk * 8;
    const long long p = row0 + r;
    if (p < rows_total)
      ka_copy_chunk_16(dst, ka.q_row(b, row_query(p), row_head(p)) + chunk * 8);
    else
      zero_chunk(dst);
  }
  cp_async_commit();

  __syncthreads();  // limit_smem
  int cta_max = 0;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) cta_max = max(cta_max, limit_smem[w]);
  const int kv_tiles = (cta_max + BLOCK_N - 1) / BLOCK_N;

  // K or V rows [n0, n0 + BLOCK_N) into a buffer; zeros at and past kv_len.
  // Not unrolled: unrolled, the compiler keeps every chunk's row address in registers across
  // the key loop (about 40 registers at HEAD_DIM 128).
  auto load_rows = [&](ka_qkv_t* buffer, int n0, bool values) {
#pragma unroll 1
    for (int i = 0; i < (BLOCK_N * kChunks + kThreads - 1) / kThreads; ++i) {
      const int idx = tid + i * kThreads;
      if ((BLOCK_N * kChunks) % kThreads != 0 && idx >= BLOCK_N * kChunks) break;
      const int r = idx / kChunks;
      const int chunk = idx % kChunks;
      ka_qkv_t* dst = buffer + r * kLd + chunk * 8;
      const int j = n0 + r;
      if (j < kv_len)
        ka_copy_chunk_16(dst, (values ? ka.v_row(b, j, kvh) : ka.k_row(b, j, kvh)) + chunk * 8);
      else
        zero_chunk(dst);
    }
  };

  // ---- Fragment addresses (elements, relative to a buffer), see the layouts at mma_16816.
  // Q (A operand, [row][d] row-major): lane l addresses row l % 16, column 8 * (l / 16), i.e.
  // matrices (rows 0-7, d 0-7), (rows 8-15, d 0-7), (rows 0-7, d 8-15), (rows 8-15, d 8-15) =
  // a0..a3 of the m16 tile.
  const int q_lane = (warp * kWarpRows + lane % 16) * kLd + (lane / 16) * 8;
  // K (B operand of S = Q K^T, B(k = d, n = key) = K[key][d], so K's rows are B's columns, plain
  // ldmatrix): lane l addresses key (l % 8) + 8 * (l / 16), d = 8 * ((l / 8) % 2): matrices
  // (keys 0-7, d 0-7) = b0 and (keys 0-7, d 8-15) = b1 of key tile n8, then the same for keys 8-15
  // = b0, b1 of the next n8 tile.
  const int k_lane = ((lane % 8) + 8 * (lane / 16)) * kLd + 8 * ((lane / 8) % 2);
  // V (B operand of O = P V, B(k = key, n = d) = V[key][d], rows are k: ldmatrix.trans): lane l
  // addresses key (l % 8) + 8 * ((l / 8) % 2), d = 8 * (l / 16): matrices (keys 0-7, d 0-7) = b0,
  // (keys 8-15, d 0-7) = b1 of d tile n8, then (keys 0-7, d 8-15), (keys 8-15, d 8-15) for the
  // next n8 tile. The transpose gives lane t the elements (key 2c, 2c + 1; d = g) = b0.
  const int v_lane = ((lane % 8) + 8 * ((lane / 8) % 2)) * kLd + 8 * (lane / 16);

  float o_acc[kMTiles][kOTiles][4];
  float row_max[kMTiles][2];  // running max of the raw scores; -inf before any key
  float row_sum[kMTiles][2];  // this thread's part of the running sum (4 lanes share a row)
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int n = 0; n < kOTiles; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o_acc[mt][n][e] = 0.0f;
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      row_max[mt][hf] = ka_neg_inf();
      row_sum[mt][hf] = 0.0f;
    }
  }
  const float scale_log2 = ka.scale() * ka_log2e;

  // Q fragments in registers (Q_IN_REGS), loaded once Q has landed.
  unsigned q_frag[Q_IN_REGS ? kMTiles : 1][Q_IN_REGS ? kKSteps : 1][4];
  auto load_q_frags = [&]() {
    if (Q_IN_REGS) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int kk = 0; kk < kKSteps; ++kk)
          ldmatrix_x4(q_frag[Q_IN_REGS ? mt : 0][Q_IN_REGS ? kk : 0],
                      q_smem + q_lane + mt * 16 * kLd + kk * 16);
    }
  };

  float s_acc[kMTiles][kSTiles][4];

  // S = Q K^T for the key tile in `k_buffer`.
  auto compute_scores = [&](const ka_qkv_t* k_buffer) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int n = 0; n < kSTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s_acc[mt][n][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      unsigned a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        if (Q_IN_REGS) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[mt][e] = q_frag[Q_IN_REGS ? mt : 0][Q_IN_REGS ? kk : 0][e];
        } else {
          ldmatrix_x4(a[mt], q_smem + q_lane + mt * 16 * kLd + kk * 16);
        }
      }
#pragma unroll
      for (int np = 0; np < kSTiles / 2; ++np) {
        unsigned kb[4];
        ldmatrix_x4(kb, k_buffer + k_lane + np * 16 * kLd + kk * 16);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma_16816(s_acc[mt][2 * np], a[mt], kb[0], kb[1], ka_qkv_t());
          mma_16816(s_acc[mt][2 * np + 1], a[mt], kb[2], kb[3], ka_qkv_t());
        }
      }
    }
  };

  // Online softmax on s_acc for keys [n0, n0 + BLOCK_N): scale to base 2, mask, new running
  // max, rescale O and the sums, s_acc := P (unnormalised probabilities).
  auto softmax_update = [&](int n0, bool masked) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const float alpha = ka_online_softmax_row<kSTiles>(
            [&](int n, int e) -> float& { return s_acc[mt][n][2 * hf + e]; }, n0, c4, masked,
            limit[mt][hf], scale_log2, row_max[mt][hf], row_sum[mt][hf]);
#pragma unroll
        for (int n = 0; n < kOTiles; ++n) {
          o_acc[mt][n][2 * hf] *= alpha;
          o_acc[mt][n][2 * hf + 1] *= alpha;
        }
      }
    }
  };

  // O += P V for the value tile in `v_buffer`. P's C fragments become A fragments directly: for
  // keys [16 kk, 16 kk + 16) of a row pair (g, g + 8), a0 = (g, keys 2c..) = S tile 2kk d0,d1;
  // a1 = (g + 8, 2c..) = tile 2kk d2,d3; a2 = (g, 8 + 2c..) = tile 2kk + 1 d0,d1; a3 = tile
  // 2kk + 1 d2,d3.
  auto accumulate_values = [&](const ka_qkv_t* v_buffer) {
#pragma unroll
    for (int kk = 0; kk < kPvSteps; ++kk) {
      unsigned a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        a[mt][0] = ka_pack_pair(s_acc[mt][2 * kk][0], s_acc[mt][2 * kk][1], ka_qkv_t());
        a[mt][1] = ka_pack_pair(s_acc[mt][2 * kk][2], s_acc[mt][2 * kk][3], ka_qkv_t());
        a[mt][2] = ka_pack_pair(s_acc[mt][2 * kk + 1][0], s_acc[mt][2 * kk + 1][1], ka_qkv_t());
        a[mt][3] = ka_pack_pair(s_acc[mt][2 * kk + 1][2], s_acc[mt][2 * kk + 1][3], ka_qkv_t());
      }
#pragma unroll
      for (int dp = 0; dp < kOTiles / 2; ++dp) {
        unsigned vb[4];
        ldmatrix_x4_trans(vb, v_buffer + v_lane + kk * 16 * kLd + dp * 16);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma_16816(o_acc[mt][2 * dp], a[mt], vb[0], vb[1], ka_qkv_t());
          mma_16816(o_acc[mt][2 * dp + 1], a[mt], vb[2], vb[3], ka_qkv_t());
        }
      }
    }
  };

  // ---- The key loop.
  if (STAGES >= 2) {
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < kv_tiles) {
        load_rows(k_smem + s * BLOCK_N * kLd, s * BLOCK_N, false);
        load_rows(v_smem + s * BLOCK_N * kLd, s * BLOCK_N, true);
      }
      cp_async_commit();
    }
    for (int j = 0; j < kv_tiles; ++j) {
      // Groups: Q, tiles 0 .. j + STAGES - 2; all but the newest STAGES - 2 are complete, so Q
      // and tile j have landed (for this thread; the barrier makes it every thread's), and every
      // warp has finished tile j - 1, whose buffer the next load overwrites.
      cp_async_wait<(STAGES >= 2 ? STAGES - 2 : 0)>();
      __syncthreads();
      const int next = j + STAGES - 1;
      if (next < kv_tiles) {
        const int slot = next % STAGES;
        load_rows(k_smem + slot * BLOCK_N * kLd, next * BLOCK_N, false);
        load_rows(v_smem + slot * BLOCK_N * kLd, next * BLOCK_N, true);
      }
      cp_async_commit();
      if (j == 0) load_q_frags();
      const int n0 = j * BLOCK_N;
      if (n0 < warp_max) {  // warp-uniform: some row of this warp sees a key of the tile
        const int slot = j % STAGES;
        compute_scores(k_smem + slot * BLOCK_N * kLd);
        softmax_update(n0, n0 + BLOCK_N > warp_min);
        accumulate_values(v_smem + slot * BLOCK_N * kLd);
      }
    }
  } else {
    // One K and one V buffer. Groups per tile: K then V.
    if (kv_tiles > 0) {
      load_rows(k_smem, 0, false);
      cp_async_commit();
      load_rows(v_smem, 0, true);
      cp_async_commit();
    }
    for (int j = 0; j < kv_tiles; ++j) {
      const int n0 = j * BLOCK_N;
      const bool active = n0 < warp_max;  // warp-uniform
      cp_async_wait<1>();                 // all but V_j: Q and K_j
      __syncthreads();
      if (j == 0) load_q_frags();
      if (active) compute_scores(k_smem);
      __syncthreads();  // every warp is done with K_j
      if (j + 1 < kv_tiles) load_rows(k_smem, n0 + BLOCK_N, false);
      cp_async_commit();
      if (active) softmax_update(n0, n0 + BLOCK_N > warp_min);
      cp_async_wait<1>();  // all but K_{j+1}: V_j
      __syncthreads();
      if (active) accumulate_values(v_smem);
      __syncthreads();  // every warp is done with V_j
      if (j + 1 < kv_tiles) load_rows(v_smem, n0 + BLOCK_N, true);
      cp_async_commit();
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every copy into Q's rows has landed, every read of them is done

  // ---- Epilogue: O / l, lse = (m + log2 l) * ln 2; zero and -inf for rows that saw no key.
  float inv_sum[kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float sum = row_sum[mt][hf];
      sum += __shfl_xor_sync(kFull, sum, 1);
      sum += __shfl_xor_sync(kFull, sum, 2);
      inv_sum[mt][hf] = sum > 0.0f ? 1.0f / sum : 0.0f;
      const long long p = row0 + warp * kWarpRows + mt * 16 + g + 8 * hf;
      if (KA_HAS_LSE && c4 == 0 && p < rows_total) {
        const float lse = ka_softmax_lse(row_max[mt][hf], sum, scale_log2);
        ka.store_lse(b, row_query(p), row_head(p), lse);
      }
    }
  }

  if constexpr (sizeof(ka_o_t) == 2) {
    // Stage the warp's rows in its own rows of Q's buffer (only this warp reads or writes them
    // now), then write whole 16-byte chunks of each output row.
    ka_o_t* stage = reinterpret_cast<ka_o_t*>(q_smem);
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = warp * kWarpRows + mt * 16 + g + 8 * hf;
#pragma unroll
        for (int n = 0; n < kOTiles; ++n) {
          *reinterpret_cast<unsigned*>(stage + r * kLd + n * 8 + 2 * c4) =
              ka_pack_pair(o_acc[mt][n][2 * hf] * inv_sum[mt][hf],
                           o_acc[mt][n][2 * hf + 1] * inv_sum[mt][hf], ka_o_t());
        }
      }
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < (kWarpRows * kChunks + 31) / 32; ++i) {
      const int idx = lane + i * 32;
      if ((kWarpRows * kChunks) % 32 != 0 && idx >= kWarpRows * kChunks) break;
      const int r = warp * kWarpRows + idx / kChunks;
      const int chunk = idx % kChunks;
      const long long p = row0 + r;
      if (p >= rows_total) continue;
      ka_o_t* dst = ka.o_row(b, row_query(p), row_head(p)) + chunk * 8;
      const ka_o_t* src = stage + r * kLd + chunk * 8;
      if (aligned_16(dst)) {
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) dst[e] = src[e];
      }
    }
  } else {
    // float32 output: straight from the accumulators.
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const long long p = row0 + warp * kWarpRows + mt * 16 + g + 8 * hf;
        if (p >= rows_total) continue;
        ka_o_t* out = ka.o_row(b, row_query(p), row_head(p));
#pragma unroll
        for (int n = 0; n < kOTiles; ++n) {
          out[n * 8 + 2 * c4] = ka_from_float<ka_o_t>(o_acc[mt][n][2 * hf] * inv_sum[mt][hf]);
          out[n * 8 + 2 * c4 + 1] =
              ka_from_float<ka_o_t>(o_acc[mt][n][2 * hf + 1] * inv_sum[mt][hf]);
        }
      }
    }
  }
}
