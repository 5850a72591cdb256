// Split-KV grouped-query attention decode ("flash-decoding"): one query per sequence.
//
// decode_split_kernel: one CTA per (sequence b, kv head, split s). The split's keys are cut into
// KTILE-key tiles; warp w takes tiles w, w + WARPS, ... and streams each tile's K and V rows
// through its own STAGES-deep cp.async ring in shared memory (16-byte copies, rows addressed
// one by one through the header's k_row / v_row, so paged caches work). Every K/V row is read
// from memory once and used by all GROUP query heads of the kv head. Each warp keeps an online
// softmax state (running max m, sum l, unnormalised acc[D]) per head in log2 units; at the end
// the warps' states are merged through shared memory. With one split the CTA writes the output
// and lse; otherwise it writes (lse2, acc / l) for its split to the workspace, and the splits
// are merged by the combine kernel or by the last CTA of the (sequence, kv head) to finish. The
// split bookkeeping, the warps' merge and the combine are ka_split_kv.cuh's, shared with
// attention_decode_nvfp4.
//
// Two ways to do the arithmetic on a tile:
//  - MMA (bfloat16/float16, HEAD_DIM % 16 == 0): the GROUP heads are the rows of an m16
//    tile. S = Q K^T with mma.m16n8k16 (K fragments through ldmatrix), the softmax on the
//    accumulator fragments, then O += P V (P repacked from the S accumulators, V through
//    ldmatrix.trans).
//  - SIMT (any type, MATH=simt): LPR lanes share a row (each holds NV 16-byte chunks of it), a
//    warp works on 32 / LPR rows at once, dot products reduce with xor shuffles, and each lane
//    group keeps its own online-softmax state, merged with its neighbours at the end.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ka_problem.h"
#include "ka_split_kv.cuh"

namespace ka_attn {

constexpr int kWarps = WARPS;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = KTILE;  // keys per warp per pipeline stage
constexpr int kStages = STAGES;
constexpr int kHeadDim = KA_HEAD_DIM;
constexpr int kGroup = KA_GROUP;
constexpr int kKvHeads = KA_KV_HEADS;
constexpr int kQHeads = KA_Q_HEADS;
constexpr int kElemBytes = static_cast<int>(sizeof(ka_qkv_t));
constexpr int kChunkElems = 16 / kElemBytes;     // elements per 16-byte chunk
constexpr int kChunks = kHeadDim / kChunkElems;  // 16-byte chunks per head row
// Shared rows are padded by 16 bytes: eight consecutive rows then start in eight different
// 16-byte bank groups, so ldmatrix (8 rows, same column) and the SIMT row reads are free of
// bank conflicts for every HEAD_DIM.
constexpr int kRowPitch = kHeadDim * kElemBytes + 16;
constexpr int kStageBytes = 2 * kTile * kRowPitch;  // K tile, then V tile
constexpr int kPipeBytes = kWarps * kStages * kStageBytes;
// The warps' final states are written over the rings once every warp is done with them.
using WarpStates = ka_split_kv::WarpStates<kWarps, kGroup>;
constexpr int kSharedBytes = kPipeBytes > WarpStates::kBytes ? kPipeBytes : WarpStates::kBytes;
constexpr int kSplitStep = 16;  // keys per split in whole 16-key steps (tidier tiles only)

constexpr bool kSixteenBit =
    std::is_same<ka_qkv_t, __nv_bfloat16>::value || std::is_same<ka_qkv_t, __half>::value;
constexpr bool kHalf = std::is_same<ka_qkv_t, __half>::value;
constexpr bool kUseMma = MATH == KA_MATH_auto && kSixteenBit && kHeadDim % 16 == 0;

static_assert(KA_DECODE == 1, "attention_decode serves decode problems (one query per sequence)");
static_assert(kElemBytes == 2 || kElemBytes == 4,
              "q, k and v must be float32, float16 or bfloat16");
static_assert((kHeadDim * kElemBytes) % 16 == 0, "head rows must be whole 16-byte chunks");
static_assert(kTile % 16 == 0, "KTILE must be a multiple of 16");
static_assert(kStages >= 2, "STAGES must be at least 2");
static_assert(kQHeads == kKvHeads * kGroup, "Q_HEADS must be KV_HEADS * GROUP");

// ---------------------------------------------------------------------------------------------
// Small PTX wrappers.

__device__ __forceinline__ uint32_t smem_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

/// 16-byte global -> shared copy; with bytes == 0 nothing is read and the 16 bytes are zeroed.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t address, uint32_t& r0, uint32_t& r1,
                                            uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(address));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t address, uint32_t& r0, uint32_t& r1,
                                                  uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(address));
}

