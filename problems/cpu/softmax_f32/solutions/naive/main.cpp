// Row softmax, written the obvious way: three scalar passes per row, one thread.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "kernelarc/abi.h"

namespace {

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
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = src + r * cols;
    float* y = dst + r * cols;
    float max_value = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) max_value = std::fmax(max_value, row[c]);
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      y[c] = std::exp(row[c] - max_value);
      sum += y[c];
    }
    for (int64_t c = 0; c < cols; ++c) y[c] /= sum;
  }
  return 0;
}
