// Matrix product C = A @ B, written the obvious way: the i-j-k triple loop, one thread.
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

int check(const ka_tensor& t, const char* name) {
  if (t.dtype != KA_FLOAT32) return fail("%s: expected float32, got dtype %d", name, t.dtype);
  if (t.ndim != 2) return fail("%s: expected 2 dims, got %d", name, t.ndim);
  if (!is_contiguous(t)) return fail("%s: expected a contiguous row-major tensor", name);
  return 0;
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
  for (int64_t i = 0; i < m_size; ++i) {
    for (int64_t j = 0; j < n_size; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < k_size; ++k) sum += pa[i * k_size + k] * pb[k * n_size + j];
      pc[i * n_size + j] = sum;
    }
  }
  return 0;
}
