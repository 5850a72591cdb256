// The library route of the gated-MLP templates (mlp_gated's dense layer, moe_grouped's experts):
// row-major products with a weight matrix through cuBLASLt, and the pointwise pass that forms
// h = act(g) * u from the two rounded products, as a framework's linear layers and activation do.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <type_traits>

#include "ka_lt_matmul.cuh"
#include "ka_moe_common.cuh"

namespace ka_moe {

// cuBLASLt's scratch: the amount cuBLAS advises for Hopper (template.json's workspace_bytes
// counts it).
constexpr size_t kLtScratchBytes = size_t(32) << 20;
constexpr int kPointwiseThreads = 256;

/// d[rows, n] = a[rows, k] . b[n, k]^T: a and d row major with row strides lda and ldd, b's n rows
/// of k elements contiguous (a weight as nn.Linear stores it).
inline KaLtMatmul rows_times_weights(const ka_act_t* a, long long lda, const ka_w_t* b, ka_act_t* d,
                                     long long ldd, long long rows, long long n, long long k) {
  constexpr cudaDataType_t type =
      std::is_same<ka_act_t, __nv_bfloat16>::value ? CUDA_R_16BF : CUDA_R_16F;
  KaLtMatmul call;
  call.type_ab = call.type_d = type;
  call.m = rows;
  call.n = n;
  call.k = k;
  call.a = a;
  call.a_m = lda;
  call.a_k = 1;
  call.b = b;  // B[k][n] = b[n][k]
  call.b_k = 1;
  call.b_n = k;
  call.d = d;
  call.d_m = ldd;
  call.d_n = 1;
  return call;
}

/// cuBLASLt runs the product on `stream`; else ka_fail's 1 naming the template, `what` and why
/// cuBLASLt refused it.
inline int run_lt_product(const char* name, const KaLtMatmul& call, const char* what, void* scratch,
                          cudaStream_t stream) {
  if (const char* why = ka_lt_matmul(call, scratch, kLtScratchBytes, stream))
    return ka_fail("%s: the %s product through cuBLASLt: %s", name, what, why);
  return 0;
}

/// h = act(g) * u over `rows` rows of kInter elements, in float32, rounded once; g, u and h rows
/// `stride` elements apart (16-byte aligned: kInter and the stride are multiples of 8). h may be
/// g (each element reads its own inputs first).
__global__ void __launch_bounds__(kPointwiseThreads)
    gated_activation_kernel(const ka_act_t* g, const ka_act_t* u, ka_act_t* h, long long rows,
                            long long stride) {
  using Pack = Pack8<ka_act_t>;
  constexpr long long kPacksPerRow = kInter / 8;
  const long long i = static_cast<long long>(blockIdx.x) * kPointwiseThreads + threadIdx.x;
  if (i >= rows * kPacksPerRow) return;
  const long long at = (i / kPacksPerRow) * stride + (i % kPacksPerRow) * 8;
  const Pack gate = *reinterpret_cast<const Pack*>(g + at);
  const Pack up = *reinterpret_cast<const Pack*>(u + at);
  Pack out;
#pragma unroll
  for (int j = 0; j < 8; ++j)
    out.v[j] = ka_from_float<ka_act_t>(ka_moe_activation(to_float(gate.v[j])) * to_float(up.v[j]));
  *reinterpret_cast<Pack*>(h + at) = out;
}

/// Launches gated_activation_kernel on `stream`; 0, or ka_fail's 1.
inline int gated_activation(const char* name, const ka_act_t* g, const ka_act_t* u, ka_act_t* h,
                            long long rows, long long stride, cudaStream_t stream) {
  const long long packs = rows * (kInter / 8);
  const long long blocks = (packs + kPointwiseThreads - 1) / kPointwiseThreads;
  if (blocks > INT_MAX) return ka_fail("%s: %lld rows are too many", name, rows);
  if (blocks == 0) return 0;
  gated_activation_kernel<<<static_cast<unsigned>(blocks), kPointwiseThreads, 0, stream>>>(
      g, u, h, rows, stride);
  return check_launch(name, "activation");
}

}  // namespace ka_moe
