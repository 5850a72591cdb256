// 2-D transpose, out[c, r] = in[r, c], through a shared-memory tile so that both the reads of
// input rows and the writes of output rows are coalesced. A block moves one TILE x TILE tile:
// kThreadsX threads span the tile's width, VEC elements each, and kThreadsY rows of threads step
// down it. The element bits are copied unchanged.
#include "ka_problem.h"

constexpr int kThreadsX = TILE / VEC;
constexpr int kThreadsY = BLOCK_THREADS / kThreadsX;
static_assert(TILE % VEC == 0 && BLOCK_THREADS % kThreadsX == 0 && kThreadsY <= TILE,
              "the block's threads must tile the tile");

/// The tile at (r0, c0), each thread's VEC elements moved in accesses of W elements: W = VEC
/// when rows and columns are whole packs (vector_ok), W = 1 at any shape. The two widths are
/// separate functions so that the compiler keeps the packed accesses whole.
template <int W>
__device__ __forceinline__ void transpose_tile(const KaArgs& ka, KaElem (&tile)[TILE][TILE + PAD],
                                               long long r0, long long c0, int tx, int ty) {
  for (int r = ty; r < TILE && r0 + r < ka.rows(); r += kThreadsY) {
#pragma unroll
    for (int w = 0; w < VEC; w += W) {
      const int x = tx * VEC + w;
      if (c0 + x >= ka.cols()) break;
      const KaPack<W> p = ka.load<W>(r0 + r, c0 + x);
#pragma unroll
      for (int i = 0; i < W; ++i) tile[r][x + i] = p.v[i];
    }
  }
  __syncthreads();
  // Output row c0 + c is input column c0 + c; its elements [r0 + x, ...) are input rows, read
  // down the tile's column.
  for (int c = ty; c < TILE && c0 + c < ka.cols(); c += kThreadsY) {
#pragma unroll
    for (int w = 0; w < VEC; w += W) {
      const int x = tx * VEC + w;
      if (r0 + x >= ka.rows()) break;
      KaPack<W> p;
#pragma unroll
      for (int i = 0; i < W; ++i) p.v[i] = tile[x + i][c];
      ka.store<W>(c0 + c, r0 + x, p);
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) ka_transpose(KA_KERNEL_PARAMS) {
  const KaArgs ka = KA_ARGS;
  __shared__ KaElem tile[TILE][TILE + PAD];
  const long long r0 = static_cast<long long>(blockIdx.y) * TILE;
  const long long c0 = static_cast<long long>(blockIdx.x) * TILE;
  const int tx = threadIdx.x % kThreadsX;
  const int ty = threadIdx.x / kThreadsX;
  // Rows and columns that are whole multiples of VEC: a pack that starts inside the tensor ends
  // inside it.
  if (VEC > 1 && ka.vector_ok(VEC)) {
    transpose_tile<VEC>(ka, tile, r0, c0, tx, ty);
  } else {
    transpose_tile<1>(ka, tile, r0, c0, tx, ty);
  }
}
