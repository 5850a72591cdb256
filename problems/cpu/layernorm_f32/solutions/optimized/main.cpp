// LayerNorm, vectorized and threaded. The row is read from memory once: the mean pass brings
// it into L1/L2, and the variance and output passes read it from there. The variance is
// taken around the mean (two passes) rather than as E[x^2] - mean^2, which cancels
// catastrophically when the mean is large against the spread; and every sum is of x minus the
// row's first value, so that a row offset far from zero (which the oracle draws) does not lose
// the mean's low bits in a float sum. Rows are split over threads
// only when there is enough work to pay for the parallel region.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "kernelarc/abi.h"

namespace {

constexpr float kEps = 1e-5f;
/// Below this many elements (1 MiB) a parallel region costs more than it saves: between timed
/// calls the OpenMP workers fall asleep, and waking them takes tens of microseconds.
constexpr int64_t kParallelElements = int64_t{1} << 18;
/// Rows shorter than this take plain scalar loops: the epilogue of a vector reduction (16
/// lanes combined one by one) costs more than such a row.
constexpr int64_t kShortRow = 16;

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

struct Moments {
  float shift;  ///< the row's first value: the sums below are of x - shift
  float mean;   ///< of x - shift
  float rstd;
};

Moments short_row_moments(const float* x, int64_t cols) {
  const float shift = x[0];
  float sum = 0.0f;
  for (int64_t c = 0; c < cols; ++c) sum += x[c] - shift;
  const float mean = sum / static_cast<float>(cols);
  float sum_squares = 0.0f;
  for (int64_t c = 0; c < cols; ++c) sum_squares += (x[c] - shift - mean) * (x[c] - shift - mean);
  return {shift, mean, 1.0f / std::sqrt(sum_squares / static_cast<float>(cols) + kEps)};
}

Moments row_moments(const float* __restrict x, int64_t cols) {
  if (cols < kShortRow) return short_row_moments(x, cols);
  const float shift = x[0];
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < cols; ++c) sum += x[c] - shift;
  const float mean = sum / static_cast<float>(cols);
  float sum_squares = 0.0f;
#pragma omp simd reduction(+ : sum_squares)
  for (int64_t c = 0; c < cols; ++c) sum_squares += (x[c] - shift - mean) * (x[c] - shift - mean);
  return {shift, mean, 1.0f / std::sqrt(sum_squares / static_cast<float>(cols) + kEps)};
}

void layernorm_row(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                   float* __restrict y, int64_t cols) {
  const Moments m = row_moments(x, cols);
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c)
    y[c] = std::fma((x[c] - m.shift - m.mean) * m.rstd, w[c], b[c]);
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 3 || n_outputs != 1)
    return fail("expected 3 inputs and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor& x = inputs[0];
  const ka_tensor& weight = inputs[1];
  const ka_tensor& bias = inputs[2];
  ka_tensor& out = outputs[0];
  if (check(x, "x", 2) || check(weight, "weight", 1) || check(bias, "bias", 1) ||
      check(out, "output", 2))
    return 1;
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (weight.shape[0] != cols || bias.shape[0] != cols)
    return fail("weight and bias: expected shape [%lld], got [%lld] and [%lld]",
                static_cast<long long>(cols), static_cast<long long>(weight.shape[0]),
                static_cast<long long>(bias.shape[0]));
  if (out.shape[0] != rows || out.shape[1] != cols)
    return fail("output: expected shape [%lld, %lld]", static_cast<long long>(rows),
                static_cast<long long>(cols));

  const float* src = static_cast<const float*>(x.data);
  const float* w = static_cast<const float*>(weight.data);
  const float* b = static_cast<const float*>(bias.data);
  float* dst = static_cast<float*>(out.data);
  if (rows > 1 && rows * cols >= kParallelElements) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) layernorm_row(src + r * cols, w, b, dst + r * cols, cols);
  } else {
    // Not an `if` clause: even a disabled parallel region costs about half a microsecond.
    for (int64_t r = 0; r < rows; ++r) layernorm_row(src + r * cols, w, b, dst + r * cols, cols);
  }
  return 0;
}
