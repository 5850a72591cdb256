// Shared definitions of the moe_grouped and mlp_gated templates: the workspace as the kernels see
// it, and small load / store helpers (the problem's sizes: ka_moe_grouped.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "ka_moe_grouped.cuh"
#include "ka_problem.h"

namespace ka_moe {

// The sizes and the checks both templates share: ka_moe_grouped.cuh.
static_assert(kTopK >= 1 && kTopK <= kExperts, "1 <= TOP_K <= EXPERTS");

/// The workspace as the kernels see it (kernel.cu's Layout places it). Sorted positions
/// ("rows") number the (token, k) slots expert by expert: expert e owns the segment
/// [offsets[e], offsets[e + 1]).
struct Workspace {
  int* counts;          // [E] slots routed to each expert (zeroed by the host every call)
  int* offsets;         // [E + 1] exclusive prefix sums of counts
  int* tile_prefix;     // [E + 1] exclusive prefix sums of ceil(counts / BM): the M-tile schedule
  int* topk_ids;        // [T * K] expert of slot t * K + k
  float* topk_weights;  // [T * K] routing weight of the slot
  int* rank;            // [T * K] the slot's place inside its expert's segment
  int* sorted_slot;     // [T * K] slot at each sorted position
  int* pos_of_slot;     // [T * K] sorted position of each slot
  float* logits;        // [T * E] router logits (KA_ROUTER_WEIGHT only, else nullptr)
  ka_act_t* h;          // [T * K, I] act(x W_gate^T) * (x W_up^T), by sorted position
  ka_act_t* y;          // [T * K, H] h W_down^T, by sorted position
};

__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(double x) {
  return static_cast<float>(x);
}
__device__ __forceinline__ float to_float(__half x) {
  return __half2float(x);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

/// Eight elements at p (16-byte aligned for 16-bit types, 32-byte for float) as floats, through
/// the read-only path.
template <typename T>
__device__ __forceinline__ void load8_float(const T* p, float (&out)[8]) {
  if constexpr (sizeof(T) == 2) {
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int j = 0; j < 8; ++j) out[j] = to_float(v[j]);
  } else if constexpr (std::is_same<T, float>::value) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(p));
    const float4 b = __ldg(reinterpret_cast<const float4*>(p) + 1);
    out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
    out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) out[j] = to_float(p[j]);
  }
}

}  // namespace ka_moe
