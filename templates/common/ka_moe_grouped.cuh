// What the grouped-GEMM mixture-of-experts templates (moe_grouped, moe_backward, and for FP8
// problems moe_fp8_grouped) share: the problem's sizes and the checks the 16-bit templates place
// on them, the 16- and 4-byte packs their rows move in,
// the block-wide scan of the per-expert slot counts into segments and an M-tile schedule, the
// lookup of a CTA's tile in that schedule, the warp tiling of their mma.sync GEMMs, the combine's
// per-thread pack of a token's output row, and the host entry's checks and workspace carving.
//
// Sorted positions ("rows") number the routed (token, k) slots expert by expert: expert e owns
// the segment [offsets[e], offsets[e + 1]) and the M tiles [tile_prefix[e], tile_prefix[e + 1]),
// ceil(count_e / BM) of them. The number of tiles depends on the routing, which only the device
// knows, so a GEMM grid covers the upper bound ceil(S / BM) + min(E, S) for S routed slots (each
// non-empty expert adds at most one partial tile) and the CTAs past the real count exit.
#ifndef KA_MOE_GROUPED_CUH
#define KA_MOE_GROUPED_CUH

#include <climits>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ka_cuda_entry.h"
#include "ka_problem.h"

namespace ka_moe {

constexpr int kExperts = KA_EXPERTS;
constexpr int kHidden = KA_HIDDEN;
constexpr int kInter = KA_INTER;
constexpr int kTopK = KA_TOP_K;

// What the 16-bit templates' tensor-core GEMMs and 16-byte row copies need. (TOP_K's bounds
// differ: each template states its own.) An FP8 problem's header (KA_FP8 1: e4m3 bytes with block
// scales) is served by moe_fp8_grouped alone, which states its own checks.
#if !defined(KA_FP8) || !KA_FP8
static_assert(sizeof(ka_act_t) == 2 && sizeof(ka_w_t) == 2,
              "the grouped MoE templates serve bfloat16 and float16 hidden states and weights "
              "(knobs.json: ELEM_BYTES == 2 and W_BYTES == 2)");
static_assert(std::is_same<ka_act_t, ka_w_t>::value,
              "the grouped MoE templates: the hidden states and the weights must share one dtype "
              "(the tensor cores multiply them together)");
static_assert(kHidden % 8 == 0 && kInter % 8 == 0,
              "the grouped MoE templates copy rows in 16-byte chunks (knobs.json: HIDDEN % 8 == 0 "
              "and INTER % 8 == 0)");
#endif

/// Eight consecutive elements: one 16-byte unit of 16-bit elements (two of float32 ones).
template <typename T>
struct alignas(16) Pack8 {
  T v[8];
};

/// Two consecutive 16-bit elements, one 4-byte unit.
template <typename T>
struct alignas(4) Pack2 {
  T v[2];
};

/// The exclusive prefix sums of the kExperts slot counts (`counts`, global or shared memory)
/// into s_offset[0, kExperts] (shared memory: every thread of the block reads it afterwards),
/// and, when `writer`, into offsets[0, kExperts] and the M-tile prefix tile_prefix[0, kExperts]
/// of ceil(count / kBM) tiles per expert (global memory: the GEMMs read them). Called by all
/// kThreads threads of the block; ends with a barrier. Each thread scans kPer consecutive
/// experts, the threads' totals are scanned by warp shuffles, then across the warps: a fixed
/// order, so every block computes the same sums.
template <int kExperts, int kBM, int kThreads>
__device__ void scan_expert_counts(const int* counts, int* s_offset, int* offsets, int* tile_prefix,
                                   bool writer) {
  static_assert(kThreads % 32 == 0, "whole warps");
  constexpr int kPer = (kExperts + kThreads - 1) / kThreads;
  constexpr int kWarps = kThreads / 32;
  __shared__ int s_warp_count[kWarps], s_warp_tiles[kWarps];
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  int count[kPer];
  int own_count = 0, own_tiles = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int e = tid * kPer + i;
    count[i] = e < kExperts ? counts[e] : 0;
    own_count += count[i];
    own_tiles += (count[i] + kBM - 1) / kBM;
  }
  int incl_count = own_count, incl_tiles = own_tiles;
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const int c = __shfl_up_sync(0xffffffffu, incl_count, offset);
    const int t = __shfl_up_sync(0xffffffffu, incl_tiles, offset);
    if (lane >= offset) {
      incl_count += c;
      incl_tiles += t;
    }
  }
  if (lane == 31) {
    s_warp_count[warp] = incl_count;
    s_warp_tiles[warp] = incl_tiles;
  }
  __syncthreads();
  int run_count = incl_count - own_count, run_tiles = incl_tiles - own_tiles;
  for (int w = 0; w < warp; ++w) {
    run_count += s_warp_count[w];
    run_tiles += s_warp_tiles[w];
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int e = tid * kPer + i;
    if (e < kExperts) {
      s_offset[e] = run_count;
      if (writer) {
        offsets[e] = run_count;
        tile_prefix[e] = run_tiles;
      }
    }
    run_count += count[i];
    run_tiles += (count[i] + kBM - 1) / kBM;
  }
  if (tid == kThreads - 1) {
    // The last thread's running sums are the totals.
    s_offset[kExperts] = run_count;
    if (writer) {
      offsets[kExperts] = run_count;
      tile_prefix[kExperts] = run_tiles;
    }
  }
  __syncthreads();
}

