// The moe_backward kernels around the grouped GEMMs (moe_bwd_gemm.cuh, moe_bwd_wgrad.cuh):
//
//  count_kernel       a CTA per kChunk slots, a thread per slot: the slot's expert (-1 when its
//                     id is outside [0, E): no expert) and weight, its rank among the chunk's
//                     slots of the same expert (warp match, then the earlier warps' counts) and
//                     the chunk's count per expert. A slot with no expert gets a zero routing
//                     gradient here.
//  place_kernel       a CTA per chunk: every expert's total and its count in the earlier chunks,
//                     the totals scanned into segments and the M-tile schedule
//                     (scan_expert_counts; CTA 0 writes them), then each routed slot's sorted
//                     position offsets[e] + earlier chunks' count + rank in its chunk.
//  combine_kernel     dx of a token: its routed slots' dx_part rows summed in k order, float32,
//                     rounded once; a thread per 8 elements.
//  route_grad_kernel  d(routing weight) of a routed slot: its GEMM 1 partials summed in N-tile
//                     order.
//
// The positions are a stable counting sort (token order within each expert) computed with no
// atomics, so the weight gradients, which sum over an expert's positions in order, give the
// same bits on every run.
#pragma once

#include "moe_bwd_common.cuh"

namespace ka_moe {

constexpr int kCombineThreads = 256;
constexpr int kRouteGradThreads = 256;

static_assert(kExperts <= 1024, "count_kernel keeps [8 warps][E] counts in shared memory");

__device__ __forceinline__ bool routed(long long id) {
  return id >= 0 && id < kExperts;
}

__global__ void __launch_bounds__(kChunk) count_kernel(KaArgs ka, Workspace ws, long long slots) {
  constexpr int kWarps = kChunk / 32;
  __shared__ int s_warp_count[kWarps][kExperts];
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  for (int i = tid; i < kWarps * kExperts; i += kChunk) (&s_warp_count[0][0])[i] = 0;
  const long long s = static_cast<long long>(blockIdx.x) * kChunk + tid;
  int expert = -1;
  if (s < slots) {
    const long long t = s / kTopK;
    const int k = static_cast<int>(s % kTopK);
    const long long id = ka.expert(t, k);
    expert = routed(id) ? static_cast<int>(id) : -1;
    ws.topk_ids[s] = expert;
    ws.topk_weights[s] = ka.route_weight(t, k);
    if (expert < 0) ka.set_route_grad(t, k, 0.0f);
  }
  __syncthreads();  // the counts are cleared
  // The lanes choosing the same expert; the highest of them records the warp's count.
  const unsigned peers = __match_any_sync(0xffffffffu, expert);
  const int rank_in_warp = __popc(peers & ((1u << lane) - 1u));
  if (expert >= 0 && lane == 31 - __clz(peers)) s_warp_count[warp][expert] = __popc(peers);
  __syncthreads();
  if (s < slots) {
    int rank = rank_in_warp;
    if (expert >= 0)
      for (int w = 0; w < warp; ++w) rank += s_warp_count[w][expert];
    ws.chunk_rank[s] = expert >= 0 ? rank : -1;
  }
  for (int e = tid; e < kExperts; e += kChunk) {
    int total = 0;
    for (int w = 0; w < kWarps; ++w) total += s_warp_count[w][e];
    ws.chunk_counts[static_cast<long long>(blockIdx.x) * kExperts + e] = total;
  }
}

__global__ void __launch_bounds__(kChunk) place_kernel(Workspace ws, long long slots, int chunks) {
  __shared__ int s_total[kExperts], s_before[kExperts], s_offset[kExperts + 1];
  const int tid = threadIdx.x;
  for (int e = tid; e < kExperts; e += kChunk) {
    int total = 0, before = 0;
    for (int c = 0; c < chunks; ++c) {
      const int count = ws.chunk_counts[static_cast<long long>(c) * kExperts + e];
      total += count;
      if (c < static_cast<int>(blockIdx.x)) before += count;
    }
    s_total[e] = total;
    s_before[e] = before;
  }
  __syncthreads();
  scan_expert_counts<kExperts, BM, kChunk>(s_total, s_offset, ws.offsets, ws.tile_prefix,
                                           blockIdx.x == 0);
  const long long s = static_cast<long long>(blockIdx.x) * kChunk + tid;
  if (s >= slots) return;
  const int expert = ws.topk_ids[s];
  if (expert < 0) {
    ws.pos_of_slot[s] = -1;
    return;
  }
  const int pos = s_offset[expert] + s_before[expert] + ws.chunk_rank[s];
  ws.sorted_slot[pos] = static_cast<int>(s);
  ws.pos_of_slot[s] = pos;
}

__global__ void __launch_bounds__(kCombineThreads)
    combine_kernel(KaArgs ka, Workspace ws, long long tokens) {
  combine_pack8<kCombineThreads>(
      tokens,
      [&](long long slot, int c, float(&acc)[8]) {
        const long long pos = ws.pos_of_slot[slot];
        if (pos < 0) return;  // an id outside [0, E): no expert, nothing to add
        const float4* part = reinterpret_cast<const float4*>(ws.dx_part + pos * kHidden + c);
        const float4 a = part[0], b = part[1];
        acc[0] += a.x, acc[1] += a.y, acc[2] += a.z, acc[3] += a.w;
        acc[4] += b.x, acc[5] += b.y, acc[6] += b.z, acc[7] += b.w;
      },
      [&](long long t) { return ka.dx_row(t); });
}

#if KA_HAS_GRAD_ROUTING
template <int kNTiles>
__global__ void __launch_bounds__(kRouteGradThreads)
    route_grad_kernel(KaArgs ka, Workspace ws, long long slots) {
  const long long s = static_cast<long long>(blockIdx.x) * kRouteGradThreads + threadIdx.x;
  if (s >= slots) return;
  const long long pos = ws.pos_of_slot[s];
  if (pos < 0) return;  // count_kernel wrote its zero
  float total = 0.0f;
  for (int nt = 0; nt < kNTiles; ++nt) total += ws.route_part[pos * kNTiles + nt];
  ka.set_route_grad(s / kTopK, static_cast<int>(s % kTopK), total);
}
#endif

}  // namespace ka_moe