/// c += a * b for one m16n8k16 tile, float32 accumulators.
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (kHalf) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

/// Two floats as a packed pair of the 16-bit input type, `lo` in the low half (the element
/// with the smaller index in an mma fragment).
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  uint32_t bits;
  if constexpr (kHalf) {
    const __half2 pair = __floats2half2_rn(lo, hi);
    memcpy(&bits, &pair, 4);
  } else {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
    memcpy(&bits, &pair, 4);
  }
  return bits;
}

/// The kChunkElems elements of a 16-byte chunk as floats.
__device__ __forceinline__ void chunk_to_float(const uint4& raw, float* out) {
  ka_qkv_t elements[kChunkElems];
  memcpy(elements, &raw, 16);
#pragma unroll
  for (int i = 0; i < kChunkElems; ++i) out[i] = ka_to_float(elements[i]);
}

// ---------------------------------------------------------------------------------------------
// One warp's K/V ring.

/// Copies keys [key0, key0 + valid) of (b, kvh) into a stage: K rows at `stage`, V rows
/// kTile * kRowPitch bytes later. Rows >= valid are zero-filled (src-size 0 reads nothing; the
/// address given is key0's, which is valid), so a masked key never brings NaN or Inf from
/// stale shared memory into P V.
///
/// Every lane of every warp issues these copies between its tiles' math, so their address
/// arithmetic competes with the math for issue slots (a 64-bit row computation per 16-byte
/// chunk was most of a tile's instructions). Without pages, consecutive keys are
/// KaArgs::kv_pitch elements apart: when a row's chunks divide the warp, each lane keeps one
/// chunk column, computes its first row's address once and reaches the tile's other rows by
/// immediate offsets. Paged rows of consecutive keys may sit in different pages, so they (and
/// head rows of other widths) take each row's address from the header.
__device__ __forceinline__ void load_tile(const KaArgs& ka, long long b, int kvh, long long key0,
                                          int valid, uint32_t stage, int lane) {
  const uint32_t v_stage = stage + kTile * kRowPitch;
  if constexpr (!KA_LAYOUT_PAGED && 32 % kChunks == 0 && kTile % (32 / kChunks) == 0) {
    constexpr int kRowsPerPass = 32 / kChunks;
    constexpr long long kPitch = KaArgs::kv_pitch;
    const int chunk = lane % kChunks;
    const int first = lane / kChunks;
    const ka_qkv_t* k_row0 = ka.k_row(b, key0, kvh);
    const ka_qkv_t* v_row0 = ka.v_row(b, key0, kvh);
    const ka_qkv_t* k_src = k_row0 + first * kPitch + chunk * kChunkElems;
    const ka_qkv_t* v_src = v_row0 + first * kPitch + chunk * kChunkElems;
    const uint32_t offset = static_cast<uint32_t>(first * kRowPitch + chunk * 16);
    if (valid >= kTile) {
#pragma unroll
      for (int pass = 0; pass < kTile / kRowsPerPass; ++pass) {
        const uint32_t at = offset + pass * kRowsPerPass * kRowPitch;
        cp_async16(stage + at, k_src + pass * kRowsPerPass * kPitch, 16);
        cp_async16(v_stage + at, v_src + pass * kRowsPerPass * kPitch, 16);
      }
    } else {
#pragma unroll 4
      for (int pass = 0; pass < kTile / kRowsPerPass; ++pass) {
        const bool ok = first + pass * kRowsPerPass < valid;
        const uint32_t at = offset + pass * kRowsPerPass * kRowPitch;
        cp_async16(stage + at, ok ? k_src + pass * kRowsPerPass * kPitch : k_row0, ok ? 16 : 0);
        cp_async16(v_stage + at, ok ? v_src + pass * kRowsPerPass * kPitch : v_row0, ok ? 16 : 0);
      }
    }
  } else {
#pragma unroll 4
    for (int i = lane; i < kTile * kChunks; i += 32) {
      const int row = i / kChunks;
      const int chunk = i % kChunks;
      const bool ok = row < valid;
      const long long key = key0 + (ok ? row : 0);
      const ka_qkv_t* k_src = ka.k_row(b, key, kvh) + chunk * kChunkElems;
      const ka_qkv_t* v_src = ka.v_row(b, key, kvh) + chunk * kChunkElems;
      const uint32_t offset = static_cast<uint32_t>(row * kRowPitch + chunk * 16);
      cp_async16(stage + offset, k_src, ok ? 16 : 0);
      cp_async16(v_stage + offset, v_src, ok ? 16 : 0);
    }
  }
}

