// RMSNorm, vectorized and threaded. The row is read from memory once: the sum-of-squares pass
// brings it into L1/L2 and the scaling pass reads it from there. Rows are split over threads
// only when there is enough work to pay for the parallel region.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "kernelarc/abi.h"

namespace {

constexpr float kEps = 1e-6f;
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

float sum_squares(const float* __restrict x, int64_t cols) {
  float sum = 0.0f;
  if (cols < kShortRow) {
    for (int64_t c = 0; c < cols; ++c) sum += x[c] * x[c];
    return sum;
  }
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < cols; ++c) sum += x[c] * x[c];
  return sum;
}

void rmsnorm_row(const float* __restrict x, const float* __restrict w, float* __restrict y,
                 int64_t cols) {
  const float rstd = 1.0f / std::sqrt(sum_squares(x, cols) / static_cast<float>(cols) + kEps);
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) y[c] = x[c] * rstd * w[c];
}

}  // namespace

extern "C" const char* ka_last_error(void) { return g_error; }

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1)
    return fail("expected 2 inputs and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor& x = inputs[0];
  const ka_tensor& weight = inputs[1];
  ka_tensor& out = outputs[0];
  if (check(x, "x", 2) || check(weight, "weight", 1) || check(out, "output", 2)) return 1;
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (weight.shape[0] != cols)
    return fail("weight: expected shape [%lld], got [%lld]", static_cast<long long>(cols),
                static_cast<long long>(weight.shape[0]));
  if (out.shape[0] != rows || out.shape[1] != cols)
    return fail("output: expected shape [%lld, %lld]", static_cast<long long>(rows),
                static_cast<long long>(cols));

  const float* src = static_cast<const float*>(x.data);
  const float* w = static_cast<const float*>(weight.data);
  float* dst = static_cast<float*>(out.data);
  if (rows > 1 && rows * cols >= kParallelElements) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) rmsnorm_row(src + r * cols, w, dst + r * cols, cols);
  } else {
    // Not an `if` clause: even a disabled parallel region costs about half a microsecond.
    for (int64_t r = 0; r < rows; ++r) rmsnorm_row(src + r * cols, w, dst + r * cols, cols);
  }
  return 0;
}
