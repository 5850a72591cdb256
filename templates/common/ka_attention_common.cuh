// Pieces shared by the CUDA prefill attention templates (attention_prefill on mma.sync,
// attention_prefill_wgmma on wgmma): the work split of the grid over sequences and row tiles
// and the rounding of float pairs to the input type. Include after
// ka_problem.h (it reads KaArgs and the KA_ layout macros). Usable from nvcc and NVRTC.
#ifndef KA_ATTENTION_COMMON_CUH
#define KA_ATTENTION_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ka_mma_sync.cuh"
#include "ka_softmax_base2.cuh"

// Two floats rounded to nearest-even into one 32-bit pair of 16-bit elements, lo in the low half.
__device__ __forceinline__ unsigned ka_pack_pair(float lo, float hi, __nv_bfloat16) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}

__device__ __forceinline__ unsigned ka_pack_pair(float lo, float hi, __half) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}

// Never called (a float32 output is written from the accumulators); it keeps the overload set
// unambiguous when ka_o_t is float.
__device__ __forceinline__ unsigned ka_pack_pair(float, float, float) {
  return 0u;
}

/// 8 16-bit elements (16 bytes) of a row into shared memory: one cp.async when the source is
/// 16-byte aligned, plain loads and a shared store otherwise (a tensor whose base is not);
/// returns whether it took the plain path, which cp.async's completion tracking does not cover.
__device__ __forceinline__ bool ka_copy_chunk_16(void* dst, const void* src) {
  if ((reinterpret_cast<unsigned long long>(src) & 15) == 0) {
    ka_cp_async_16(dst, src, 16);
    return false;
  }
  const unsigned short* s = static_cast<const unsigned short*>(src);
  uint4 packed;
  packed.x = s[0] | (static_cast<unsigned>(s[1]) << 16);
  packed.y = s[2] | (static_cast<unsigned>(s[3]) << 16);
  packed.z = s[4] | (static_cast<unsigned>(s[5]) << 16);
  packed.w = s[6] | (static_cast<unsigned>(s[7]) << 16);
  *static_cast<uint4*>(dst) = packed;
  return true;
}

/// How many work items the grid of the prefill templates numbers (`rows_per_query` rows a query,
/// tiles of `block_m` rows): their launch grid's x extent before any padding. Dense layouts:
/// tiles_per_sequence * batch; ragged and paged: an upper bound, ceil(total rows / block_m) +
/// batch.
__device__ __forceinline__ long long ka_attention_tile_count(const KaArgs& ka, int rows_per_query,
                                                             int block_m) {
  if (KA_RAGGED_Q) return (ka.total_q() * rows_per_query + block_m - 1) / block_m + ka.batch();
  return (ka.q_len(0) * rows_per_query + block_m - 1) / block_m * ka.batch();
}

/// Which sequence `b` and which tile of its rows (`rows_per_query` rows a query, tiles of
/// `block_m` rows) work item `index` of `count` (ka_attention_tile_count) is; false when it is
/// none. Every lane of the calling warp must call it (warp shuffles); every warp of the CTA gets
/// the same answer.
//
// Dense layouts (RAGGED_Q = 0): index = b * tiles_per_sequence + tile, tiles taken in reverse so
// the longest causal tiles start first; tiles_per_sequence = count / batch. Ragged and paged
// (RAGGED_Q = 1): tiles are numbered sequence after sequence and item x is number count - 1 - x:
// the count is an upper bound, so the first items hold the numbers past the last tile (their
// CTAs exit at once), the next ones the last tiles of the sequences (the longest under a causal
// mask). A warp-parallel prefix sum over the sequences' tile counts finds the sequence.
__device__ __forceinline__ bool ka_attention_find_tile_at(const KaArgs& ka, int rows_per_query,
                                                          int block_m, long long index,
                                                          long long count, long long& b,
                                                          long long& tile) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x % 32;
  const long long batch = ka.batch();
  b = -1;
  tile = 0;
  if (KA_RAGGED_Q) {
    long long t = count - 1 - index;
    for (long long base = 0; base < batch; base += 32) {
      const long long mine = base + lane;
      const long long tiles =
          mine < batch ? (ka.q_len(mine) * rows_per_query + block_m - 1) / block_m : 0;
      long long inclusive = tiles;  // inclusive prefix sum over the lanes
#pragma unroll
      for (int offset = 1; offset < 32; offset *= 2) {
        const long long other = __shfl_up_sync(full, inclusive, offset);
        if (lane >= offset) inclusive += other;
      }
      const long long total = __shfl_sync(full, inclusive, 31);
      if (t < total) {  // warp-uniform
        const int first = __ffs(__ballot_sync(full, t < inclusive)) - 1;
        const long long before = __shfl_sync(full, inclusive - tiles, first);
        b = base + first;
        tile = t - before;
        return true;
      }
      t -= total;
    }
    return false;  // past the last tile
  }
  if (batch <= 0) return false;
  const long long tiles_per_sequence = count / batch;
  if (tiles_per_sequence == 0) return false;  // no rows at all (the grid was padded to one CTA)
  b = index / tiles_per_sequence;
  if (b >= batch) return false;
  tile = tiles_per_sequence - 1 - index % tiles_per_sequence;
  return true;
}

/// ka_attention_find_tile_at for the grid's own numbering: item blockIdx.x of gridDim.x.
__device__ __forceinline__ bool ka_attention_find_tile(const KaArgs& ka, int rows_per_query,
                                                       int block_m, long long& b, long long& tile) {
  return ka_attention_find_tile_at(ka, rows_per_query, block_m, blockIdx.x, gridDim.x, b, tile);
}

#endif  // KA_ATTENTION_COMMON_CUH