/// Streams this warp's tiles of keys [k0, k1) through its ring and hands each to
/// state.tile(k_stage, v_stage, valid). Tile t of the split covers keys k0 + t * kTile ...;
/// warp w takes t = w, w + kWarps, ...
template <class State>
__device__ __forceinline__ void stream_tiles(const KaArgs& ka, long long b, int kvh, long long k0,
                                             long long k1, unsigned char* ring, int warp, int lane,
                                             State& state) {
  const long long n_tiles = (k1 - k0 + kTile - 1) / kTile;
  const long long my_tiles = n_tiles > warp ? (n_tiles - warp + kWarps - 1) / kWarps : 0;
  const uint32_t ring_base = smem_address(ring);
  auto tile_key0 = [&](long long i) { return k0 + (warp + i * kWarps) * kTile; };
  auto tile_valid = [&](long long key0) {
    const long long left = k1 - key0;
    return static_cast<int>(left < kTile ? left : kTile);
  };
  // One commit group per ring slot, empty ones included, so that wait_group<kStages - 2> at
  // iteration i always means "the group of tile i has landed" (groups committed before the
  // wait: kStages - 1 + i).
#pragma unroll
  for (int p = 0; p < kStages - 1; ++p) {
    if (p < my_tiles) {
      const long long key0 = tile_key0(p);
      load_tile(ka, b, kvh, key0, tile_valid(key0), ring_base + p * kStageBytes, lane);
    }
    cp_async_commit();
  }
  for (long long i = 0; i < my_tiles; ++i) {
    cp_async_wait<kStages - 2>();
    // Makes every lane's copies of tile i visible to the whole warp, and orders the reads of
    // the slot computed in iteration i - 1 before the copies issued into it just below.
    __syncwarp();
    const long long next = i + kStages - 1;
    if (next < my_tiles) {
      const long long key0 = tile_key0(next);
      load_tile(ka, b, kvh, key0, tile_valid(key0),
                ring_base + static_cast<uint32_t>(next % kStages) * kStageBytes, lane);
    }
    cp_async_commit();
    const uint32_t stage = ring_base + static_cast<uint32_t>(i % kStages) * kStageBytes;
    state.tile(stage, stage + kTile * kRowPitch, tile_valid(tile_key0(i)));
  }
  cp_async_wait<0>();
}

// ---------------------------------------------------------------------------------------------
// Tensor-core tile math (16-bit inputs).

template <int kUnused = 0>  // a template: only the path in use is instantiated
struct MmaState {
  static constexpr int kMTiles = (kGroup + 15) / 16;  // m16 tiles of query heads
  static constexpr int kKSteps = kHeadDim / 16;       // k16 steps of Q K^T
  static constexpr int kNTiles = kTile / 8;           // n8 key tiles of S
  static constexpr int kDTiles = kHeadDim / 8;        // n8 dim tiles of O

  // mma fragment layouts (m16n8k16, g = lane / 4, t = lane % 4):
  //   A (16 x 16): reg0 (row g, cols 2t, 2t+1), reg1 (row g+8, same cols), reg2 (row g,
  //                cols 2t+8, 2t+9), reg3 (row g+8, cols 2t+8, 2t+9);
  //   B (16 x 8):  reg0 (rows 2t, 2t+1 of col g), reg1 (rows 2t+8, 2t+9 of col g);
  //   C (16 x 8):  c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row g+8, same cols).
  uint32_t q[kMTiles][kKSteps][4];
  float acc[kMTiles][kDTiles][4];
  float m[kMTiles][2];  // running max of rows g (index 0) and g + 8 (index 1), log2 units
  float l[kMTiles][2];  // running sum, this lane's columns only (the quad is summed at the end)
  float scale_log2;
  int lane;

