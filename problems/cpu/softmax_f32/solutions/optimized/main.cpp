// Row softmax, vectorized and threaded. Each row is read from memory once: a max pass, then
// an exp-and-sum pass that stores exp(x - max) into the output, then a scale pass over the
// output while it is still in L1/L2. The exp is a polynomial the compiler can vectorize
// (libm's expf is a scalar call without -ffast-math), accurate to about 2 ulp.
#include <bit>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "kernelarc/abi.h"

namespace {

/// Below this many elements (1 MiB) a parallel region costs more than it saves: between timed
/// calls the OpenMP workers fall asleep, and waking them takes tens of microseconds.
constexpr int64_t kParallelElements = int64_t{1} << 18;

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

int check(const ka_tensor& t, const char* name, int ndim) {
  if (t.dtype != KA_FLOAT32) return fail("%s: expected float32, got dtype %d", name, t.dtype);
  if (t.ndim != ndim) return fail("%s: expected %d dims, got %d", name, ndim, t.ndim);
  if (!is_contiguous(t)) return fail("%s: expected a contiguous row-major tensor", name);
  return 0;
}

/// exp(x) for x <= 0 (Cephes expf): x = n ln2 + r with |r| <= ln2/2, exp(r) as
/// 1 + r + r^2 p(r) with p of degree 5, and 2^n built in the exponent bits. Inputs below -87 give exp(-87) (~1.6e-38),
/// which is zero for every tolerance while keeping 2^n a normal number.
inline float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  const float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + round_magic) - round_magic;
  float r = std::fma(n, -0.693359375f, x);
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float e = std::fma(p * r, r, r) + 1.0f;
  return e * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

/// Rows shorter than this take plain scalar loops: the epilogues of the vector reductions
/// (16 lanes combined one by one) cost more than such a row.
constexpr int64_t kShortRow = 16;

void softmax_short_row(const float* x, float* y, int64_t cols) {
  float max_value = -INFINITY;
  for (int64_t c = 0; c < cols; ++c) max_value = x[c] > max_value ? x[c] : max_value;
  float sum = 0.0f;
  for (int64_t c = 0; c < cols; ++c) {
    y[c] = exp_nonpositive(x[c] - max_value);
    sum += y[c];
  }
  const float inv_sum = 1.0f / sum;
  for (int64_t c = 0; c < cols; ++c) y[c] *= inv_sum;
}

void softmax_row(const float* __restrict x, float* __restrict y, int64_t cols) {
  if (cols < kShortRow) return softmax_short_row(x, y, cols);
  float max_value = -INFINITY;
#pragma omp simd reduction(max : max_value)
  for (int64_t c = 0; c < cols; ++c) max_value = x[c] > max_value ? x[c] : max_value;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < cols; ++c) {
    const float e = exp_nonpositive(x[c] - max_value);
    y[c] = e;
    sum += e;
  }
  const float inv_sum = 1.0f / sum;
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) y[c] *= inv_sum;
}

}  // namespace

extern "C" const char* ka_last_error(void) { return g_error; }

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 1 || n_outputs != 1)
    return fail("expected 1 input and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor& x = inputs[0];
  ka_tensor& out = outputs[0];
  if (check(x, "x", 2) || check(out, "output", 2)) return 1;
  if (out.shape[0] != x.shape[0] || out.shape[1] != x.shape[1])
    return fail("output: expected shape [%lld, %lld]", static_cast<long long>(x.shape[0]),
                static_cast<long long>(x.shape[1]));

  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  const float* src = static_cast<const float*>(x.data);
  float* dst = static_cast<float*>(out.data);
  if (rows > 1 && rows * cols >= kParallelElements) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) softmax_row(src + r * cols, dst + r * cols, cols);
  } else {
    // Not an `if` clause: even a disabled parallel region costs about half a microsecond.
    for (int64_t r = 0; r < rows; ++r) softmax_row(src + r * cols, dst + r * cols, cols);
  }
  return 0;
}
