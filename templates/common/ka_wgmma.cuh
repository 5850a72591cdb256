// wgmma.mma_async wrappers, m64nN with float32 accumulators in registers.
//   MmaSs<N, kTypes>: D[64 x N] = (accumulate ? D : 0) + A[64 x K] * B[N x K]^T, both operands
//          K-major in shared memory behind 128B-swizzle descriptors; K is 16 for bfloat16 and
//          float16 operands, 32 for float8 e4m3 (every wgmma step covers 32 bytes of a row).
//   MmaRs: D[64 x N] += A[64 x 16] * B[16 x N], A in registers (four 32-bit pairs a thread, the
//          layout of an m64n16 accumulator: attention's probabilities feed it straight from the
//          softmax) and B N-major in shared memory (a [16 rows of K][N] row-major tile, as V's
//          rows arrive), behind an N-major 128B-swizzle descriptor.
// Inline asm needs one constraint per accumulator register, so the operand lists and the
// instruction text are spelled out once per accumulator count by the macros below, and each
// shape and type is one line of them.
#pragma once

namespace ka_wgmma {

// The m64nN float32 accumulator layout: warp w of the warpgroup owns rows 16w..16w+15; lane l
// holds, for each 8-column group j, columns 8j + 2(l % 4) + {0, 1} of rows l / 4 (d[4j],
// d[4j+1]) and l / 4 + 8 (d[4j+2], d[4j+3]).

/// The first of this thread's two rows in the m64 block starting at row0 (the other is 8 below).
__device__ __forceinline__ long long accumulator_row(long long row0) {
  const int lane = threadIdx.x % 128;
  return row0 + (lane / 32) * 16 + (lane % 32) / 4;
}

/// This thread's first column in 8-column group 0 of the block starting at col0.
__device__ __forceinline__ long long accumulator_column(long long col0) {
  return col0 + 2 * (threadIdx.x % 4);
}

/// Operand types of a wgmma: KA_WGMMA_TYPES_* below spell each one in PTX.
enum Types { kBfloat16, kFloat16, kE4m3 };

// The accumulator operands: their text (%0, %1, ...) and their constraints, each count
// extending the one below it.
#define KA_WGMMA_LIST_32                                                                  \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"

#define KA_WGMMA_OUT_32                                                                           \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

#define KA_WGMMA_LIST_64                                                                  \
  KA_WGMMA_LIST_32                                                                        \
  ", "                                                                                    \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, " \
  "%49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"

#define KA_WGMMA_OUT_64                                                                          \
  KA_WGMMA_OUT_32, "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), \
      "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), \
      "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), \
      "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), \
      "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

#define KA_WGMMA_LIST_88                                                                  \
  KA_WGMMA_LIST_64                                                                        \
  ", "                                                                                    \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, " \
  "%81, %82, %83, %84, %85, %86, %87"

#define KA_WGMMA_OUT_88                                                                          \
  KA_WGMMA_OUT_64, "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), \
      "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), \
      "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), \
      "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])

#define KA_WGMMA_LIST_128                                                                    \
  KA_WGMMA_LIST_88                                                                           \
  ", "                                                                                       \
  "%88, %89, %90, %91, %92, %93, %94, %95, %96, %97, "                                       \
  "%98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, " \
  "%113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

#define KA_WGMMA_OUT_128                                                                          \
  KA_WGMMA_OUT_88, "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]),  \
      "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), \
      "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]),         \
      "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]),         \
      "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]),         \
      "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),         \
      "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

#define KA_WGMMA_TYPES_kBfloat16 "k16.f32.bf16.bf16"
#define KA_WGMMA_TYPES_kFloat16 "k16.f32.f16.f16"
#define KA_WGMMA_TYPES_kE4m3 "k32.f32.e4m3.e4m3"
// The immediates after scale-d: scale-a and scale-b (1: no negation), then transpose-a and
// transpose-b for the 16-bit types (0: K-major); float8 wgmma has no transpose operands.
#define KA_WGMMA_IMM_kBfloat16 "1, 1, 0, 0"
#define KA_WGMMA_IMM_kFloat16 "1, 1, 0, 0"
#define KA_WGMMA_IMM_kE4m3 "1, 1"

template <int N, Types kTypes>
struct MmaSs;

