// Cache-blocked GEMM for the CPU: C = epilogue(A @ B) in float32 arithmetic.
//
// The output is cut into MC x NC blocks spread over OpenMP threads. A thread walks K in KC
// steps: it packs the MC x KC block of A into MR-row panels and the KC x NC block of B into
// NR-column panels (converting to float, zero-padding the edges, whatever the layouts), and an
// MR x NR register micro-kernel accumulates each panel pair into a float block buffer. Only after
// the last K step does the block go through the epilogue into C, so every tail is handled by the
// padding and the epilogue sees the full sum. The micro-kernel's inner loop runs over NR
// contiguous floats with fixed trip counts, which GCC turns into vector FMAs at -O3
// -march=native, keeping the MR x NR accumulators in registers.
#include <algorithm>
#include <vector>

#include "ka_cpu_entry.h"

namespace {

constexpr long long kMcPadded = (MC + MR - 1) / MR * MR;
constexpr long long kNcPadded = (NC + NR - 1) / NR * NR;

// Panels of MR rows of A: panel[p * MR + i] = A[row0 + i, k0 + p].
void pack_a(const KaArgs& ka, long long row0, long long rows, long long k0, long long depth,
            float* packed) {
  for (long long panel = 0; panel < rows; panel += MR) {
    float* out = packed + panel * depth;
    for (long long p = 0; p < depth; ++p) {
      for (int i = 0; i < MR; ++i) {
        const long long row = row0 + panel + i;
        float value = 0.0f;
        if (panel + i < rows)
          value =
              ka_to_float(KA_A_K_MAJOR ? ka.a[row * ka.k + k0 + p] : ka.a[(k0 + p) * ka.m + row]);
        out[p * MR + i] = value;
      }
    }
  }
}

// Panels of NR columns of B: panel[p * NR + j] = B[k0 + p, col0 + j] (C = A @ B orientation).
void pack_b(const KaArgs& ka, long long col0, long long cols, long long k0, long long depth,
            float* packed) {
  for (long long panel = 0; panel < cols; panel += NR) {
    float* out = packed + panel * depth;
    for (long long p = 0; p < depth; ++p) {
      const long long k = k0 + p;
#pragma omp simd
      for (int j = 0; j < NR; ++j) {
        const long long col = col0 + panel + j;
        float value = 0.0f;
        if (panel + j < cols)
          value = ka_to_float(KA_B_K_MAJOR ? ka.b[col * ka.k + k] : ka.b[k * ka.n + col]);
        out[p * NR + j] = value;
      }
    }
  }
}

// c[i * ldc + j] += sum_p a[p * MR + i] * b[p * NR + j] for the MR x NR tile.
inline void micro_kernel(long long depth, const float* __restrict a, const float* __restrict b,
                         float* __restrict c, long long ldc) {
  float acc[MR][NR] = {};
  for (long long p = 0; p < depth; ++p) {
    const float* bp = b + p * NR;
    const float* ap = a + p * MR;
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float av = ap[i];
#pragma omp simd
      for (int j = 0; j < NR; ++j) acc[i][j] += av * bp[j];
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma omp simd
    for (int j = 0; j < NR; ++j) c[i * ldc + j] += acc[i][j];
  }
}

// The block's float sums through the epilogue into C; whole NR runs as one store when the
// contract's alignment holds (every run starts at a multiple of NR).
void store_block(const KaArgs& ka, long long row0, long long rows, long long col0, long long cols,
                 const float* sums) {
  const bool runs_ok = ka.n % NR == 0;
  for (long long i = 0; i < rows; ++i) {
    const float* row_sums = sums + i * kNcPadded;
    long long j = 0;
    if (runs_ok) {
      for (; j + NR <= cols; j += NR) {
        float run[NR];
        for (int e = 0; e < NR; ++e) run[e] = row_sums[j + e];
        ka.store<NR>(row0 + i, col0 + j, run);
      }
    }
    for (; j < cols; ++j) {
      const float one[1] = {row_sums[j]};
      ka.store<1>(row0 + i, col0 + j, one);
    }
  }
}

void gemm(const KaArgs& ka) {
  const long long blocks_m = (ka.m + MC - 1) / MC;
  const long long blocks_n = (ka.n + NC - 1) / NC;
  const long long blocks = blocks_m * blocks_n;
  const int threads = ka_thread_count();
#pragma omp parallel num_threads(threads) if (blocks > 1)
  {
    // Kept per thread across calls: allocating (and faulting in) them each call costs more
    // than a small product.
    static thread_local std::vector<float> a_packed(kMcPadded * KC);
    static thread_local std::vector<float> b_packed(kNcPadded * KC);
    static thread_local std::vector<float> sums(kMcPadded * kNcPadded);
#pragma omp for schedule(dynamic, 1)
    for (long long block = 0; block < blocks; ++block) {
      const long long row0 = block / blocks_n * MC;
      const long long col0 = block % blocks_n * NC;
      const long long rows = std::min<long long>(MC, ka.m - row0);
      const long long cols = std::min<long long>(NC, ka.n - col0);
      std::fill(sums.begin(), sums.end(), 0.0f);
      for (long long k0 = 0; k0 < ka.k; k0 += KC) {
        const long long depth = std::min<long long>(KC, ka.k - k0);
        pack_a(ka, row0, rows, k0, depth, a_packed.data());
        pack_b(ka, col0, cols, k0, depth, b_packed.data());
        for (long long jr = 0; jr < cols; jr += NR)
          for (long long ir = 0; ir < rows; ir += MR)
            micro_kernel(depth, a_packed.data() + ir * depth, b_packed.data() + jr * depth,
                         sums.data() + ir * kNcPadded + jr, kNcPadded);
      }
      store_block(ka, row0, rows, col0, cols, sums.data());
    }
  }
}

}  // namespace

static void ka_compute(const KaArgs& ka) {
  gemm(ka);
}
