// Rows mapped onto thread groups, and reductions inside a group. A block of BLOCK_THREADS
// threads serves kRowsPerBlock rows with kThreadsPerRow threads each (a whole number of warps):
// a warp per row, the whole block per row, or ROWS_PER_BLOCK rows per block. Every reduction
// ends with the same value in every thread of the group, combined in a fixed order.
#pragma once

#include "ka_problem.h"

constexpr int kThreadsPerRow = ROW_MAPPING == KA_ROW_MAPPING_warp ? 32
                               : ROW_MAPPING == KA_ROW_MAPPING_block
                                   ? BLOCK_THREADS
                                   : BLOCK_THREADS / ROWS_PER_BLOCK;
constexpr int kRowsPerBlock = BLOCK_THREADS / kThreadsPerRow;
constexpr int kWarpsPerRow = kThreadsPerRow / 32;
static_assert(kThreadsPerRow % 32 == 0 && kThreadsPerRow * kRowsPerBlock == BLOCK_THREADS,
              "a row needs a whole number of warps");

/// Loads of one pass over memory issued together, so that enough bytes are in flight.
constexpr int kPassUnroll = 4;

__device__ __forceinline__ float ka_neg_inf() {
  return -__int_as_float(0x7f800000);
}

/// Where this thread works: its row, its index inside the row's group, the group's columns
/// (0 for a row past the end, which still joins the block's barriers).
struct RowSlot {
  long long row;
  long long cols;
  int lane_in_row;
  int group;
};

__device__ __forceinline__ RowSlot row_slot(const KaArgs& ka) {
  RowSlot slot;
  slot.group = threadIdx.x / kThreadsPerRow;
  slot.lane_in_row = threadIdx.x % kThreadsPerRow;
  slot.row = static_cast<long long>(blockIdx.x) * kRowsPerBlock + slot.group;
  slot.cols = slot.row < ka.rows() ? ka.cols() : 0;
  return slot;
}

/// Combines K-float states over the group: `combine(a, b)` folds b into a. The warp stage
/// folds toward lane 0 and broadcasts, the block stage goes through shared memory.
template <int K, typename Combine>
__device__ __forceinline__ void group_reduce(float (&state)[K], Combine combine, int group) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    float other[K];
#pragma unroll
    for (int k = 0; k < K; ++k) other[k] = __shfl_down_sync(0xffffffffu, state[k], offset);
    combine(state, other);  // only lane 0's fold is kept
  }
#pragma unroll
  for (int k = 0; k < K; ++k) state[k] = __shfl_sync(0xffffffffu, state[k], 0);
  if constexpr (kWarpsPerRow > 1) {
    __shared__ float partial[K][kRowsPerBlock][kWarpsPerRow];
    const int warp = (threadIdx.x % kThreadsPerRow) / 32;
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) partial[k][group][warp] = state[k];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < K; ++k) state[k] = partial[k][group][0];
    for (int w = 1; w < kWarpsPerRow; ++w) {
      float other[K];
#pragma unroll
      for (int k = 0; k < K; ++k) other[k] = partial[k][group][w];
      combine(state, other);
    }
    // The next reduction may reuse the same shared array.
    __syncthreads();
  }
}

struct SumOp {
  template <int K>
  __device__ __forceinline__ void operator()(float (&a)[K], const float (&b)[K]) const {
#pragma unroll
    for (int k = 0; k < K; ++k) a[k] += b[k];
  }
};

struct MaxOp {
  __device__ __forceinline__ void operator()(float (&a)[1], const float (&b)[1]) const {
    a[0] = ka_max(a[0], b[0]);
  }
};

__device__ __forceinline__ float group_sum(float value, int group) {
  float state[1] = {value};
  group_reduce(state, SumOp(), group);
  return state[0];
}

__device__ __forceinline__ float group_max(float value, int group) {
  float state[1] = {value};
  group_reduce(state, MaxOp(), group);
  return state[0];
}
