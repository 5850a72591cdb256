// The moe_grouped kernels around the two grouped GEMMs (ka_moe_gemm.cuh):
//
//  router_logits_kernel  (KA_ROUTER_WEIGHT only) logits[t][e] = dot(x_row(t), router_row(e)) in
//                        float32: a CTA per (ROUTER_TOKENS tokens, 8 experts), a warp per expert,
//                        lanes over H in 8-element chunks, every router chunk used for all the
//                        CTA's tokens; fixed reduction order (lane partials, then xor shuffles).
//  route_kernel          a thread per token: its E logits, ka_moe_route (the family's one
//                        routing rule), the top-k ids and weights to the workspace, and each
//                        slot's rank in its expert (an int atomicAdd on the expert's count).
//  permute_kernel        every CTA scans the E counts (scan_expert_counts in ka_moe_grouped.cuh:
//                        offsets and the M-tile prefix of ceil(count / BM)); CTA 0 writes them
//                        for the GEMMs; each slot goes to position offsets[e] + rank:
//                        sorted_slot[pos] = slot, pos_of_slot[slot] = pos.
//  combine_kernel        out[t] = sum over k, in k order, of weight_k * y[pos_of_slot[t*K+k]],
//                        float32, rounded once; a thread per 8 output elements.
//
// Within an expert the order of the slots depends on the atomics, but no result does: every
// row of a GEMM is computed on its own (same K order), and the combine is per token.
#pragma once

#include "ka_moe_common.cuh"
#include "ka_moe_routing.h"

namespace ka_moe {

constexpr int kRouterWarps = 8;  // router_logits_kernel: 8 warps, one expert each
constexpr int kRouteThreads = 128;
constexpr int kScanThreads = 256;
constexpr int kCombineThreads = 256;

#if KA_ROUTER_WEIGHT
__global__ void __launch_bounds__(kRouterWarps * 32)
    router_logits_kernel(KaArgs ka, Workspace ws, long long tokens) {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int e = blockIdx.y * kRouterWarps + warp;
  if (e >= kExperts) return;  // whole warps; no block-wide synchronisation below
  const long long t0 = static_cast<long long>(blockIdx.x) * ROUTER_TOKENS;
  const ka_logit_t* w = ka.router_row(e);
  const ka_act_t* x[ROUTER_TOKENS];
#pragma unroll
  for (int r = 0; r < ROUTER_TOKENS; ++r) x[r] = ka.x_row(t0 + r < tokens ? t0 + r : t0);
  float acc[ROUTER_TOKENS];
#pragma unroll
  for (int r = 0; r < ROUTER_TOKENS; ++r) acc[r] = 0.0f;
  for (int c = lane * 8; c < kHidden; c += 32 * 8) {
    float wf[8];
    load8_float(w + c, wf);
#pragma unroll
    for (int r = 0; r < ROUTER_TOKENS; ++r) {
      float xf[8];
      load8_float(x[r] + c, xf);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[r] = fmaf(xf[j], wf[j], acc[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < ROUTER_TOKENS; ++r) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
  }
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < ROUTER_TOKENS; ++r)
      if (t0 + r < tokens) ws.logits[(t0 + r) * kExperts + e] = acc[r];
  }
}
#endif

__global__ void __launch_bounds__(kRouteThreads)
    route_kernel(KaArgs ka, Workspace ws, long long tokens) {
  const long long t = static_cast<long long>(blockIdx.x) * kRouteThreads + threadIdx.x;
  if (t >= tokens) return;
  float logits[kExperts];
#if KA_ROUTER_WEIGHT
  for (int e = 0; e < kExperts; ++e) logits[e] = ws.logits[t * kExperts + e];
#else
  for (int e = 0; e < kExperts; ++e) logits[e] = ka.logit(t, e);
#endif
  int ids[kTopK];
  float weights[kTopK];
  ka_moe_route(ka, logits, ids, weights);
#pragma unroll
  for (int k = 0; k < kTopK; ++k) {
    const long long slot = t * kTopK + k;
    ws.topk_ids[slot] = ids[k];
    ws.topk_weights[slot] = weights[k];
    ws.rank[slot] = atomicAdd(&ws.counts[ids[k]], 1);
  }
}

__global__ void __launch_bounds__(kScanThreads) permute_kernel(Workspace ws, long long slots) {
  __shared__ int s_offset[kExperts + 1];
  scan_expert_counts<kExperts, BM, kScanThreads>(ws.counts, s_offset, ws.offsets, ws.tile_prefix,
                                                 blockIdx.x == 0);
  for (long long s = static_cast<long long>(blockIdx.x) * kScanThreads + threadIdx.x; s < slots;
       s += static_cast<long long>(gridDim.x) * kScanThreads) {
    const int pos = s_offset[ws.topk_ids[s]] + ws.rank[s];
    ws.sorted_slot[pos] = static_cast<int>(s);
    ws.pos_of_slot[s] = pos;
  }
}

__global__ void __launch_bounds__(kCombineThreads)
    combine_kernel(KaArgs ka, Workspace ws, long long tokens) {
  combine_pack8<kCombineThreads>(
      tokens,
      [&](long long slot, int c, float(&acc)[8]) {
        const long long pos = ws.pos_of_slot[slot];
        const float weight = ws.topk_weights[slot];
        const Pack8<ka_act_t> y =
            *reinterpret_cast<const Pack8<ka_act_t>*>(ws.y + pos * kHidden + c);
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[j] += weight * ka_to_float(y.v[j]);
      },
      [&](long long t) { return ka.out_row(t); });
}

}  // namespace ka_moe
