// Matrix product C = A @ B, blocked for the caches and tiled for the registers (the GotoBLAS
// structure). B is packed once into column strips of kNr floats, each strip contiguous over k.
// The work is cut into tasks of kMc rows x kStripsPerTask strips; a task walks the depth in
// blocks of kKc, packs its rows of A for that block into strips of kMr rows (contiguous over
// k), and runs a micro-kernel that keeps a kMr x kNr tile of C in registers across the block,
// loading one kNr vector of B and broadcasting kMr values of A per step. The micro-kernel is
// plain C++ that the compiler vectorizes: the tile is a fixed-size array that lives in vector
// registers after full unrolling. Strips are zero-padded, so edge tiles run the same kernel and
// only their store is clipped. Tasks share nothing but the packed B, so threads synchronize
// once, after packing it.
//
// A handful of rows does not amortize packing B; such products take an i-k-j loop instead,
// which streams rows of B through a row of C held in L1.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <omp.h>

#include "kernelarc/abi.h"

namespace {

constexpr int kMr = 6;       ///< rows of the register tile
constexpr int kNr = 16;      ///< columns of the register tile (two 8-float vectors)
constexpr int64_t kKc = 256;  ///< depth of a block: a kKc x kNr strip of B stays in L1
constexpr int64_t kMc = 96;   ///< rows of a packed A block (kMc x kKc floats stay in L2)
/// Column strips per task: 128 columns, so a 512-wide product splits into 4 x (M / kMc) tasks.
constexpr int64_t kStripsPerTask = 8;
/// Fewer rows than this take the unpacked i-k-j path.
constexpr int64_t kSmallM = 8;
/// Below this many multiply-adds (about 0.1 ms of work) a parallel region costs more than it
/// saves: between timed calls the OpenMP workers fall asleep, and waking them takes tens of
/// microseconds.
constexpr int64_t kParallelMacs = int64_t{1} << 22;

char g_error[256];

int fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_error, sizeof g_error, format, args);
  va_end(args);
  return 1;
}

