// Hopper (sm_90a) synchronisation and copy primitives: mbarriers, bulk tensor copies (TMA),
// wgmma ordering and the shared-memory matrix descriptor, as thin inline-PTX wrappers.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace ka_sm90 {

__device__ __forceinline__ uint32_t smem_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void mbarrier_init(uint64_t* barrier, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(barrier)), "r"(arrivals)
               : "memory");
}

/// Makes the initialised barriers visible to the other threads and to the copy engine.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbarrier_wait(uint64_t* barrier, uint32_t parity) {
  const uint32_t address = smem_address(barrier);
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(address), "r"(parity)
        : "memory");
  } while (!done);
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(barrier)) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* barrier, uint32_t bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(barrier)),
      "r"(bytes)
      : "memory");
}

/// Copies the box at (inner, outer) of a 2-D tensor map into shared memory; the barrier's
/// transaction count drops by the box's full byte size (out-of-bounds elements arrive as 0).
__device__ __forceinline__ void tma_load_2d(void* destination, const CUtensorMap* map,
                                            int32_t inner, int32_t outer, uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_address(destination)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(smem_address(barrier))
      : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

/// Pins a register at this point of the program, so the compiler neither reads accumulators
/// before the wgmma that writes them has been waited for nor sinks writes past the next issue.
__device__ __forceinline__ void fence_register(float& value) {
  asm volatile("" : "+f"(value)::"memory");
}

template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegisters));
}

template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegisters));
}

/// wgmma shared-memory descriptor of a K-major operand tile written by TMA with 128-byte
/// swizzling: rows of 128 bytes (64 two-byte elements of K), 8-row core-matrix groups 1024 bytes
/// apart (stride byte offset), the leading byte offset unused by swizzled K-major layouts (1 by
/// convention), swizzle mode 1 (128B) in bits 62-63. The tile base must be 1024-byte aligned;
/// stepping K by 16 elements adds 32 bytes to the start address.
__device__ __forceinline__ uint64_t smem_descriptor_128b(uint32_t address) {
  return static_cast<uint64_t>((address & 0x3FFFF) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}

}  // namespace ka_sm90