/// p, hidden from the optimiser (an identity move it cannot see through): the GEMMs form each
/// stage's copy sources from it, rather than hoisting one register pair per copy out of the K
/// loop.
template <typename T>
__device__ __forceinline__ const T* opaque(const T* p) {
  asm("mov.b64 %0, %0;" : "+l"(p));
  return p;
}

/// One CTA's output tile of a grouped GEMM over the sorted rows.
struct MTile {
  int expert;
  int seg_start;  ///< the expert's first sorted position
  int m0;         ///< the tile's first row inside the segment
  int rows;       ///< rows of the tile inside the segment, 1..kBM
  int nt;         ///< N tile
};

/// The M tile of CTA blockIdx.x in a 1-D grid of m_tiles x kNTiles CTAs, ordered in groups of
/// kMGroup M tiles, and its N tile in `nt`: inside a group the M tiles advance fastest, then the
/// N tiles, so that the CTAs running at once share B tiles (an expert's weights) and the group's
/// A rows stay in L2.
template <int kMGroup, int kNTiles>
__device__ __forceinline__ int grouped_m_tile(int m_tiles, int& nt) {
  const int per_group = kMGroup * kNTiles;
  const int group = blockIdx.x / per_group;
  const int first_m = group * kMGroup;
  const int group_rows = min(m_tiles - first_m, kMGroup);
  const int in_group = blockIdx.x % per_group;
  nt = in_group / group_rows;
  return first_m + in_group % group_rows;
}

/// The tile of CTA blockIdx.x in the grouped order of grouped_m_tile over the routing's M-tile
/// schedule. false (the same for every thread of the CTA) past the real tile count. Called by
/// all kThreads threads; holds one barrier when it returns true.
template <int kExperts, int kBM, int kMGroup, int kNTiles, int kThreads>
__device__ __forceinline__ bool find_m_tile(int m_tiles, const int* tile_prefix, const int* offsets,
                                            MTile& tile) {
  __shared__ int s_expert;
  const int mt = grouped_m_tile<kMGroup, kNTiles>(m_tiles, tile.nt);
  if (mt >= tile_prefix[kExperts]) return false;
  for (int e = threadIdx.x; e < kExperts; e += kThreads)
    if (tile_prefix[e] <= mt && mt < tile_prefix[e + 1]) s_expert = e;  // exactly one
  __syncthreads();
  tile.expert = s_expert;
  tile.seg_start = offsets[tile.expert];
  tile.m0 = (mt - tile_prefix[tile.expert]) * kBM;
  tile.rows = min(kBM, offsets[tile.expert + 1] - tile.seg_start - tile.m0);
  return true;
}

/// The tile of CTA blockIdx.x of a dense GEMM over `rows_total` rows (one segment, no routing:
/// the mlp_gated template), in the grouped order of grouped_m_tile; m_tiles = ceil(rows_total /
/// kBM), so every CTA has a tile.
template <int kBM, int kMGroup, int kNTiles>
__device__ __forceinline__ MTile dense_m_tile(int m_tiles, long long rows_total) {
  MTile tile;
  const int mt = grouped_m_tile<kMGroup, kNTiles>(m_tiles, tile.nt);
  tile.expert = 0;
  tile.seg_start = 0;
  tile.m0 = mt * kBM;
  tile.rows = static_cast<int>(min(static_cast<long long>(kBM), rows_total - tile.m0));
  return tile;
}