  /// Is half h (rows +8h) of m-tile mt a real head for any lane? (A compile-time answer.)
  __host__ __device__ static constexpr bool half_used(int mt, int h) {
    return mt * 16 + 8 * h < kGroup;
  }

  __device__ __forceinline__ void init(const KaArgs& ka, long long b, int kvh, int lane_,
                                       float scale_log2_) {
    lane = lane_;
    scale_log2 = scale_log2_;
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = mt * 16 + g + 8 * h;
        const bool real = half_used(mt, h) && row < kGroup;
        const ka_qkv_t* q_row = ka.q_row(b, 0, kvh * kGroup + (real ? row : 0));
#pragma unroll
        for (int kk = 0; kk < kKSteps; ++kk) {
          // Unscaled q: exactly the input values; the scale is applied to S in float32.
          const int col = kk * 16 + 2 * t;
          q[mt][kk][h] = real ? *reinterpret_cast<const uint32_t*>(q_row + col) : 0u;
          q[mt][kk][h + 2] = real ? *reinterpret_cast<const uint32_t*>(q_row + col + 8) : 0u;
        }
        m[mt][h] = -INFINITY;
        l[mt][h] = 0.f;
      }
#pragma unroll
      for (int dt = 0; dt < kDTiles; ++dt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mt][dt][e] = 0.f;
    }
  }

  __device__ __forceinline__ void tile(uint32_t k_stage, uint32_t v_stage, int valid) {
    float s[kMTiles][kNTiles][4];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;

          // S = Q K^T. One ldmatrix.x4 gives the B fragments of two n8 key tiles for one k16 step:
          // lanes 0-7 address keys 8*(2p)+0..7 at dims 16kk+0..7 (reg0 of tile 2p), lanes 8-15 the
          // same keys at dims 16kk+8..15 (reg1), lanes 16-31 the same for keys 8*(2p+1)+0..7. K is
          // stored [key][dim], i.e. B = K^T column-major, so no transpose is needed.
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
#pragma unroll
      for (int p = 0; p < kNTiles / 2; ++p) {
        const int key = (2 * p + (lane >> 4)) * 8 + (lane & 7);
        const int chunk = 2 * kk + ((lane >> 3) & 1);
        uint32_t b0, b1, b2, b3;
        ldmatrix_x4(k_stage + key * kRowPitch + chunk * 16, b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma16816(s[mt][2 * p], q[mt][kk], b0, b1);
          mma16816(s[mt][2 * p + 1], q[mt][kk], b2, b3);
        }
      }
    }

    // Scale to log2 units and mask keys past the tile's end (their K rows are zeros).
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = nt * 8 + 2 * (lane & 3) + (e & 1);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
          s[mt][nt][e] = key < valid ? s[mt][nt][e] * scale_log2 : -INFINITY;
      }
    }

    // Online softmax per row. A row's 16 columns of this tile are spread over the 4 lanes of
    // a quad (2 per n8 tile each), so the tile max is reduced over the quad (xor 1, 2) and is
    // the same in all four lanes; alpha is then uniform over the quad as well, which is why l
    // may stay a per-lane partial sum until the end.
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!half_used(mt, h)) {  // padding rows: P = 0 keeps their (unused) acc finite
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt) s[mt][nt][2 * h] = s[mt][nt][2 * h + 1] = 0.f;
          continue;
        }
        float tile_max = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
          tile_max = fmaxf(tile_max, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
        const float m_new = fmaxf(m[mt][h], tile_max);
        // Every tile has a valid key, so m_new is finite for real scores; the guard keeps
        // -inf - -inf (NaN) out should it not be.
        const float base = m_new == -INFINITY ? 0.f : m_new;
        const float alpha = ka_fast_exp2(m[mt][h] - base);  // 0 on the first tile (m = -inf)
        m[mt][h] = m_new;
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
          s[mt][nt][2 * h] = ka_fast_exp2(s[mt][nt][2 * h] - base);
          s[mt][nt][2 * h + 1] = ka_fast_exp2(s[mt][nt][2 * h + 1] - base);
          sum += s[mt][nt][2 * h] + s[mt][nt][2 * h + 1];
        }
        l[mt][h] = l[mt][h] * alpha + sum;