// REGS accumulators (N / 2), then the descriptors at %REGS and %REGS+1 and the accumulate flag at
// %REGS+2 (the indices spelled out: the preprocessor cannot add).
#define KA_WGMMA_SS(N, TYPES, REGS, DESC_A, DESC_B, FLAG)                                   \
  template <>                                                                               \
  struct MmaSs<N, TYPES> {                                                                  \
    static __device__ __forceinline__ void run(float (&d)[REGS], unsigned long long desc_a, \
                                               unsigned long long desc_b, int accumulate) { \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #FLAG                               \
                   ", 0;\n"                                                                 \
                   "wgmma.mma_async.sync.aligned.m64n" #N KA_WGMMA_TYPES_##TYPES            \
                   " {" KA_WGMMA_LIST_##REGS "}, %" #DESC_A ", %" #DESC_B                   \
                                             ", p, " KA_WGMMA_IMM_##TYPES ";\n}\n"          \
                   : KA_WGMMA_OUT_##REGS                                                    \
                   : "l"(desc_a), "l"(desc_b), "r"(accumulate));                            \
    }                                                                                       \
  };

KA_WGMMA_SS(64, kBfloat16, 32, 32, 33, 34)
KA_WGMMA_SS(64, kFloat16, 32, 32, 33, 34)
KA_WGMMA_SS(64, kE4m3, 32, 32, 33, 34)
KA_WGMMA_SS(128, kBfloat16, 64, 64, 65, 66)
KA_WGMMA_SS(128, kFloat16, 64, 64, 65, 66)
KA_WGMMA_SS(128, kE4m3, 64, 64, 65, 66)
// n176: FlashAttention-3's key tile for head dim 128 without a causal mask.
KA_WGMMA_SS(176, kBfloat16, 88, 88, 89, 90)
KA_WGMMA_SS(176, kFloat16, 88, 88, 89, 90)
KA_WGMMA_SS(256, kBfloat16, 128, 128, 129, 130)
KA_WGMMA_SS(256, kFloat16, 128, 128, 129, 130)
KA_WGMMA_SS(256, kE4m3, 128, 128, 129, 130)

/// The 16-bit form the bfloat16 and float16 templates name.
template <int N, bool kF16>
struct Mma : MmaSs<N, kF16 ? Types::kFloat16 : Types::kBfloat16> {};

template <int N, bool kF16>
struct MmaRs;

// A's four registers at %REGS..%REGS+3, B's descriptor at %REGS+4, the flag at %REGS+5; B is
// transposed (N-major), A's registers need no transpose operand.
#define KA_WGMMA_RS(N, F16, TYPES, REGS, A0, A1, A2, A3, DESC_B, FLAG)                          \
  template <>                                                                                   \
  struct MmaRs<N, F16> {                                                                        \
    static __device__ __forceinline__ void run(float (&d)[REGS], const unsigned (&a)[4],        \
                                               unsigned long long desc_b, int accumulate) {     \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #FLAG                                   \
                   ", 0;\n"                                                                     \
                   "wgmma.mma_async.sync.aligned.m64n" #N KA_WGMMA_TYPES_##TYPES                \
                   " {" KA_WGMMA_LIST_##REGS "}, {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3          \
                                             "}, %" #DESC_B ", p, 1, 1, 1;\n}\n"                \
                   : KA_WGMMA_OUT_##REGS                                                        \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate)); \
    }                                                                                           \
  };

KA_WGMMA_RS(64, false, kBfloat16, 32, 32, 33, 34, 35, 36, 37)
KA_WGMMA_RS(64, true, kFloat16, 32, 32, 33, 34, 35, 36, 37)
KA_WGMMA_RS(128, false, kBfloat16, 64, 64, 65, 66, 67, 68, 69)
KA_WGMMA_RS(128, true, kFloat16, 64, 64, 65, 66, 67, 68, 69)

#undef KA_WGMMA_SS
#undef KA_WGMMA_RS
#undef KA_WGMMA_LIST_32
#undef KA_WGMMA_LIST_64
#undef KA_WGMMA_LIST_88
#undef KA_WGMMA_LIST_128
#undef KA_WGMMA_OUT_32
#undef KA_WGMMA_OUT_64
#undef KA_WGMMA_OUT_88
#undef KA_WGMMA_OUT_128
#undef KA_WGMMA_TYPES_kBfloat16
#undef KA_WGMMA_TYPES_kFloat16
#undef KA_WGMMA_TYPES_kE4m3
#undef KA_WGMMA_IMM_kBfloat16
#undef KA_WGMMA_IMM_kFloat16
#undef KA_WGMMA_IMM_kE4m3

}  // namespace ka_wgmma
