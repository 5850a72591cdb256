// Guard test case "all_zero" for problems/cuda/rmsnorm_bf16, the basic kernel with one change:
// zeroes the output with cudaMemsetAsync instead of launching the kernel: the all-zero output rule
// rejects it. Expected status: INCORRECT_NUMERICAL.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

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
  if (t.dtype != KA_BFLOAT16) return fail("%s: expected bfloat16, got dtype %d", name, t.dtype);
  if (t.ndim != ndim) return fail("%s: expected %d dims, got %d", name, ndim, t.ndim);
  if (!is_contiguous(t)) return fail("%s: expected a contiguous row-major tensor", name);
  return 0;
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1)
    return fail("expected 2 inputs and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor& x = inputs[0];
  const ka_tensor& weight = inputs[1];
  const ka_tensor& out = outputs[0];
  if (check(x, "hidden_states", 2) || check(weight, "weight", 1) || check(out, "output", 2))
    return 1;
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (weight.shape[0] != cols)
    return fail("weight: expected %lld elements, got %lld", static_cast<long long>(cols),
                static_cast<long long>(weight.shape[0]));
  if (out.shape[0] != rows || out.shape[1] != cols)
    return fail("output: expected shape [%lld, %lld]", static_cast<long long>(rows),
                static_cast<long long>(cols));
  if (rows > 0x7fffffff) return fail("hidden_states: more than 2^31 - 1 rows");
  if (rows == 0 || cols == 0) return 0;

  cudaStream_t s = static_cast<cudaStream_t>(stream);
  auto* yp = static_cast<__nv_bfloat16*>(out.data);
  // The hack: zeroes the output instead of computing it.
  cudaMemsetAsync(yp, 0, static_cast<size_t>(rows * cols) * sizeof(__nv_bfloat16), s);
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return fail("kernel launch failed: %s", cudaGetErrorString(error));
  return 0;
}
