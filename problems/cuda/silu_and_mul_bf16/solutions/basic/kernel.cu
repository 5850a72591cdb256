// SwiGLU activation, bfloat16 in and out, float32 inside: output[t, j] = silu(x[t, j]) *
// x[t, I + j]. A purely elementwise, memory-bound kernel: a 2-D grid (column blocks x tokens)
// with 16-byte loads of gate and up and 16-byte stores when I is a multiple of 8 and the
// tensors are 16-byte aligned, element-wise otherwise.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "kernelarc/abi.h"

namespace {

constexpr int kThreads = 256;

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
  if (t.dtype != KA_BFLOAT16) return fail("%s: expected bfloat16, got dtype %d", name, t.dtype);
  if (t.ndim != 2) return fail("%s: expected 2 dims, got %d", name, t.ndim);
  if (!is_contiguous(t)) return fail("%s: expected a contiguous row-major tensor", name);
  return 0;
}

__device__ float silu_mul(float gate, float up) {
  return gate / (1.0f + expf(-gate)) * up;
}

/// One 16-byte vector (8 outputs) per thread; blockIdx.y is the token.
__global__ void __launch_bounds__(kThreads)
    silu_and_mul_vectors(const uint4* __restrict__ x, uint4* __restrict__ y, int vectors) {
  const int i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= vectors) return;
  const int64_t token = blockIdx.y;
  const uint4 gate = x[token * 2 * vectors + i];
  const uint4 up = x[token * 2 * vectors + vectors + i];
  const __nv_bfloat162* gp = reinterpret_cast<const __nv_bfloat162*>(&gate);
  const __nv_bfloat162* upp = reinterpret_cast<const __nv_bfloat162*>(&up);
  uint4 result;
  __nv_bfloat162* rp = reinterpret_cast<__nv_bfloat162*>(&result);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 g = __bfloat1622float2(gp[j]);
    const float2 u = __bfloat1622float2(upp[j]);
    rp[j] = __floats2bfloat162_rn(silu_mul(g.x, u.x), silu_mul(g.y, u.y));
  }
  y[token * vectors + i] = result;
}

__global__ void __launch_bounds__(kThreads)
    silu_and_mul_scalar(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y,
                        int64_t tokens, int64_t width) {
  const int64_t total = tokens * width;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t token = e / width;
    const int64_t column = e % width;
    const float gate = __bfloat162float(x[token * 2 * width + column]);
    const float up = __bfloat162float(x[token * 2 * width + width + column]);
    y[e] = __float2bfloat16(silu_mul(gate, up));
  }
}

bool aligned16(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 1 || n_outputs != 1)
    return fail("expected 1 input and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor& x = inputs[0];
  const ka_tensor& out = outputs[0];
  if (check(x, "x") || check(out, "output")) return 1;
  const int64_t tokens = x.shape[0];
  const int64_t width = out.shape[1];
  if (x.shape[1] != 2 * width || out.shape[0] != tokens)
    return fail(
        "x [%lld, %lld] and output [%lld, %lld]: expected x to be [T, 2I] and output [T, I]",
        static_cast<long long>(x.shape[0]), static_cast<long long>(x.shape[1]),
        static_cast<long long>(out.shape[0]), static_cast<long long>(out.shape[1]));
  if (tokens == 0 || width == 0) return 0;

  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const auto* xp = static_cast<const __nv_bfloat16*>(x.data);
  auto* yp = static_cast<__nv_bfloat16*>(out.data);
  if (width % 8 == 0 && width / 8 <= 0x7fffffff && tokens <= 65535 && aligned16(xp) &&
      aligned16(yp)) {
    const int vectors = static_cast<int>(width / 8);
    const dim3 grid((vectors + kThreads - 1) / kThreads, static_cast<unsigned>(tokens));
    silu_and_mul_vectors<<<grid, kThreads, 0, s>>>(reinterpret_cast<const uint4*>(xp),
                                                   reinterpret_cast<uint4*>(yp), vectors);
  } else {
    const int64_t blocks = (tokens * width + kThreads - 1) / kThreads;
    silu_and_mul_scalar<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, s>>>(
        xp, yp, tokens, width);
  }
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return fail("kernel launch failed: %s", cudaGetErrorString(error));
  return 0;
}