#pragma unroll
        for (int dt = 0; dt < kDTiles; ++dt) {
          acc[mt][dt][2 * h] *= alpha;
          acc[mt][dt][2 * h + 1] *= alpha;
        }
      }
    }

    // O += P V. The S accumulators of n8 key tiles 2j and 2j+1 are exactly the A fragment of
    // k16 step j (C's (row g, cols 2t..) of tile 2j = A reg0, row g+8 = reg1, tile 2j+1 = reg2,
    // reg3). V is [key][dim], B = V needs rows = keys, so ldmatrix.trans: lanes 0-7 address
    // keys 16j+0..7 at dims 16p+0..7 (reg0 of dim tile 2p), lanes 8-15 keys 16j+8..15 (reg1),
    // lanes 16-31 the same keys at dims 16p+8..15 (dim tile 2p+1).
#pragma unroll
    for (int j = 0; j < kNTiles / 2; ++j) {
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        a[mt][0] = pack_pair(s[mt][2 * j][0], s[mt][2 * j][1]);
        a[mt][1] = pack_pair(s[mt][2 * j][2], s[mt][2 * j][3]);
        a[mt][2] = pack_pair(s[mt][2 * j + 1][0], s[mt][2 * j + 1][1]);
        a[mt][3] = pack_pair(s[mt][2 * j + 1][2], s[mt][2 * j + 1][3]);
      }
#pragma unroll
      for (int p = 0; p < kDTiles / 2; ++p) {
        const int key = 16 * j + ((lane >> 3) & 1) * 8 + (lane & 7);
        const int chunk = 2 * p + (lane >> 4);
        uint32_t b0, b1, b2, b3;
        ldmatrix_x4_trans(v_stage + key * kRowPitch + chunk * 16, b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma16816(acc[mt][2 * p], a[mt], b0, b1);
          mma16816(acc[mt][2 * p + 1], a[mt], b2, b3);
        }
      }
    }
  }

  /// Writes this warp's state into the combine area (rows < GROUP only).
  __device__ __forceinline__ void store(float* cm, float* cl, float* cacc, int warp) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float lsum = l[mt][h];
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
        const int row = mt * 16 + g + 8 * h;
        if (!half_used(mt, h) || row >= kGroup) continue;
        const int slot = warp * kGroup + row;
        if (t == 0) {
          cm[slot] = m[mt][h];
          cl[slot] = lsum;
        }
#pragma unroll
        for (int dt = 0; dt < kDTiles; ++dt) {
          float* dst = cacc + static_cast<long long>(slot) * kHeadDim + dt * 8 + 2 * t;
          dst[0] = acc[mt][dt][2 * h];
          dst[1] = acc[mt][dt][2 * h + 1];
        }
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// CUDA-core tile math (any type).

/// Largest power of two <= 32 that divides n.
constexpr int lanes_per_row(int n) {
  int lanes = 1;
  while (lanes < 32 && n % (lanes * 2) == 0) lanes *= 2;
  return lanes;
}

// Lane (gi, gl) = (lane / kLanes, lane % kLanes) holds chunks gl + kLanes * v of a row
// (neighbouring lanes read neighbouring chunks), for every head of the group. kLanes lanes share
// a row; a template, so that only the path in use is instantiated.
template <int kLanes = lanes_per_row(kChunks)>
struct SimtState : ka_split_kv::LaneSoftmax<kLanes, kGroup, kChunks / kLanes * kChunkElems> {
  static constexpr int kVecs = kChunks / kLanes;      // 16-byte chunks per lane per row
  static constexpr int kRows = 32 / kLanes;           // rows a warp works on at once
  static constexpr int kElems = kVecs * kChunkElems;  // row elements per lane
  using Softmax = ka_split_kv::LaneSoftmax<kLanes, kGroup, kElems>;
  using Softmax::acc;
  using Softmax::l;
  using Softmax::m;
  using Softmax::q;
  int lane;

