// Tensor-core GEMM for bf16 / fp16 operands with float32 accumulation (sm_80 and later):
// C = epilogue(A @ B) with mma.sync.m16n8k16, operands fed by ldmatrix from a STAGES-deep
// cp.async shared-memory pipeline.
//
// A CTA computes a BM x BN tile of C with WARPS_M x WARPS_N warps, each owning a
// (BM / WARPS_M) x (BN / WARPS_N) warp tile. Shared memory keeps every operand in its global
// layout (rows of 8-element 16-byte chunks, each row padded by one chunk so that the 8 row
// addresses of an ldmatrix phase fall in 8 different bank groups): a K-major operand is read with
// plain ldmatrix, an M/N-major one with ldmatrix.trans, which yields the same fragments.
// Out-of-range chunks are zero-filled (cp.async with src-size 0); when rows are not 16-byte
// aligned (K, M or N not a multiple of 8) every chunk is copied element by element instead.
// CTAs are rasterised in groups of SWIZZLE_GROUP tile rows so that concurrent CTAs share A and B
// tiles in L2.
#include "ka_problem.h"

static_assert(sizeof(ka_a_t) == 2 && sizeof(ka_b_t) == 2,
              "gemm_mma serves bfloat16 and float16 operands (knobs.json: A_BYTES == 2)");

typedef ka_a_t ka_elem_t;  // A and B share their dtype (the binder checks it)

constexpr int kThreads = WARPS_M * WARPS_N * 32;
constexpr int kWarpTileM = BM / WARPS_M;
constexpr int kWarpTileN = BN / WARPS_N;
constexpr int kMmaTilesM = kWarpTileM / 16;  // m16 tiles per warp
constexpr int kMmaTilesN = kWarpTileN / 8;   // n8 tiles per warp, loaded in pairs
static_assert(kWarpTileM % 16 == 0 && kWarpTileN % 16 == 0, "warp tile: 16-multiple sides");
static_assert(BK % 16 == 0, "BK is a multiple of the mma's k16");

constexpr int kPad = 8;  // elements: one 16-byte chunk per shared-memory row
// Each operand tile as stored: [rows][cols + kPad], cols contiguous in global memory.
constexpr int kARows = KA_A_K_MAJOR ? BM : BK;
constexpr int kACols = KA_A_K_MAJOR ? BK : BM;
constexpr int kBRows = KA_B_K_MAJOR ? BN : BK;
constexpr int kBCols = KA_B_K_MAJOR ? BK : BN;
constexpr int kALd = kACols + kPad;
constexpr int kBLd = kBCols + kPad;
constexpr int kAStage = kARows * kALd;
constexpr int kBStage = kBRows * kBLd;

__device__ __forceinline__ unsigned smem_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void cp_async_16(void* smem, const void* global, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(smem)),
               "l"(global), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem)));
}

// d += a * b for one m16n8k16 tile; the last argument picks the operand type.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1, __nv_bfloat16) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1, __half) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One operand of a global matrix [rows_total][cols_total] (cols contiguous, leading dimension
// cols_total), and how to copy a kRows x kCols tile of it at (row0, col0) into shared memory.
struct Operand {
  const ka_elem_t* data;
  long long rows_total, cols_total;
  bool vector_ok;  // rows start 16-byte aligned: cp.async can move whole chunks

