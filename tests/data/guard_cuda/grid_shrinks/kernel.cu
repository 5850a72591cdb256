// Guard test case "grid_shrinks" for problems/cuda/rmsnorm_bf16, the basic kernel with one change:
// after the correctness trials, every other call launches the same kernel over the first eighth
// of the rows only. The kernels' names are the same every run, so the guard's launch comparison
// (which lets a grid follow the inputs) does not refuse it by name: the audits of the timed calls
// find the rows left unwritten, and where only some calls are audited (a search's screening) the
// unaudited runs' shorter times give it away. Expected status: INCORRECT_NUMERICAL ("audit at").
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "kernelarc/abi.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxVectors = 4;  // 16-byte vectors per thread held in registers
constexpr float kEps = 1e-5f;

char g_error[256];
int g_calls = 0;

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

__device__ float warp_sum(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

/// The sum over the block, returned to every thread.
__device__ float block_sum(float value) {
  __shared__ float partial[kThreads / 32];
  value = warp_sum(value);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  value = warp_sum(lane < kThreads / 32 ? partial[lane] : 0.0f);
  return value;
}

__device__ float sum_squares(const uint4& packed) {
  const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&packed);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 f = __bfloat1622float2(pairs[j]);
    sum += f.x * f.x + f.y * f.y;
  }
  return sum;
}

__global__ void __launch_bounds__(kThreads)
    rmsnorm_vectors(const uint4* __restrict__ x, const uint4* __restrict__ weight,
                    uint4* __restrict__ y, int vectors_per_row, float inv_cols) {
  const uint4* row = x + static_cast<int64_t>(blockIdx.x) * vectors_per_row;
  uint4 cached[kMaxVectors];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kMaxVectors; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < vectors_per_row) {
      cached[k] = row[i];
      sum += sum_squares(cached[k]);
    }
  }
  const float rstd = rsqrtf(block_sum(sum) * inv_cols + kEps);
  uint4* out = y + static_cast<int64_t>(blockIdx.x) * vectors_per_row;
#pragma unroll
  for (int k = 0; k < kMaxVectors; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < vectors_per_row) {
      const uint4 w = weight[i];
      const __nv_bfloat162* xp = reinterpret_cast<const __nv_bfloat162*>(&cached[k]);
      const __nv_bfloat162* wp = reinterpret_cast<const __nv_bfloat162*>(&w);
      uint4 result;
      __nv_bfloat162* rp = reinterpret_cast<__nv_bfloat162*>(&result);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 xf = __bfloat1622float2(xp[j]);
        const float2 wf = __bfloat1622float2(wp[j]);
        rp[j] = __floats2bfloat162_rn(xf.x * rstd * wf.x, xf.y * rstd * wf.y);
      }
      out[i] = result;
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    rmsnorm_scalar(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                   __nv_bfloat16* __restrict__ y, int64_t cols) {
  const __nv_bfloat16* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
    const float v = __bfloat162float(row[c]);
    sum += v * v;
  }
  const float rstd = rsqrtf(block_sum(sum) / static_cast<float>(cols) + kEps);
  __nv_bfloat16* out = y + static_cast<int64_t>(blockIdx.x) * cols;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
    out[c] = __float2bfloat16(__bfloat162float(row[c]) * rstd * __bfloat162float(weight[c]));
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
  const auto* xp = static_cast<const __nv_bfloat16*>(x.data);
  const auto* wp = static_cast<const __nv_bfloat16*>(weight.data);
  auto* yp = static_cast<__nv_bfloat16*>(out.data);
  const bool vectorized = cols % 8 == 0 && cols / 8 <= kThreads * kMaxVectors && aligned16(xp) &&
                          aligned16(wp) && aligned16(yp);
  // Past the trials, every other call covers an eighth of the rows.
  const int64_t launched_rows = ++g_calls > 10 && g_calls % 2 == 0 ? (rows + 7) / 8 : rows;
  if (vectorized) {
    rmsnorm_vectors<<<static_cast<unsigned>(launched_rows), kThreads, 0, s>>>(
        reinterpret_cast<const uint4*>(xp), reinterpret_cast<const uint4*>(wp),
        reinterpret_cast<uint4*>(yp), static_cast<int>(cols / 8), 1.0f / static_cast<float>(cols));
  } else {
    rmsnorm_scalar<<<static_cast<unsigned>(launched_rows), kThreads, 0, s>>>(xp, wp, yp, cols);
  }
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return fail("kernel launch failed: %s", cudaGetErrorString(error));
  return 0;
}