  __device__ __forceinline__ void init(const KaArgs& ka, long long b, int kvh, int lane_,
                                       float scale_log2) {
    lane = lane_;
    const int gl = lane % kLanes;
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      const ka_qkv_t* q_row = ka.q_row(b, 0, kvh * kGroup + g);
#pragma unroll
      for (int v = 0; v < kVecs; ++v) {
        const uint4 raw = *reinterpret_cast<const uint4*>(q_row + (gl + kLanes * v) * kChunkElems);
        chunk_to_float(raw, &q[g][v * kChunkElems]);
      }
#pragma unroll
      for (int e = 0; e < kElems; ++e) q[g][e] *= scale_log2;
    }
    this->reset();
  }

  __device__ __forceinline__ void load_row(uint32_t stage, int row, float* out) const {
    const int gl = lane % kLanes;
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      uint4 raw;
      const uint32_t address = stage + row * kRowPitch + (gl + kLanes * v) * 16;
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
                   : "r"(address));
      chunk_to_float(raw, out + v * kChunkElems);
    }
  }

  __device__ __forceinline__ void tile(uint32_t k_stage, uint32_t v_stage, int valid) {
    const int gi = lane / kLanes;
    // Every lane runs every step (the shuffles need the whole warp); rows past `valid`
    // (including rows past kTile when kRows > kTile) are neither read nor accumulated.
#pragma unroll 1
    for (int r0 = 0; r0 < kTile; r0 += kRows) {
      const int row = r0 + gi;
      const bool ok = row < valid;
      float k[kElems];
      if (ok) {
        load_row(k_stage, row, k);
      } else {
#pragma unroll
        for (int e = 0; e < kElems; ++e) k[e] = 0.f;
      }
      float dot[kGroup];
      this->logits(k, 1.f, dot);
      if (ok) {
        float v[kElems];
        load_row(v_stage, row, v);
        this->add(dot, v, 1.f);
      }
    }
  }

  /// Merges the warp's lane groups and writes the merged state from lane group 0.
  __device__ __forceinline__ void store(float* cm, float* cl, float* cacc, int warp) {
    this->merge_groups();
    if (lane >= kLanes) return;
    const int gl = lane;
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      const int slot = warp * kGroup + g;
      if (gl == 0) {
        cm[slot] = m[g];
        cl[slot] = l[g];
      }
#pragma unroll
      for (int v = 0; v < kVecs; ++v)
#pragma unroll
        for (int e = 0; e < kChunkElems; ++e)
          cacc[static_cast<long long>(slot) * kHeadDim + (gl + kLanes * v) * kChunkElems + e] =
              acc[g][v * kChunkElems + e];
    }
  }
};

using TileState = typename std::conditional<kUseMma, MmaState<>, SimtState<>>::type;

// ---------------------------------------------------------------------------------------------
// Kernels.

/// blockIdx.x = (b * KV_HEADS + kvh) * ws.splits + s.
__global__ void KA_SPLIT_KERNEL_BOUNDS(kThreads)
    decode_split_kernel(const KaArgs ka, const ka_split_kv::Workspace ws) {
  extern __shared__ __align__(16) unsigned char smem[];
  ka_split_kv::Split split;
  if (!ka_split_kv::find_split<kSplitStep>(ka, ws, split)) return;  // before any barrier
  const long long b = split.b;
  const int kvh = split.kvh;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  TileState state;
  state.init(ka, b, kvh, lane, ka.scale() * ka_log2e);
  stream_tiles(ka, b, kvh, split.k0, split.k1, smem + warp * kStages * kStageBytes, warp, lane,
               state);

  // Every warp is done with its ring (its own copies drained by cp_async_wait<0>), so the
  // rings can be overwritten by the warps' states.
  __syncthreads();
  const WarpStates states(reinterpret_cast<float*>(smem));
  state.store(states.m, states.l, states.acc, warp);
  __syncthreads();
  ka_split_kv::write_split(ka, ws, states, split);

#if COMBINE == KA_COMBINE_last_cta
  __shared__ float s_w[ka_split_kv::kMaxSplits + 1];
  __shared__ int s_last;
  if (split.nsplit == 1) return;
  // Release: this thread's partials are visible device-wide before thread 0 takes a ticket
  // (the barrier orders every thread's fence before the atomic).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned ticket = atomicAdd(ws.counters + (b * kKvHeads + kvh), 1u);
    s_last = ticket == static_cast<unsigned>(split.nsplit - 1);
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();  // acquire: the other splits' partials, published before their tickets
  for (int g = 0; g < kGroup; ++g)
    ka_split_kv::combine_head(ka, ws, b, kvh * kGroup + g, split.nsplit, s_w);
#endif
}

}  // namespace ka_attn
