// Shared definitions of the moe_backward CUDA template: the workspace as the kernels see it, and
// the tile copy every GEMM's pipeline uses (the problem's sizes: ka_moe_grouped.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "ka_mma_sync.cuh"
#include "ka_moe_grouped.cuh"
#include "ka_problem.h"

namespace ka_moe {

// The sizes and the checks both templates share: ka_moe_grouped.cuh. TOP_K may exceed EXPERTS:
// on an expert-parallel rank most choices name other ranks' experts.
static_assert(kTopK >= 1, "TOP_K >= 1");

using elem_t = ka_act_t;

/// The workspace as the kernels see it (kernel.cu's Layout places it). Slot s = t * K + k is
/// token t's k-th choice; sorted positions number the routed slots expert by expert, token order
/// within an expert (ka_moe_grouped.cuh), so every per-expert sum has one order.
struct Workspace {
  int* offsets;         // [E + 1] each expert's segment of sorted positions
  int* tile_prefix;     // [E + 1] the M-tile schedule of GEMM 1 and GEMM 2 (BM rows a tile)
  int* chunk_counts;    // [chunks, E] routed slots per expert in each chunk of kChunk slots
  int* topk_ids;        // [S] the slot's expert, -1 for none
  float* topk_weights;  // [S] its routing weight
  int* chunk_rank;      // [S] the slot's place among its expert's slots of its chunk
  int* sorted_slot;     // [S] slot at each sorted position
  int* pos_of_slot;     // [S] sorted position of each slot, -1 for none
  // GEMM 1's results for GEMM 3, each as two 16-bit parts, v ~ hi + lo (store_split_pair): the
  // weight gradients sum thousands of slots, and the rounding of hi alone would show in them.
  elem_t* dg;         // [S, I] d(x W_gate^T), by sorted position (hi; GEMM 2 reads it alone)
  elem_t* du;         // [S, I] d(x W_up^T) (hi; GEMM 2 reads it alone)
  elem_t* hw;         // [S, I] w * h: dW_down = dy^T (w h) (hi)
  elem_t* dg_lo;      // [S, I] dg - hi, rounded
  elem_t* du_lo;      // [S, I] du - hi, rounded
  elem_t* hw_lo;      // [S, I] w h - hi, rounded
  float* dx_part;     // [S, H] the slot's dg W_gate + du W_up
  float* route_part;  // [S, I tiles of GEMM 1] partial dy . y of each N tile
};

/// Slots per CTA of the routing kernels: the unit of the stable counting sort.
constexpr int kChunk = 256;

/// Copies a kRows x kCols tile of 16-bit elements to shared memory at dst (row pitch ld
/// elements) with 16-byte cp.async copies: row r comes from src(r) + col0 (src(r) == nullptr: a
/// zero row), and chunks at or past col_limit are zero-filled. Columns are multiples of 8 (the
/// problem's sizes are), so a chunk is wholly inside or wholly outside. `anywhere` is a valid
/// global address for the zero-filling copies, which read nothing.
template <int kRows, int kCols, int kThreads, typename Src>
__device__ __forceinline__ void copy_tile(elem_t* dst, int ld, Src src, long long col0,
                                          long long col_limit, const elem_t* anywhere) {
  static_assert(kCols % 8 == 0, "16-byte chunks");
  constexpr int kChunksPerRow = kCols / 8;
  constexpr int kChunks = kRows * kChunksPerRow;
#pragma unroll
  for (int i = 0; i < (kChunks + kThreads - 1) / kThreads; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    if (kChunks % kThreads != 0 && c >= kChunks) break;
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * 8;
    const elem_t* row = src(r);
    const bool inside = row != nullptr && col0 + col < col_limit;
    ka_cp_async_16(dst + r * ld + col, inside ? row + col0 + col : anywhere, inside ? 16 : 0);
  }
}

/// Stores two adjacent results, rounded to T, at p (4-byte aligned for 16-bit T, 8 for float).
template <typename T>
__device__ __forceinline__ void store_pair(T* p, float v0, float v1) {
  if constexpr (std::is_same<T, float>::value) {
    *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
  } else {
    Pack2<T> pair;
    pair.v[0] = ka_from_float<T>(v0);
    pair.v[1] = ka_from_float<T>(v1);
    *reinterpret_cast<Pack2<T>*>(p) = pair;
  }
}

/// Stores two adjacent results split in two 16-bit parts: hi = round(v) at hi_p and
/// lo = round(v - hi) at lo_p (v - hi is exact in float). hi + lo carries about twice T's
/// significand bits, so a tensor-core product over both parts (two mma) is near float32's.
template <typename T>
__device__ __forceinline__ void store_split_pair(T* hi_p, T* lo_p, float v0, float v1) {
  static_assert(sizeof(T) == 2, "a split into 16-bit parts");
  Pack2<T> hi, lo;
  hi.v[0] = ka_from_float<T>(v0);
  hi.v[1] = ka_from_float<T>(v1);
  lo.v[0] = ka_from_float<T>(v0 - ka_to_float(hi.v[0]));
  lo.v[1] = ka_from_float<T>(v1 - ka_to_float(hi.v[1]));
  *reinterpret_cast<Pack2<T>*>(hi_p) = hi;
  *reinterpret_cast<Pack2<T>*>(lo_p) = lo;
}

}  // namespace ka_moe
