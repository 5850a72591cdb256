// Small PTX wrappers for tensor-core templates on sm_80 and later (the same instructions as
// templates/cuda/gemm_mma): 16-byte cp.async copies with zero-fill, their commit / wait groups,
// ldmatrix of four 8x8 b16 matrices (plain and transposed) and each operand layout's lane
// addresses, and mma.sync m16n8k16 with float32 accumulators for bfloat16 and float16 operands.
// Usable from nvcc and NVRTC.
//
// Fragment layouts (PTX ISA, "mma.m16n8k16"), g = lane / 4, t = lane % 4:
//   A (16 x 16, row):  a0 = (g, 2t..2t+1)  a1 = (g+8, 2t..2t+1)  a2 = (g, 2t+8..)  a3 = (g+8,
//   2t+8..) B (16 x 8, col):   b0 = (k 2t..2t+1, n g)  b1 = (k 2t+8..2t+9, n g) C/D (16 x 8): c0,
//   c1 = (g, 2t + {0, 1})  c2, c3 = (g + 8, 2t + {0, 1})
// ldmatrix.x4: lanes 8q..8q+7 give the row addresses of matrix q; each lane receives, from every
// matrix q, the two elements (row lane / 4, cols 2 * (lane % 4) + {0, 1}) as register q.
#ifndef KA_MMA_SYNC_CUH
#define KA_MMA_SYNC_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ unsigned ka_smem_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

/// 16-byte global -> shared copy (L2 only); src_bytes == 0 reads nothing and zero-fills the 16
/// bytes (the global address must still be a valid one).
__device__ __forceinline__ void ka_cp_async_16(void* smem, const void* global, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(ka_smem_address(smem)),
               "l"(global), "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ void ka_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Waits until at most kPending committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void ka_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ka_ldmatrix_x4(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(ka_smem_address(smem)));
}

__device__ __forceinline__ void ka_ldmatrix_x4_trans(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(ka_smem_address(smem)));
}

// Element offsets, inside a tile of row pitch `ld` elements, of the row address a lane gives
// ldmatrix.x4 for one mma operand: lanes 8q..8q+7 address the rows of 8x8 matrix q.
//
// A fragment (16 x 16) from an [m][k] tile: matrices (m0-7, k0-7), (m8-15, k0-7), (m0-7, k8-15),
// (m8-15, k8-15) = a0..a3.
__device__ __forceinline__ int ka_ldsm_offset_a(int lane, int ld) {
  return (lane % 16) * ld + (lane / 16) * 8;
}
// A fragment from a [k][m] tile, with ldmatrix .trans: rows k = r + 8 (q / 2) at m = 8 (q % 2).
__device__ __forceinline__ int ka_ldsm_offset_a_trans(int lane, int ld) {
  return (lane % 8 + (lane / 16) * 8) * ld + ((lane / 8) % 2) * 8;
}
// Two n8 B fragments from an [n][k] tile: matrices (n0-7, k0-7), (n0-7, k8-15), (n8-15, k0-7),
// (n8-15, k8-15) = b[j][0], b[j][1], b[j+1][0], b[j+1][1]. (The same addresses as a_trans.)
__device__ __forceinline__ int ka_ldsm_offset_b(int lane, int ld) {
  return (lane % 8 + (lane / 16) * 8) * ld + ((lane / 8) % 2) * 8;
}
// The same two B fragments from a [k][n] tile, with ldmatrix .trans: rows k = r + 8 (q % 2) at
// n = 8 (q / 2).
__device__ __forceinline__ int ka_ldsm_offset_b_trans(int lane, int ld) {
  return (lane % 8 + ((lane / 8) % 2) * 8) * ld + (lane / 16) * 8;
}

/// d += a * b for one m16n8k16 tile; the last argument picks the operand type.
__device__ __forceinline__ void ka_mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                             unsigned b1, __nv_bfloat16) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ka_mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                             unsigned b1, __half) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#endif  // KA_MMA_SYNC_CUH
