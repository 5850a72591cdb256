// Hopper (sm_90a) synchronisation primitives shared by the wgmma templates: mbarriers (with the
// cp.async arrival), wgmma ordering, register fences, setmaxnreg and the shared-memory matrix
// descriptors, as thin inline-PTX wrappers. No CUDA header is needed, so NVRTC kernels include it
// as well as nvcc-built ones.
#pragma once

namespace ka_sm90 {

__device__ __forceinline__ unsigned smem_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void mbarrier_init(unsigned long long* barrier, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(barrier)), "r"(arrivals)
               : "memory");
}

/// Makes the initialised barriers visible to the other threads and to the copy engine.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbarrier_wait(unsigned long long* barrier, unsigned parity) {
  const unsigned address = smem_address(barrier);
  unsigned done;
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

__device__ __forceinline__ void mbarrier_arrive(unsigned long long* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(barrier)) : "memory");
}

/// This CTA's rank in its cluster.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

/// One arrival on the barrier at `barrier`'s offset in the shared memory of the cluster's CTA of
/// rank `rank`, releasing this thread's earlier accesses to the cluster.
__device__ __forceinline__ void mbarrier_arrive_cluster(unsigned long long* barrier,
                                                        unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(
          smem_address(barrier)),
      "r"(rank)
      : "memory");
}

/// Every thread of every CTA of the cluster meets here (all threads of a warp together).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

/// One arrival on the barrier once every cp.async this thread issued before has landed; the
/// arrival is one of those the barrier was initialised to expect (.noinc).
__device__ __forceinline__ void cp_async_mbarrier_arrive(unsigned long long* barrier) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_address(barrier))
               : "memory");
}

/// Orders this thread's generic-proxy view of shared memory (cp.async and st.shared writes it
/// has observed) before the async-proxy reads that follow (wgmma operands).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/// Barrier `id` (1-15; 0 is __syncthreads) over `threads` threads of the CTA.
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/// Counts the calling warps towards barrier `id` without waiting: with named_barrier_sync by
/// other warps on the same id (`threads` counting both), one side lets the other pass.
__device__ __forceinline__ void named_barrier_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned long long* barrier,
                                                          unsigned bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(barrier)),
      "r"(bytes)
      : "memory");
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
__device__ __forceinline__ unsigned long long smem_descriptor_128b(unsigned address) {
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(1) << 16) |
         (static_cast<unsigned long long>(1024 >> 4) << 32) |
         (static_cast<unsigned long long>(1) << 62);
}

/// wgmma shared-memory descriptor of an MN-major (transposed) operand tile stored as 128-byte
/// swizzled rows of 64 two-byte elements of MN, one row per K index: 8-row groups of K 1024 bytes
/// apart (the stride byte offset, along K) and `mn_block_bytes` from one 64-element block of MN
/// to the next (the leading byte offset). Stepping K by 16 rows adds 2048 bytes to the address.
__device__ __forceinline__ unsigned long long smem_descriptor_128b_mn(unsigned address,
                                                                      unsigned mn_block_bytes) {
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>((mn_block_bytes & 0x3FFFF) >> 4) << 16) |
         (static_cast<unsigned long long>(1024 >> 4) << 32) |
         (static_cast<unsigned long long>(1) << 62);
}

/// Byte offset of 16-byte chunk `chunk` (0-7) of row `row` in a 1024-byte aligned tile of 128-byte
/// rows under the 128B swizzle (the layout TMA writes and the descriptors above describe).
__device__ __forceinline__ unsigned swizzle_128b_offset(unsigned row, unsigned chunk) {
  return row * 128 + ((chunk ^ (row & 7)) << 4);
}

}  // namespace ka_sm90
