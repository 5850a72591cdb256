// What the grouped-GEMM mixture-of-experts templates (moe_grouped, moe_backward) share: the
// 16- and 4-byte packs their rows move in, the block-wide scan of the per-expert slot counts
// into segments and an M-tile schedule, and the lookup of a CTA's tile in that schedule.
//
// Sorted positions ("rows") number the routed (token, k) slots expert by expert: expert e owns
// the segment [offsets[e], offsets[e + 1]) and the M tiles [tile_prefix[e], tile_prefix[e + 1]),
// ceil(count_e / BM) of them. The number of tiles depends on the routing, which only the device
// knows, so a GEMM grid covers the upper bound ceil(S / BM) + min(E, S) for S routed slots (each
// non-empty expert adds at most one partial tile) and the CTAs past the real count exit.
#ifndef KA_MOE_GROUPED_CUH
#define KA_MOE_GROUPED_CUH

namespace ka_moe {

/// Eight consecutive 16-bit elements, one 16-byte unit.
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

/// One CTA's output tile of a grouped GEMM over the sorted rows.
struct MTile {
  int expert;
  int seg_start;  ///< the expert's first sorted position
  int m0;         ///< the tile's first row inside the segment
  int rows;       ///< rows of the tile inside the segment, 1..kBM
  int nt;         ///< N tile
};

/// The tile of CTA blockIdx.x in a 1-D grid of m_tiles x kNTiles CTAs, ordered in groups of
/// kMGroup M tiles: inside a group the M tiles advance fastest, then the N tiles, so that the
/// CTAs running at once share B tiles (an expert's weights) and the group's A rows stay in L2.
/// false (the same for every thread of the CTA) past the real tile count. Called by all
/// kThreads threads; holds one barrier when it returns true.
template <int kExperts, int kBM, int kMGroup, int kNTiles, int kThreads>
__device__ __forceinline__ bool find_m_tile(int m_tiles, const int* tile_prefix, const int* offsets,
                                            MTile& tile) {
  __shared__ int s_expert;
  const int per_group = kMGroup * kNTiles;
  const int group = blockIdx.x / per_group;
  const int first_m = group * kMGroup;
  const int group_rows = min(m_tiles - first_m, kMGroup);
  const int in_group = blockIdx.x % per_group;
  const int mt = first_m + in_group % group_rows;
  tile.nt = in_group / group_rows;
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

}  // namespace ka_moe

#endif  // KA_MOE_GROUPED_CUH
