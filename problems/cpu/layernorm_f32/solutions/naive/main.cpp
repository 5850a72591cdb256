// LayerNorm, written the obvious way: a mean pass, a variance pass, an output pass, one thread.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "kernelarc/abi.h"

namespace {

constexpr float kEps = 1e-5f;

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
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = src + r * cols;
    float* y = dst + r * cols;
    // Sums in double: a float sum over a row offset far from zero (rows at 100 x their spread,
    // which the oracle draws) loses the mean's low bits, and the output inherits that error.
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += row[c];
    const double mean = sum / static_cast<double>(cols);
    double sum_squares = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum_squares += (row[c] - mean) * (row[c] - mean);
    const float rstd =
        static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(cols) + kEps));
    const float mean_f = static_cast<float>(mean);
    for (int64_t c = 0; c < cols; ++c) y[c] = (row[c] - mean_f) * rstd * w[c] + b[c];
  }
  return 0;
}
