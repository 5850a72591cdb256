// Element-wise map: output[r, c] = expression(operands at (r, c)), see ka_problem.h.
//
// The output is walked as one flat sequence of vectors of N elements (N = VEC on the vector
// path, 1 otherwise). Block b covers vectors [b * BLOCK_THREADS * ITEMS, ...): item k of thread
// t is vector base + k * BLOCK_THREADS + t, so every access of a warp is contiguous. Since
// COLS % N == 0 on the vector path, a vector never straddles two rows. The loop strides by the
// whole grid, which keeps any grid correct: the launch sizes the grid for VEC, and the scalar
// fallback (vector_ok(VEC) false) simply takes VEC times as many trips.
#include "ka_problem.h"

#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
#endif
#ifndef VEC
#define VEC 8
#endif
#ifndef ITEMS
#define ITEMS 2
#endif

template <int N, typename Index>
__device__ __forceinline__ void map_vectors(const KaArgs& ka, Index row_vectors, Index vectors) {
  const Index per_block = static_cast<Index>(BLOCK_THREADS) * ITEMS;
  const Index stride = static_cast<Index>(gridDim.x) * per_block;
  for (Index base = static_cast<Index>(blockIdx.x) * per_block; base < vectors; base += stride) {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const Index v = base + static_cast<Index>(k * BLOCK_THREADS + threadIdx.x);
      if (v < vectors) {
        const Index row = v / row_vectors;
        const Index col = (v - row * row_vectors) * N;
        ka.apply<N>(static_cast<long long>(row), static_cast<long long>(col));
      }
    }
  }
}

// 32-bit index arithmetic when it cannot overflow (the divisions are much cheaper).
template <int N>
__device__ __forceinline__ void map(const KaArgs& ka, long long row_vectors, long long vectors) {
  if (vectors + static_cast<long long>(gridDim.x) * BLOCK_THREADS * ITEMS < (1LL << 32)) {
    map_vectors<N, unsigned int>(ka, static_cast<unsigned int>(row_vectors),
                                 static_cast<unsigned int>(vectors));
  } else {
    map_vectors<N, long long>(ka, row_vectors, vectors);
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) ka_elementwise(KA_KERNEL_PARAMS) {
  const KaArgs ka = KA_ARGS;
  const long long cols = ka.cols();
  if (cols == 0) return;
  if (VEC > 1 && ka.vector_ok(VEC)) {
    map<VEC>(ka, cols / VEC, ka.rows() * (cols / VEC));
  } else {
    map<1>(ka, cols, ka.rows() * cols);
  }
}
