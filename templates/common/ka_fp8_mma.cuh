// The device primitives of the FP8 (e4m3) tensor-core templates on sm_89 and later
// (ka_fp8_scaled_mma.cuh, templates/cuda/moe_fp8_grouped): the shared-memory row padding, 16-byte
// cp.async copies with zero-fill and their commit / wait groups, the widening of e4m3 bytes to
// float16 pairs with cvt.rn.f16x2.e4m3x2 (exact: every e4m3 value is a float16), and mma.sync
// m16n8k16 with float16 operands and float32 accumulators. No problem header: include it anywhere.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .f16 operands), g = lane / 4, t = lane % 4:
//   A (row): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)   [row, k]
//   B (col): b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)
//   C:       c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1)                          [row, col]
// In each 32-bit operand register the lower k sits in the lower 16 bits, which is where
// cvt.rn.f16x2.e4m3x2 puts the lower-addressed byte.
#ifndef KA_FP8_MMA_CUH
#define KA_FP8_MMA_CUH

#include <cuda_runtime.h>

#include <cstdint>

namespace ka_fp8 {

/// Bytes of padding after each shared-memory row of e4m3 bytes: keeps 16-byte chunks aligned and
/// spreads the 8 rows a fragment load touches over distinct banks for tile widths of 32, 64 and
/// 128 bytes (row pitches of 12, 20 and 36 words).
constexpr int kRowPad = 16;

__device__ __forceinline__ unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

/// 16 bytes global -> shared; `bytes` 0 writes zeros and reads nothing.
__device__ __forceinline__ void copy16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(bytes));
}

__device__ __forceinline__ void commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int kPending>
__device__ __forceinline__ void wait_pending() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

/// Two e4m3 bytes (the lower address in the low byte) -> f16x2 (the lower address in the low half).
__device__ __forceinline__ unsigned widen(const unsigned char* pair) {
  const unsigned short bits = *reinterpret_cast<const unsigned short*>(pair);
  unsigned result;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(result) : "h"(bits));
  return result;
}

/// Four e4m3 bytes as one little-endian word (bytes p..p+3 of a 4-byte aligned load) -> two
/// f16x2: `low` holds bytes p, p+1 and `high` bytes p+2, p+3, each with the lower address in the
/// low half.
__device__ __forceinline__ void widen4(unsigned word, unsigned& low, unsigned& high) {
  asm("{\n"
      "  .reg .b16 lo, hi;\n"
      "  mov.b32 {lo, hi}, %2;\n"
      "  cvt.rn.f16x2.e4m3x2 %0, lo;\n"
      "  cvt.rn.f16x2.e4m3x2 %1, hi;\n"
      "}\n"
      : "=r"(low), "=r"(high)
      : "r"(word));
}

__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace ka_fp8

#endif  // KA_FP8_MMA_CUH
