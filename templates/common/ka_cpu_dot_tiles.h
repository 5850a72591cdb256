// Register-tiled dot products for the CPU templates whose products run along rows of both
// operands (a token's row times a weight's row): an R x C tile of float accumulators, SIMD_WIDTH
// lanes along the reduced axis, with ROW_TILE x COL_TILE tiles over a block. The including
// template defines the knobs ROW_TILE, COL_TILE and SIMD_WIDTH.
#ifndef KA_CPU_DOT_TILES_H
#define KA_CPU_DOT_TILES_H

#include "ka_problem.h"  // ka_to_float

namespace ka_tiles {

constexpr int kRowTile = ROW_TILE;
constexpr int kColTile = COL_TILE;
constexpr int kWidth = SIMD_WIDTH;

/// c[i][j] (+)= sum_d a[i][d] * b[j][d] for i < R, j < C, d < depth: an R x C register tile of
/// kWidth float lanes along d, folded at the end, the last depth % kWidth terms one by one.
template <int R, int C, typename B>
inline void tile_dot(const float* __restrict a, long long lda, const B* const* b, int depth,
                     float* __restrict c, long long ldc, bool accumulate) {
  const int full = depth / kWidth * kWidth;
  float acc[R][C][kWidth] = {};
  for (int d0 = 0; d0 < full; d0 += kWidth) {
    for (int j = 0; j < C; ++j) {
      const B* __restrict bp = b[j] + d0;
      for (int i = 0; i < R; ++i) {
        const float* ap = a + i * lda + d0;
#pragma omp simd
        for (int l = 0; l < kWidth; ++l) acc[i][j][l] += ap[l] * ka_to_float(bp[l]);
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < C; ++j) {
      float total = 0.0f;
#pragma omp simd reduction(+ : total)
      for (int l = 0; l < kWidth; ++l) total += acc[i][j][l];
      for (int d = full; d < depth; ++d) total += a[i * lda + d] * ka_to_float(b[j][d]);
      float& out = c[i * ldc + j];
      out = accumulate ? out + total : total;
    }
  }
}

/// c[i][j] (+)= a[i] . b(j) over `depth` for i < R, j < cols: COL_TILE columns at a time, the
/// columns left over one at a time.
template <int R, typename B, typename RowFn>
void rows_dot(const float* a, long long lda, RowFn b, int cols, int depth, float* c, long long ldc,
              bool accumulate) {
  const B* ptrs[kColTile];
  int j = 0;
  for (; j + kColTile <= cols; j += kColTile) {
    for (int u = 0; u < kColTile; ++u) ptrs[u] = b(j + u);
    tile_dot<R, kColTile>(a, lda, ptrs, depth, c + j, ldc, accumulate);
  }
  for (; j < cols; ++j) {
    ptrs[0] = b(j);
    tile_dot<R, 1>(a, lda, ptrs, depth, c + j, ldc, accumulate);
  }
}

/// c[i][j] (+)= a[i] . b(j) over `depth` for i < rows, j < cols: ROW_TILE rows at a time, the
/// rows left over in tiles of 4, 2 and 1 (so a short block does not read the weights once per row).
template <typename B, typename RowFn>
void block_dot(const float* a, long long lda, int rows, RowFn b, int cols, int depth, float* c,
               long long ldc, bool accumulate) {
  int i = 0;
  for (; i + kRowTile <= rows; i += kRowTile)
    rows_dot<kRowTile, B>(a + i * lda, lda, b, cols, depth, c + i * ldc, ldc, accumulate);
  if constexpr (kRowTile > 4) {
    if (i + 4 <= rows) {
      rows_dot<4, B>(a + i * lda, lda, b, cols, depth, c + i * ldc, ldc, accumulate);
      i += 4;
    }
  }
  if constexpr (kRowTile > 2) {
    if (i + 2 <= rows) {
      rows_dot<2, B>(a + i * lda, lda, b, cols, depth, c + i * ldc, ldc, accumulate);
      i += 2;
    }
  }
  for (; i < rows; ++i)
    rows_dot<1, B>(a + i * lda, lda, b, cols, depth, c + i * ldc, ldc, accumulate);
}

}  // namespace ka_tiles

#endif  // KA_CPU_DOT_TILES_H
