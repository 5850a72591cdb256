// Hopper (sm_90a) bulk tensor copies (TMA) for the GEMM; the barriers and wgmma primitives they
// pair with are in ka_sm90.cuh.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "ka_sm90.cuh"

namespace ka_sm90 {

/// Copies the box at (inner, outer) of a 2-D tensor map into shared memory; the barrier's
/// transaction count drops by the box's full byte size (out-of-bounds elements arrive as 0).
__device__ __forceinline__ void tma_load_2d(void* destination, const CUtensorMap* map,
                                            int32_t inner, int32_t outer,
                                            unsigned long long* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_address(destination)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(smem_address(barrier))
      : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

}  // namespace ka_sm90
