// Row softmax, float32: one 256-thread block per row, warp-shuffle reductions.
//
// Rows of up to 8192 elements whose length is a multiple of 4 (16-byte aligned) are read once
// into registers as float4: block maximum, exponentials kept in the registers, block sum, one
// scaled write. Longer or odd rows take two passes: an online maximum-and-sum pass (the sum
// rescaled whenever the maximum grows) and a pass that re-reads the row and writes it.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "kernelarc/abi.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxVectors = 8;  // float4 per thread held in registers

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

__device__ float warp_max(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

__device__ float warp_sum(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

/// Combines one value per thread over the block (`kMax`: maximum, else sum) and returns the
/// result to every thread. Safe to call repeatedly.
template <bool kMax>
__device__ float block_reduce(float value) {
  __shared__ float partial[kThreads / 32];
  value = kMax ? warp_max(value) : warp_sum(value);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  const float neutral = kMax ? -INFINITY : 0.0f;
  value = lane < kThreads / 32 ? partial[lane] : neutral;
  value = kMax ? warp_max(value) : warp_sum(value);
  __syncthreads();  // partial may be written again by the next call
  return value;
}

__device__ float max4(const float4& v) {
  return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
}

__global__ void __launch_bounds__(kThreads)
    softmax_registers(const float4* __restrict__ x, float4* __restrict__ y, int vectors_per_row) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * vectors_per_row;
  float4 v[kMaxVectors];
  float row_max = -INFINITY;
#pragma unroll
  for (int k = 0; k < kMaxVectors; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < vectors_per_row) {
      v[k] = x[base + i];
      row_max = fmaxf(row_max, max4(v[k]));
    }
  }
  row_max = block_reduce<true>(row_max);
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kMaxVectors; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < vectors_per_row) {
      v[k].x = expf(v[k].x - row_max);
      v[k].y = expf(v[k].y - row_max);
      v[k].z = expf(v[k].z - row_max);
      v[k].w = expf(v[k].w - row_max);
      sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
  }
  const float inverse = 1.0f / block_reduce<false>(sum);
#pragma unroll
  for (int k = 0; k < kMaxVectors; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < vectors_per_row) {
      y[base + i] =
          make_float4(v[k].x * inverse, v[k].y * inverse, v[k].z * inverse, v[k].w * inverse);
    }
  }
}

/// Adds exp(value - max) to a running sum kept relative to a running maximum.
__device__ void online_add(float& row_max, float& sum, float value) {
  if (value == -INFINITY) return;  // adds nothing, and exp(-inf - -inf) would be NaN
  if (value > row_max) {
    sum = sum * expf(row_max - value) + 1.0f;
    row_max = value;
  } else {
    sum += expf(value - row_max);
  }
}

template <bool kVector>
__global__ void __launch_bounds__(kThreads)
    softmax_two_pass(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
  float row_max = -INFINITY;
  float sum = 0.0f;
  if (kVector) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    for (int64_t i = threadIdx.x; i < cols / 4; i += kThreads) {
      const float4 v = row4[i];
      online_add(row_max, sum, v.x);
      online_add(row_max, sum, v.y);
      online_add(row_max, sum, v.z);
      online_add(row_max, sum, v.w);
    }
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) online_add(row_max, sum, row[c]);
  }
  const float block_max = block_reduce<true>(row_max);
  // A thread that saw no element has row_max = -inf and sum = 0: its term is 0.
  const float scaled = sum == 0.0f ? 0.0f : sum * expf(row_max - block_max);
  const float inverse = 1.0f / block_reduce<false>(scaled);
  if (kVector) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    float4* out4 = reinterpret_cast<float4*>(out);
    for (int64_t i = threadIdx.x; i < cols / 4; i += kThreads) {
      const float4 v = row4[i];
      out4[i] = make_float4(expf(v.x - block_max) * inverse, expf(v.y - block_max) * inverse,
                            expf(v.z - block_max) * inverse, expf(v.w - block_max) * inverse);
    }
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += kThreads)
      out[c] = expf(row[c] - block_max) * inverse;
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
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (out.shape[0] != rows || out.shape[1] != cols)
    return fail("output: expected shape [%lld, %lld]", static_cast<long long>(rows),
                static_cast<long long>(cols));
  if (rows > 0x7fffffff) return fail("x: more than 2^31 - 1 rows");
  if (rows == 0 || cols == 0) return 0;

  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const auto* xp = static_cast<const float*>(x.data);
  auto* yp = static_cast<float*>(out.data);
  const unsigned blocks = static_cast<unsigned>(rows);
  const bool vector = cols % 4 == 0 && aligned16(xp) && aligned16(yp);
  if (vector && cols / 4 <= kThreads * kMaxVectors) {
    softmax_registers<<<blocks, kThreads, 0, s>>>(reinterpret_cast<const float4*>(xp),
                                                  reinterpret_cast<float4*>(yp),
                                                  static_cast<int>(cols / 4));
  } else if (vector) {
    softmax_two_pass<true><<<blocks, kThreads, 0, s>>>(xp, yp, cols);
  } else {
    softmax_two_pass<false><<<blocks, kThreads, 0, s>>>(xp, yp, cols);
  }
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return fail("kernel launch failed: %s", cudaGetErrorString(error));
  return 0;
}