/// The warp tiling of a BM x BN CTA tile for mma.sync m16n8k16: WARPS_M x WARPS_N warps, each
/// kMmaM m16 tiles by kMmaN n8 tiles (B fragments are ldmatrix'd two n8 tiles at once, so the
/// warp tile's sides are multiples of 16).
template <int kBM, int kBN, int kWarpsM, int kWarpsN>
struct WarpTiles {
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kWarpTileM = kBM / kWarpsM;
  static constexpr int kWarpTileN = kBN / kWarpsN;
  static constexpr int kMmaM = kWarpTileM / 16;  // m16 tiles per warp
  static constexpr int kMmaN = kWarpTileN / 8;   // n8 tiles per warp (ldmatrix'd in pairs)
  static_assert(
      kWarpTileM % 16 == 0 && kWarpTileN % 16 == 0,
      "warp tile sides must be multiples of 16 (BM % (WARPS_M * 16), BN % (WARPS_N * 16))");

  /// The m16 tiles of warp row warp_m that hold real rows when the tile has `rows` of them (the
  /// rest is zero-filled): warps skip the others' mma, which matters for decode-sized segments.
  static __device__ __forceinline__ int live_m(int rows, int warp_m) {
    return min(kMmaM, max(0, (rows - warp_m * kWarpTileM + 15) / 16));
  }
};

/// Sets every element of a float array of any rank (the GEMMs' accumulators) to zero, unrolled.
__device__ __forceinline__ void zero_fill(float& v) {
  v = 0.0f;
}
template <typename T, int kN>
__device__ __forceinline__ void zero_fill(T (&a)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) zero_fill(a[i]);
}

/// One thread of a combine over a grid of kThreads-thread blocks, a thread per 8 output
/// elements: token t's columns [c, c + 8) summed in float32 over its kTopK slots in k order
/// (add_slot(slot, c, acc) adds slot t * kTopK + k's share), rounded once to out_row's element
/// type and stored as one 16-byte pack at out_row(t) + c (two for a float32 output). Threads past
/// the last token do nothing.
template <int kThreads, typename AddSlot, typename OutRow>
__device__ __forceinline__ void combine_pack8(long long tokens, AddSlot add_slot, OutRow out_row) {
  using out_t = std::remove_pointer_t<decltype(out_row(0LL))>;
  static_assert(sizeof(out_t) == 2 || sizeof(out_t) == 4,
                "the combine stores 16- or 32-bit outputs, 8 to a 16- or 32-byte pack");
  constexpr int kChunks = kHidden / 8;
  const long long index = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (index >= tokens * kChunks) return;
  const long long t = index / kChunks;
  const int c = static_cast<int>(index % kChunks) * 8;
  float acc[8];
  zero_fill(acc);
#pragma unroll
  for (int k = 0; k < kTopK; ++k) add_slot(t * kTopK + k, c, acc);
  Pack8<out_t> out;
#pragma unroll
  for (int j = 0; j < 8; ++j) out.v[j] = ka_from_float<out_t>(acc[j]);
  *reinterpret_cast<Pack8<out_t>*>(out_row(t) + c) = out;
}

// ---- Host: the checks of both templates' ka_run; `name` (the template's) starts each message.

/// The start of ka_run: binds the call's tensors into ka, clears an earlier call's error (not
/// this call's launch failure), and gives the tokens and the routed slots, tokens * kTopK, which
/// sorted positions (int, with room for the grids' arithmetic) must hold. 0, or ka_fail's 1.
inline int begin_call(const char* name, const ka_tensor* inputs, int n_inputs, ka_tensor* outputs,
                      int n_outputs, KaArgs& ka, long long& tokens, long long& slots) {
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka))
    return ka_fail("%s", message);
  (void)cudaGetLastError();
  tokens = ka.tokens();
  slots = tokens * kTopK;
  if (slots > INT_MAX / 2)
    return ka_fail("%s: %lld tokens x top_k %d is too many (positions are int)", name, tokens,
                   kTopK);
  return 0;
}

/// The workspace must be 256-byte aligned (the layout's offsets are) and hold `needed` bytes.
inline int check_workspace(const char* name, const void* workspace, size_t workspace_bytes,
                           size_t needed, long long tokens) {
  if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 256 != 0)
    return ka_fail("%s: the workspace must be 256-byte aligned (got %p)", name, workspace);
  if (workspace_bytes < needed)
    return ka_fail("%s: the workspace has %zu bytes, %zu are needed for %lld tokens", name,
                   workspace_bytes, needed, tokens);
  return 0;
}

