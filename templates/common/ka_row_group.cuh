// Rows mapped onto thread groups, reductions inside a group, and the passes over a row shared
// by the row kernels. A block of BLOCK_THREADS threads serves kRowsPerBlock rows with
// kThreadsPerRow threads each (a whole number of warps): a warp per row, the whole block per
// row, or ROWS_PER_BLOCK rows per block. Every reduction ends with the same value in every
// thread of the group, combined in a fixed order.
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

struct MinOp {
  __device__ __forceinline__ void operator()(float (&a)[1], const float (&b)[1]) const {
    a[0] = ka_min(a[0], b[0]);
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

__device__ __forceinline__ float group_min(float value, int group) {
  float state[1] = {value};
  group_reduce(state, MinOp(), group);
  return state[0];
}

/// Register cache per thread, in packs of W: the same registers whatever the width.
template <int W>
constexpr int kCacheSlots = MAX_VECS_PER_THREAD* VEC / W;

/// This thread's packs of the row, read into the register cache: x[k] is the pack that starts at
/// column col[k]; has(k) is false for a pack past the row's end, which is left unread.
template <int W>
struct CachedRow {
  float x[kCacheSlots<W>][W];
  long long col[kCacheSlots<W>];
  long long cols;

  __device__ __forceinline__ CachedRow(const KaArgs& ka, const RowSlot& slot) : cols(slot.cols) {
#pragma unroll
    for (int k = 0; k < kCacheSlots<W>; ++k) {
      col[k] = (static_cast<long long>(k) * kThreadsPerRow + slot.lane_in_row) * W;
      if (col[k] < cols) ka.load_row<W>(slot.row, col[k], x[k]);
    }
  }
  __device__ __forceinline__ bool has(int k) const {
    return col[k] < cols;
  }
};

/// One pass over a streamed row: `visit(col, x)` for each pack of this thread, the loads of
/// kPassUnroll packs issued together.
template <int W, typename Visit>
__device__ __forceinline__ void stream_row(const KaArgs& ka, const RowSlot& slot, Visit visit) {
  constexpr long long kStride = static_cast<long long>(kThreadsPerRow) * W;
  for (long long base = static_cast<long long>(slot.lane_in_row) * W; base < slot.cols;
       base += kStride * kPassUnroll) {
    float x[kPassUnroll][W];
#pragma unroll
    for (int u = 0; u < kPassUnroll; ++u)
      if (base + u * kStride < slot.cols) ka.load_row<W>(slot.row, base + u * kStride, x[u]);
#pragma unroll
    for (int u = 0; u < kPassUnroll; ++u)
      if (base + u * kStride < slot.cols) visit(base + u * kStride, x[u]);
  }
}

/// Runs one row operation on this thread's row: RowOp::cached<W> when CACHE_ROW is on and the
/// row fits the register cache, RowOp::streamed<W> otherwise, at width VEC when the tensors allow
/// packed access.
template <typename RowOp, int W>
__device__ __forceinline__ void run_row_at_width(const KaArgs& ka, const RowSlot& slot) {
#if CACHE_ROW
  // Decided on the row length, not on the slot: every group of the block takes the same path,
  // so the barriers of the reductions match.
  if (ka.cols() <= static_cast<long long>(kCacheSlots<W>) * kThreadsPerRow * W) {
    RowOp::template cached<W>(ka, slot);
    return;
  }
#endif
  RowOp::template streamed<W>(ka, slot);
}

template <typename RowOp>
__device__ __forceinline__ void run_row(const KaArgs& ka) {
  const RowSlot slot = row_slot(ka);
  if (VEC > 1 && ka.vector_ok(VEC)) {
    run_row_at_width<RowOp, VEC>(ka, slot);
  } else {
    run_row_at_width<RowOp, 1>(ka, slot);
  }
}