  template <int kRows, int kCols, int kLd>
  __device__ __forceinline__ void load_tile(ka_elem_t* smem, long long row0, long long col0,
                                            int tid) const {
    constexpr int kChunksPerRow = kCols / 8;
    constexpr int kChunks = kRows * kChunksPerRow;
#pragma unroll
    for (int i = 0; i < (kChunks + kThreads - 1) / kThreads; ++i) {
      const int chunk = tid + i * kThreads;
      if (kChunks % kThreads != 0 && chunk >= kChunks) break;
      const int r = chunk / kChunksPerRow;
      const int c = (chunk % kChunksPerRow) * 8;
      const long long row = row0 + r;
      const long long col = col0 + c;
      ka_elem_t* dst = smem + r * kLd + c;
      if (vector_ok) {
        // cols_total % 8 == 0, so a chunk is either wholly inside or wholly outside.
        const bool inside = row < rows_total && col < cols_total;
        cp_async_16(dst, inside ? data + row * cols_total + col : data, inside ? 16 : 0);
      } else {
        const unsigned short* src = reinterpret_cast<const unsigned short*>(data);
        unsigned short bits[8];
#pragma unroll
        for (int e = 0; e < 8; ++e)
          bits[e] = row < rows_total && col + e < cols_total ? src[row * cols_total + col + e] : 0;
        uint4 packed;
        packed.x = bits[0] | (static_cast<unsigned>(bits[1]) << 16);
        packed.y = bits[2] | (static_cast<unsigned>(bits[3]) << 16);
        packed.z = bits[4] | (static_cast<unsigned>(bits[5]) << 16);
        packed.w = bits[6] | (static_cast<unsigned>(bits[7]) << 16);
        *reinterpret_cast<uint4*>(dst) = packed;
      }
    }
  }
};

__device__ __forceinline__ bool aligned_16(const void* pointer) {
  return (reinterpret_cast<unsigned long long>(pointer) & 15) == 0;
}