/// Whether `pointer` starts a 16-byte unit, as the GEMMs' row copies need.
inline bool aligned16(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

/// 0 when the hidden states, the output and the weights of experts [0, kCount) start on 16-byte
/// boundaries (the rows' lengths are multiples of 16 bytes, so the bases decide); else ka_fail's 1.
/// (A template over the arguments: moe_backward's KaArgs has no output row.)
template <int kCount, typename Args>
inline int check_rows_aligned(const char* name, const Args& ka) {
  if (!aligned16(ka.x_row(0)) || !aligned16(ka.out_row(0)))
    return ka_fail("%s: the hidden states and the output must be 16-byte aligned", name);
  for (int e = 0; e < kCount; ++e)
    if (!aligned16(ka.gate_rows(e)) || !aligned16(ka.up_rows(e)) || !aligned16(ka.down_rows(e)))
      return ka_fail("%s: expert %d's weights are not 16-byte aligned", name, e);
  return 0;
}

/// A kernel and the dynamic shared memory it launches with.
struct SharedKernel {
  const void* function;
  int shared_bytes;
};

/// ka_prepare_device's step for a template's kernels: raises each one's dynamic shared-memory
/// limit on `device`. 0, or ka_fail's 1 naming the kernel's bytes.
template <std::size_t kCount>
inline int prepare_kernels(const char* name, int device, const SharedKernel (&kernels)[kCount]) {
  for (const SharedKernel& kernel : kernels) {
    const cudaError_t status = cudaFuncSetAttribute(
        kernel.function, cudaFuncAttributeMaxDynamicSharedMemorySize, kernel.shared_bytes);
    if (status != cudaSuccess)
      return ka_fail("%s: preparing the kernels on device %d: %s (%d bytes of shared memory)", name,
                     device, cudaGetErrorString(status), kernel.shared_bytes);
  }
  return 0;
}

/// 0 when the last launch (`what`) went in.
inline int check_launch(const char* name, const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    return ka_fail("%s: %s launch: %s", name, what, cudaGetErrorString(status));
  return 0;
}

/// The grids of the two grouped GEMMs over the M-tile schedule (both templates' GEMM 1 and 2
/// share BM): m_tiles, the schedule's upper bound for at most `slots` routed slots over
/// kSegments experts (the experts whose rows the GEMMs compute: all of them, or the local ones of
/// an expert-parallel call), and each GEMM's m_tiles x N tiles CTAs of a 1-D grid (n_tiles1,
/// n_tiles2: the GEMMs' N tiles). 0, or ka_fail's 1 when a grid would pass INT_MAX.
template <int kBM, int kSegments = kExperts>
inline int grouped_gemm_grids(const char* name, long long tokens, long long slots, int n_tiles1,
                              int n_tiles2, long long& m_tiles, unsigned& ctas1, unsigned& ctas2) {
  m_tiles = (slots + kBM - 1) / kBM + (slots < kSegments ? slots : kSegments);
  const long long grid1 = m_tiles * n_tiles1;
  const long long grid2 = m_tiles * n_tiles2;
  if (grid1 > INT_MAX || grid2 > INT_MAX)
    return ka_fail("%s: %lld tokens are too many for the GEMM grids", name, tokens);
  ctas1 = static_cast<unsigned>(grid1);
  ctas2 = static_cast<unsigned>(grid2);
  return 0;
}

/// The blocks of a combine of kThreads threads (combine_pack8: a thread per 8 output elements).
/// 0, or ka_fail's 1 when they would pass INT_MAX.
template <int kThreads>
inline int combine_blocks(const char* name, long long tokens, unsigned& blocks) {
  const long long threads = tokens * (kHidden / 8);
  const long long count = (threads + kThreads - 1) / kThreads;
  if (count > INT_MAX) return ka_fail("%s: %lld tokens are too many", name, tokens);
  blocks = static_cast<unsigned>(count);
  return 0;
}

/// Carves the workspace into arrays, each at a 256-byte aligned offset, in the order taken.
struct WorkspaceCarver {
  size_t at = 0;
  /// The offset of the next array of `bytes`.
  size_t take(size_t bytes) {
    const size_t offset = at;
    at = ka_align256(at + bytes);
    return offset;
  }
};

}  // namespace ka_moe

#endif  // KA_MOE_GROUPED_CUH