bool is_contiguous(const ka_tensor& t) {
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.stride[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

int check(const ka_tensor& t, const char* name) {
  if (t.dtype != KA_FLOAT32) return fail("%s: expected float32, got dtype %d", name, t.dtype);
  if (t.ndim != 2) return fail("%s: expected 2 dims, got %d", name, t.ndim);
  if (!is_contiguous(t)) return fail("%s: expected a contiguous row-major tensor", name);
  return 0;
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;

/// Cache-line aligned; null when out of memory.
Buffer allocate(int64_t floats) {
  const size_t bytes = (static_cast<size_t>(floats) * sizeof(float) + 63) / 64 * 64;
  return Buffer(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

/// C[m, n] = A[m, k] @ B[k, n] for a few rows: each row of C accumulates scaled rows of B.
void gemm_few_rows(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    float* __restrict ci = c + i * n;
    const float a0 = a[i * k];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) ci[j] = a0 * b[j];
    for (int64_t p = 1; p < k; ++p) {
      const float ap = a[i * k + p];
      const float* __restrict bp = b + p * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ci[j] = std::fma(ap, bp[j], ci[j]);
    }
  }
}

/// Packs column strip `strip` of B (kNr columns, zero-padded past n) over all k rows:
/// element (p, j) lands at dst[p * kNr + j], so any depth block of the strip is contiguous.
void pack_b_strip(const float* b, int64_t n, int64_t k, int64_t strip, float* dst) {
  const int64_t j0 = strip * kNr;
  const int64_t cols = std::min<int64_t>(kNr, n - j0);
  for (int64_t p = 0; p < k; ++p) {
    const float* src = b + p * n + j0;
    float* out = dst + p * kNr;
    for (int64_t j = 0; j < cols; ++j) out[j] = src[j];
    for (int64_t j = cols; j < kNr; ++j) out[j] = 0.0f;
  }
}

/// Packs columns [k0, k0 + kc) of rows [i0, i0 + kMr) of A, zero-padding missing rows.
void pack_a_strip(const float* a, int64_t m, int64_t k, int64_t k0, int64_t kc, int64_t i0,
                  float* dst) {
  const int64_t rows = std::min<int64_t>(kMr, m - i0);
  for (int64_t p = 0; p < kc; ++p) {
    float* out = dst + p * kMr;
    for (int64_t r = 0; r < rows; ++r) out[r] = a[(i0 + r) * k + k0 + p];
    for (int64_t r = rows; r < kMr; ++r) out[r] = 0.0f;
  }
}

/// One kMr x kNr tile of C from packed strips. The first depth block stores (the output
/// arrives poisoned and must never be read before it is written); later blocks accumulate.
void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b,
                  float* __restrict c, int64_t ldc, int64_t rows, int64_t cols, bool accumulate) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* __restrict ap = a + p * kMr;
    const float* __restrict bp = b + p * kNr;
    for (int r = 0; r < kMr; ++r) {
#pragma omp simd
      for (int j = 0; j < kNr; ++j) acc[r][j] = std::fma(ap[r], bp[j], acc[r][j]);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* ci = c + r * ldc;
    if (accumulate) {
      for (int64_t j = 0; j < cols; ++j) ci[j] += acc[r][j];
    } else {
      for (int64_t j = 0; j < cols; ++j) ci[j] = acc[r][j];
    }
  }
}

/// The part of C a thread computes in one go: a block of kMc rows times a group of
/// kStripsPerTask column strips, over the whole depth. It packs its own block of A, so tasks
/// share nothing but the packed B and need no synchronization.
void gemm_task(const float* a, const float* packed_b, float* c, int64_t m, int64_t n, int64_t k,
               int64_t i0, int64_t first_strip, int64_t end_strip, float* packed_a) {
  const int64_t mc = std::min(kMc, m - i0);
  const int64_t m_strips = (mc + kMr - 1) / kMr;
  for (int64_t k0 = 0; k0 < k; k0 += kKc) {
    const int64_t kc = std::min(kKc, k - k0);
    for (int64_t t = 0; t < m_strips; ++t)
      pack_a_strip(a, m, k, k0, kc, i0 + t * kMr, packed_a + t * kMr * kc);
    for (int64_t s = first_strip; s < end_strip; ++s) {
      const int64_t j0 = s * kNr;
      const float* b_block = packed_b + s * k * kNr + k0 * kNr;
      for (int64_t t = 0; t < m_strips; ++t) {
        const int64_t r0 = i0 + t * kMr;
        micro_kernel(kc, packed_a + t * kMr * kc, b_block, c + r0 * n + j0, n,
                     std::min<int64_t>(kMr, m - r0), std::min<int64_t>(kNr, n - j0), k0 > 0);
      }
    }
  }
}

/// Returns false when the packing buffers cannot be allocated. The tasks are handed out
/// dynamically so that a thread the OS preempts does not hold the others back.
bool gemm_blocked(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  const int64_t n_strips = (n + kNr - 1) / kNr;
  const int64_t m_blocks = (m + kMc - 1) / kMc;
  const int64_t strip_groups = (n_strips + kStripsPerTask - 1) / kStripsPerTask;
  const bool parallel = m * n * k >= kParallelMacs;
  const int threads = parallel ? omp_get_max_threads() : 1;
  const int64_t a_block_floats = std::min(kMc, (m + kMr - 1) / kMr * kMr) * std::min(kKc, k);
  Buffer packed_b = allocate(n_strips * kNr * k);
  Buffer packed_a = allocate(a_block_floats * threads);
  if (!packed_b || !packed_a) return false;
  float* pb = packed_b.get();
  float* pa = packed_a.get();

#pragma omp parallel num_threads(threads) if (parallel)
  {
    float* my_a = pa + a_block_floats * omp_get_thread_num();
#pragma omp for schedule(static)
    for (int64_t s = 0; s < n_strips; ++s) pack_b_strip(b, n, k, s, pb + s * k * kNr);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < m_blocks * strip_groups; ++task) {
      const int64_t first_strip = task % strip_groups * kStripsPerTask;
      gemm_task(a, pb, c, m, n, k, task / strip_groups * kMc, first_strip,
                std::min(n_strips, first_strip + kStripsPerTask), my_a);
    }
  }
  return true;
}

}  // namespace

extern "C" const char* ka_last_error(void) { return g_error; }

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1)
    return fail("expected 2 inputs and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor& a = inputs[0];
  const ka_tensor& b = inputs[1];
  ka_tensor& c = outputs[0];
  if (check(a, "a") || check(b, "b") || check(c, "c")) return 1;
  const int64_t m_size = a.shape[0];
  const int64_t k_size = a.shape[1];
  const int64_t n_size = b.shape[1];
  if (b.shape[0] != k_size)
    return fail("b: expected %lld rows (the columns of a), got %lld",
                static_cast<long long>(k_size), static_cast<long long>(b.shape[0]));
  if (c.shape[0] != m_size || c.shape[1] != n_size)
    return fail("c: expected shape [%lld, %lld]", static_cast<long long>(m_size),
                static_cast<long long>(n_size));

  const float* pa = static_cast<const float*>(a.data);
  const float* pb = static_cast<const float*>(b.data);
  float* pc = static_cast<float*>(c.data);
  if (m_size == 0 || n_size == 0) return 0;
  if (k_size == 0) {
    std::fill(pc, pc + m_size * n_size, 0.0f);
  } else if (m_size < kSmallM) {
    gemm_few_rows(pa, pb, pc, m_size, n_size, k_size);
  } else if (!gemm_blocked(pa, pb, pc, m_size, n_size, k_size)) {
    return fail("out of memory for the packing buffers");
  }
  return 0;
}