extern "C" __global__ void __launch_bounds__(kThreads) ka_gemm_mma(KA_KERNEL_PARAMS) {
  const KaArgs ka = KA_ARGS;
  extern __shared__ __align__(16) unsigned char ka_smem[];
  ka_elem_t* a_smem = reinterpret_cast<ka_elem_t*>(ka_smem);
  ka_elem_t* b_smem = a_smem + STAGES * kAStage;

  // Grouped rasterisation: SWIZZLE_GROUP tile rows advance together along N.
  const int tiles_m = static_cast<int>((ka.m + BM - 1) / BM);
  const int tiles_n = static_cast<int>((ka.n + BN - 1) / BN);
  const int tiles_per_group = SWIZZLE_GROUP * tiles_n;
  const int group = blockIdx.x / tiles_per_group;
  const int first_m = group * SWIZZLE_GROUP;
  const int group_rows = min(tiles_m - first_m, SWIZZLE_GROUP);
  const int in_group = blockIdx.x % tiles_per_group;
  const long long m0 = static_cast<long long>(first_m + in_group % group_rows) * BM;
  const long long n0 = static_cast<long long>(in_group / group_rows) * BN;

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp % WARPS_M;
  const int warp_n = warp / WARPS_M;

  const Operand a_op = KA_A_K_MAJOR ? Operand{ka.a, ka.m, ka.k, ka.k % 8 == 0 && aligned_16(ka.a)}
                                    : Operand{ka.a, ka.k, ka.m, ka.m % 8 == 0 && aligned_16(ka.a)};
  const Operand b_op = KA_B_K_MAJOR ? Operand{ka.b, ka.n, ka.k, ka.k % 8 == 0 && aligned_16(ka.b)}
                                    : Operand{ka.b, ka.k, ka.n, ka.n % 8 == 0 && aligned_16(ka.b)};

  auto load_stage = [&](int stage, int k_tile) {
    const long long k0 = static_cast<long long>(k_tile) * BK;
    ka_elem_t* a_dst = a_smem + stage * kAStage;
    ka_elem_t* b_dst = b_smem + stage * kBStage;
    if (KA_A_K_MAJOR)
      a_op.load_tile<kARows, kACols, kALd>(a_dst, m0, k0, tid);
    else
      a_op.load_tile<kARows, kACols, kALd>(a_dst, k0, m0, tid);
    if (KA_B_K_MAJOR)
      b_op.load_tile<kBRows, kBCols, kBLd>(b_dst, n0, k0, tid);
    else
      b_op.load_tile<kBRows, kBCols, kBLd>(b_dst, k0, n0, tid);
  };

  float acc[kMmaTilesM][kMmaTilesN][4];
#pragma unroll
  for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
    for (int j = 0; j < kMmaTilesN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Per-lane ldmatrix offsets inside a stage, for k-step 0 of the warp's first tiles. Lanes
  // 8q..8q+7 address the rows of 8x8 matrix q. Non-transposed A ([m][k]): matrices (m0-7, k0-7),
  // (m8-15, k0-7), (m0-7, k8-15), (m8-15, k8-15) = a0..a3. Transposed A ([k][m]): the same
  // fragments from rows k = r + 8 * (q / 2) at m = 8 * (q % 2). B pairs two n8 tiles:
  // (n0-7, k0-7), (n0-7, k8-15), (n8-15, k0-7), (n8-15, k8-15) = b[j][0], b[j][1], b[j+1][0],
  // b[j+1][1].
  const int r8 = lane % 8;
  const int q = lane / 8;
  const int a_lane_offset = KA_A_K_MAJOR
                                ? (warp_m * kWarpTileM + lane % 16) * kALd + (lane / 16) * 8
                                : (r8 + (q / 2) * 8) * kALd + warp_m * kWarpTileM + (q % 2) * 8;
  const int b_lane_offset = KA_B_K_MAJOR
                                ? (warp_n * kWarpTileN + r8 + (q / 2) * 8) * kBLd + (q % 2) * 8
                                : (r8 + (q % 2) * 8) * kBLd + warp_n * kWarpTileN + (q / 2) * 8;
  // Element strides inside a stage: one m16 tile, one n16 pair, one k16 step.
  constexpr int kAStepM = KA_A_K_MAJOR ? 16 * kALd : 16;
  constexpr int kAStepK = KA_A_K_MAJOR ? 16 : 16 * kALd;
  constexpr int kBStepN = KA_B_K_MAJOR ? 16 * kBLd : 16;
  constexpr int kBStepK = KA_B_K_MAJOR ? 16 : 16 * kBLd;

  auto compute_stage = [&](int stage) {
    const ka_elem_t* a_base = a_smem + stage * kAStage + a_lane_offset;
    const ka_elem_t* b_base = b_smem + stage * kBStage + b_lane_offset;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      unsigned a_frag[kMmaTilesM][4];
      unsigned b_frag[kMmaTilesN / 2][4];
#pragma unroll
      for (int i = 0; i < kMmaTilesM; ++i) {
        const ka_elem_t* p = a_base + i * kAStepM + kk * kAStepK;
        if (KA_A_K_MAJOR)
          ldmatrix_x4(a_frag[i], p);
        else
          ldmatrix_x4_trans(a_frag[i], p);
      }
#pragma unroll
      for (int j = 0; j < kMmaTilesN / 2; ++j) {
        const ka_elem_t* p = b_base + j * kBStepN + kk * kBStepK;
        if (KA_B_K_MAJOR)
          ldmatrix_x4(b_frag[j], p);
        else
          ldmatrix_x4_trans(b_frag[j], p);
      }
#pragma unroll
      for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaTilesN; ++j)
          mma_16816(acc[i][j], a_frag[i], b_frag[j / 2][(j % 2) * 2],
                    b_frag[j / 2][(j % 2) * 2 + 1], ka_elem_t());
    }
  };

  const int k_tiles = static_cast<int>((ka.k + BK - 1) / BK);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    // Tile kt has landed; every warp is done with the stage the next load overwrites.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < k_tiles) load_stage(next % STAGES, next);
    cp_async_commit();
    compute_stage(kt % STAGES);
  }
  cp_async_wait<0>();

  // Accumulator fragment: c0, c1 at (lane / 4, 2 * (lane % 4) + {0, 1}); c2, c3 eight rows down.
  const bool pairs_ok = ka.n % 2 == 0;
#pragma unroll
  for (int i = 0; i < kMmaTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < kMmaTilesN; ++j) {
      const long long col = n0 + warp_n * kWarpTileN + j * 8 + (lane % 4) * 2;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const long long row = m0 + warp_m * kWarpTileM + i * 16 + lane / 4 + half * 8;
        if (row >= ka.m) continue;
        if (pairs_ok && col + 1 < ka.n) {
          const float pair[2] = {acc[i][j][2 * half], acc[i][j][2 * half + 1]};
          ka.store<2>(row, col, pair);
        } else {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (col + e >= ka.n) continue;
            const float one[1] = {acc[i][j][2 * half + e]};
            ka.store<1>(row, col + e, one);
          }
        }
      }
    }
  }
}
